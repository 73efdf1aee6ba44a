//! The SQL of each write, applied inside a batch's transaction: a finalize's checks and
//! writes, an acquire, a renewal, a release, and the fencing-token counter.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::schema::map_err;
use super::write::{Done, Op, OpResult};
use crate::row::{StoredRow, token_from_sql, token_to_sql};
use crate::store::check_erase_fence;
use crate::{FinalizeRequest, Lease, StoreError, Timestamp};

/// Applies one queued write inside the batch's transaction.
pub(super) fn apply(conn: &Connection, now: Timestamp, op: &Op) -> OpResult {
    match op {
        Op::Finalize { request, row } => {
            finalize_in(conn, now.as_millis(), request, row).map(|()| Done::Unit)
        }
        Op::Acquire { target, owner, ttl } => {
            acquire_in(conn, now, target, owner, *ttl).map(Done::Lease)
        }
        Op::Renew { lease, ttl } => renew_in(conn, now, lease, *ttl).map(Done::Lease),
        Op::Release { lease, token } => {
            conn.prepare_cached(
                "DELETE FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3",
            )
            .map_err(map_err)?
            .execute(params![lease.target, lease.owner, token])
            .map_err(map_err)?;
            Ok(Done::Unit)
        }
    }
}

fn renew_in(
    conn: &Connection,
    now: Timestamp,
    lease: &Lease,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE leases SET expires_at = ?1 \
             WHERE target = ?2 AND owner = ?3 AND token = ?4 AND expires_at > ?5",
        )
        .map_err(map_err)?
        .execute(params![
            now.saturating_add(ttl).as_millis(),
            lease.target,
            lease.owner,
            token_to_sql(lease.token)?,
            now.as_millis()
        ])
        .map_err(map_err)?;
    if changed == 0 {
        return Err(StoreError::lease_lost(&lease.target));
    }
    Ok(lease.clone())
}

/// Whether the stored lease is exactly `lease` and not expired at `now`.
fn lease_is_current(conn: &Connection, lease: &Lease, now: i64) -> Result<bool, StoreError> {
    let token = token_to_sql(lease.token)?;
    let found: Option<i64> = conn
        .prepare_cached(
            "SELECT 1 FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3 AND expires_at > ?4",
        )
        .map_err(map_err)?
        .query_row(params![lease.target, lease.owner, token, now], |r| r.get(0))
        .optional()
        .map_err(map_err)?;
    Ok(found.is_some())
}

/// The integer `sql` selects for the row's key (its `?1`), or `None` when no row matches:
/// the finalize's two per-key checks (the erase fence, an existing binding) read this way.
fn integer_for_key(
    conn: &Connection,
    sql: &str,
    row: &StoredRow,
) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached(sql)
        .map_err(map_err)?
        .query_row(params![row.key], |r| r.get(0))
        .optional()
        .map_err(map_err)
}

/// One finalize inside the batch's transaction: checks every condition, then writes.
fn finalize_in(
    conn: &Connection,
    now: i64,
    request: &FinalizeRequest,
    row: &StoredRow,
) -> Result<(), StoreError> {
    for lease in &request.held_leases {
        if !lease_is_current(conn, lease, now)? {
            return Err(StoreError::lease_lost(&lease.target));
        }
    }
    if !request.held_leases.is_empty() {
        let fence = integer_for_key(conn, "SELECT fence FROM erased_keys WHERE key = ?1", row)?;
        check_erase_fence(&request.held_leases, fence.map(token_from_sql).transpose()?)?;
    }
    if request.require_key_absent {
        let bound = integer_for_key(conn, "SELECT 1 FROM bindings WHERE key = ?1", row)?;
        if bound.is_some() {
            return Err(StoreError::already_exists(&row.key));
        }
    }
    if let Some(previous) = &request.archive_previous {
        let changed = conn
            .prepare_cached("UPDATE threads SET status = 'archived' WHERE id = ?1")
            .map_err(map_err)?
            .execute(params![previous.as_str()])
            .map_err(map_err)?;
        if changed == 0 {
            return Err(StoreError::not_found(previous.as_str()));
        }
    }
    // A record id that belongs to another key updates nothing and returns no row.
    let saved: Option<i64> = conn
        .prepare_cached(
            "INSERT INTO threads (id, key, status, format, driver_type, agent, fingerprint, \
         scheme_version, components, codec, state, created_at, updated_at, turns, namespace) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, format = excluded.format, \
         driver_type = excluded.driver_type, agent = excluded.agent, \
         fingerprint = excluded.fingerprint, scheme_version = excluded.scheme_version, \
         components = excluded.components, codec = excluded.codec, state = excluded.state, \
         created_at = excluded.created_at, updated_at = excluded.updated_at, \
         turns = excluded.turns, namespace = excluded.namespace \
         WHERE threads.key = excluded.key RETURNING 1",
        )
        .map_err(map_err)?
        .query_row(
            params![
                row.id,
                row.key,
                row.status,
                row.format,
                row.driver_type,
                row.agent,
                row.fingerprint,
                row.scheme_version,
                row.components,
                row.codec,
                row.state,
                row.created_at,
                row.updated_at,
                row.turns,
                row.namespace
            ],
            |r| r.get(0),
        )
        .optional()
        .map_err(map_err)?;
    if saved.is_none() {
        return Err(StoreError::invalid(
            "the record id already belongs to another key",
        ));
    }
    if request.rebind_key {
        conn.prepare_cached(
            "INSERT INTO bindings (key, record_id) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET record_id = excluded.record_id",
        )
        .map_err(map_err)?
        .execute(params![row.key, row.id])
        .map_err(map_err)?;
    }
    if let Some(ttl) = request.renew_leases {
        // Every lease was checked current above, under this transaction's write lock.
        let expires_at = Timestamp::from_millis(now).saturating_add(ttl).as_millis();
        let mut renew = conn
            .prepare_cached(
                "UPDATE leases SET expires_at = ?1 WHERE target = ?2 AND owner = ?3 AND token = ?4",
            )
            .map_err(map_err)?;
        for lease in &request.held_leases {
            renew
                .execute(params![
                    expires_at,
                    lease.target,
                    lease.owner,
                    token_to_sql(lease.token)?
                ])
                .map_err(map_err)?;
        }
    }
    if request.release_leases {
        let mut delete = conn
            .prepare_cached("DELETE FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3")
            .map_err(map_err)?;
        for lease in &request.held_leases {
            delete
                .execute(params![
                    lease.target,
                    lease.owner,
                    token_to_sql(lease.token)?
                ])
                .map_err(map_err)?;
        }
    }
    Ok(())
}

/// Takes the next fencing token inside `tx`.
pub(super) fn next_token(tx: &Connection) -> Result<i64, StoreError> {
    tx.prepare_cached("UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last")
        .map_err(map_err)?
        .query_row([], |r| r.get(0))
        .optional()
        .map_err(map_err)?
        .ok_or_else(|| StoreError::corrupt("the lease token counter row is missing"))
}

fn acquire_in(
    conn: &Connection,
    now: Timestamp,
    target: &str,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    let token = next_token(conn)?;
    // Taken when free, expired or already this owner's; otherwise nothing changes, and the
    // caller's rollback returns the token drawn above.
    let taken = conn
        .prepare_cached(
            "INSERT INTO leases (target, owner, token, expires_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, token = excluded.token, \
             expires_at = excluded.expires_at \
             WHERE leases.owner = excluded.owner OR leases.expires_at <= ?5",
        )
        .map_err(map_err)?
        .execute(params![
            target,
            owner,
            token,
            now.saturating_add(ttl).as_millis(),
            now.as_millis()
        ])
        .map_err(map_err)?;
    if taken == 0 {
        return Err(StoreError::busy(target));
    }
    Ok(Lease {
        target: target.to_owned(),
        owner: owner.to_owned(),
        token: token_from_sql(token)?,
    })
}
