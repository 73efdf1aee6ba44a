//! A finalize in three round trips: `BEGIN`, every statement pipelined in server order,
//! `COMMIT`. Releasing or renewing the held leases is one more statement of the pipeline,
//! so a turn that keeps its lease (renew-in-finalize) costs one commit.

use tokio_postgres::error::SqlState;

use super::{Conn, Fail};
use crate::row::{StoredRow, token_from_sql, token_to_sql};
use crate::store::check_erase_fence;
use crate::{FinalizeRequest, StoreError};

pub(super) type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// `f`'s output when `on`; `f` is never polled otherwise, so its statement is never sent.
pub(super) async fn when<T>(on: bool, f: impl std::future::Future<Output = T>) -> Option<T> {
    if on { Some(f.await) } else { None }
}

/// One finalize attempt in three round trips: `BEGIN`; every statement at once; `COMMIT`
/// (or `ROLLBACK`). The server runs the pipelined statements in order, so the key's shared
/// lock and the lease rows' `FOR UPDATE` locks are held before anything is written, and the
/// client then checks their answers in the same order: a failed check rolls back all of it.
pub(super) async fn finalize_once(
    conn: &mut Conn<'_>,
    request: &FinalizeRequest,
    row: &StoredRow,
    key_lock: i64,
) -> Result<(), Fail> {
    // Prepared before the transaction borrows the client (cache hits after the first time).
    let lock_key = conn.st(|s| &s.key_lock_shared).await?;
    let lock_leases = conn.st(|s| &s.lock_leases).await?;
    let binding_exists = conn.st(|s| &s.binding_exists).await?;
    let archive = conn.st(|s| &s.archive).await?;
    let upsert = conn.st(|s| &s.upsert).await?;
    let bind = if request.require_key_absent {
        conn.st(|s| &s.bind_new).await?
    } else {
        conn.st(|s| &s.bind).await?
    };
    let release = conn.st(|s| &s.release_many).await?;
    let renew = conn.st(|s| &s.renew_many).await?;
    let held = &request.held_leases;
    let mut targets: Vec<&str> = held.iter().map(|l| l.target.as_str()).collect();
    targets.sort_unstable();
    let owners: Vec<&str> = held.iter().map(|l| l.owner.as_str()).collect();
    let release_targets: Vec<&str> = held.iter().map(|l| l.target.as_str()).collect();
    let tokens = held
        .iter()
        .map(|l| token_to_sql(l.token))
        .collect::<Result<Vec<i64>, _>>()?;
    let previous = request.archive_previous.as_ref().map(|p| p.as_str());
    let record_params: [Param<'_>; 15] = [
        &row.id,
        &row.key,
        &row.status,
        &row.format,
        &row.driver_type,
        &row.agent,
        &row.fingerprint,
        &row.scheme_version,
        &row.components,
        &row.codec,
        &row.state,
        &row.created_at,
        &row.updated_at,
        &row.turns,
        &row.namespace,
    ];
    let lock_params: [Param<'_>; 1] = [&key_lock];
    let lease_params: [Param<'_>; 2] = [&targets, &row.key];
    let key_params: [Param<'_>; 1] = [&row.key];
    let bind_params: [Param<'_>; 2] = [&row.key, &row.id];
    let release_params: [Param<'_>; 3] = [&release_targets, &owners, &tokens];
    let renew_ttl = request.renew_leases.map(super::ttl_millis);
    let renew_params: [Param<'_>; 4] = [&release_targets, &owners, &tokens, &renew_ttl];

    let tx = conn.client.transaction().await?;
    let (locked_key, locked, bound, archived, saved, rebound, released, renewed) = tokio::join!(
        when(!held.is_empty(), tx.execute(&lock_key, &lock_params)),
        when(!held.is_empty(), tx.query(&lock_leases, &lease_params)),
        when(
            request.require_key_absent,
            tx.query_opt(&binding_exists, &key_params)
        ),
        async {
            match previous {
                Some(previous) => Some(tx.execute(&archive, &[&previous]).await),
                None => None,
            }
        },
        tx.query_opt(&upsert, &record_params),
        when(request.rebind_key, tx.execute(&bind, &bind_params)),
        when(
            request.release_leases && !held.is_empty(),
            tx.execute(&release, &release_params)
        ),
        when(
            renew_ttl.is_some() && !held.is_empty(),
            tx.execute(&renew, &renew_params)
        ),
    );
    // Checked in the order the server ran them: the first failed condition is the answer.
    locked_key.transpose()?;
    if let Some(locked) = locked {
        let locked = locked?;
        for lease in held {
            let current = locked.iter().any(|r| {
                r.try_get::<_, &str>(0).is_ok_and(|t| t == lease.target)
                    && r.try_get::<_, &str>(1).is_ok_and(|o| o == lease.owner)
                    && r.try_get::<_, i64>(2)
                        .is_ok_and(|t| i64::try_from(lease.token) == Ok(t))
                    && r.try_get::<_, bool>(3).unwrap_or(false)
            });
            if !current {
                return Err(StoreError::lease_lost(&lease.target).into());
            }
        }
        // Every row carries the same fence; none at all means a lease check failed above.
        let fence = match locked.first() {
            Some(r) => r
                .try_get::<_, Option<i64>>(4)
                .map_err(|_| StoreError::corrupt("an erase fence is not an integer"))?,
            None => None,
        };
        check_erase_fence(held, fence.map(token_from_sql).transpose()?)?;
    }
    if bound.transpose()?.flatten().is_some() {
        return Err(StoreError::already_exists(&row.key).into());
    }
    if let (Some(previous), Some(archived)) = (previous, archived)
        && archived? == 0
    {
        return Err(StoreError::not_found(previous).into());
    }
    if saved?.is_none() {
        return Err(StoreError::invalid("the record id already belongs to another key").into());
    }
    match rebound {
        Some(Err(e)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            // A concurrent finalize bound the key after our check: the key is not absent.
            return Err(StoreError::already_exists(&row.key).into());
        }
        other => {
            other.transpose()?;
        }
    }
    released.transpose()?;
    renewed.transpose()?;
    tx.commit().await?;
    Ok(())
}
