//! The writes: the group-committed finalize, and lease writes that need no sync of their own.
//!
//! # Group commit
//! Finalizes queue up; whichever caller finds no batch in progress becomes the leader, takes
//! every queued request (up to [`MAX_BATCH`]) and applies them in one `BEGIN IMMEDIATE`
//! transaction, each inside its own savepoint: a request whose check fails (a lost lease, a
//! bound key) rolls back to its savepoint and fails alone, while its neighbours commit
//! together, with one sync. Within a batch the requests apply in queue order, exactly as if
//! each had been its own transaction. Only a failure of the commit itself (a full disk, an I/O
//! error) fails every request of the batch that had succeeded.
//!
//! # One sync per turn
//! At `synchronous=FULL` a lease write (acquire, renew, release) commits at `NORMAL`: its WAL
//! frames reach the operating system, so every other connection and process sees the lease
//! the moment it commits, and a killed process loses nothing, but it does not wait for the
//! disk. The next durable commit (a finalize, a delete) syncs the WAL file, and a sync of the
//! WAL covers every frame written before it. What a power loss can take is therefore a suffix
//! of lease writes after the last durable commit, never a durable commit without the lease
//! writes before it (SQLite recovers the longest valid prefix of the WAL). Fencing survives:
//! - The token counter can fall back only to a value at or above every token stored in any
//!   surviving record, lease or erase fence, because those were written before it.
//! - A token that was lost was held only by processes of this host, which the power loss
//!   stopped too (the file must be on a local disk: see the module docs). No surviving writer
//!   holds it, so handing it out again cannot let two live holders share it.
//! - Any finalize that committed durably also made the acquisition of the lease it presented
//!   durable, so after recovery that lease's token is at or below the counter.

use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::Synchronous;
use super::schema::{map_err, token_from_sql, token_to_sql};
use crate::row::StoredRow;
use crate::store::check_erase_fence;
use crate::{Clock, FinalizeRequest, Lease, StoreError};

/// The most finalizes one group commit takes.
pub(super) const MAX_BATCH: usize = 256;

/// The connection and the durability it is set to now.
pub(super) struct Db {
    conn: Connection,
    /// What the store was opened with: finalizes and deletes commit at this level.
    durable: Synchronous,
    /// What the connection is set to now.
    current: Synchronous,
}

impl Db {
    pub(super) fn new(conn: Connection, durable: Synchronous) -> Self {
        Self {
            conn,
            durable,
            current: durable,
        }
    }

    /// The connection, for reads (they commit nothing).
    pub(super) fn reads(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The connection, set for a lease write: no sync of its own (see the module docs).
    pub(super) fn lease_writes(&mut self) -> Result<&mut Connection, StoreError> {
        self.set(Synchronous::Normal)?;
        Ok(&mut self.conn)
    }

    /// The connection, set for a durable write at the store's configured level.
    pub(super) fn durable_writes(&mut self) -> Result<&mut Connection, StoreError> {
        self.set(self.durable)?;
        Ok(&mut self.conn)
    }

    fn set(&mut self, level: Synchronous) -> Result<(), StoreError> {
        if self.current != level {
            // A connection setting, read at each commit; it costs no I/O.
            self.conn
                .execute_batch(&format!("PRAGMA synchronous = {}", level.pragma()))
                .map_err(map_err)?;
            self.current = level;
        }
        Ok(())
    }
}

/// One queued finalize.
struct Queued {
    ticket: u64,
    request: FinalizeRequest,
    row: StoredRow,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Queued>,
    done: HashMap<u64, Result<(), StoreError>>,
    next_ticket: u64,
    leader_active: bool,
    applying: usize,
    stats: GroupCommitStats,
}

/// What group commit has done on one [`SqliteStore`](super::SqliteStore) since it opened:
/// see [`SqliteStore::group_commit_stats`](super::SqliteStore::group_commit_stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GroupCommitStats {
    /// Finalize requests applied (committed or refused).
    pub finalizes: u64,
    /// Transactions they were applied in: with no concurrency, one per finalize.
    pub commits: u64,
    /// The most finalizes one transaction held.
    pub largest_batch: usize,
    /// Finalizes queued now, waiting for the next batch.
    pub queued: usize,
    /// Finalizes in the batch being applied now (0 when none is).
    pub applying: usize,
}

/// The connection, and the finalizes waiting for a group commit.
pub(super) struct Shared {
    db: Mutex<Db>,
    queue: Mutex<Queue>,
    /// Signalled after every batch: a waiter's result is ready, or it may lead the next batch.
    batch_done: Condvar,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("queued", &lock(&self.queue).pending.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic inside a write rolls its transaction back (the guards drop), so a poisoned lock
    // still guards consistent state.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(super) fn new(db: Db) -> Self {
        Self {
            db: Mutex::new(db),
            queue: Mutex::new(Queue::default()),
            batch_done: Condvar::new(),
        }
    }

    pub(super) fn stats(&self) -> GroupCommitStats {
        let queue = lock(&self.queue);
        GroupCommitStats {
            queued: queue.pending.len(),
            applying: queue.applying,
            ..queue.stats
        }
    }

    /// The connection, for one call.
    pub(super) fn db(&self) -> MutexGuard<'_, Db> {
        lock(&self.db)
    }

    /// Queues `request` for the next group commit and waits for its own result, leading a
    /// batch whenever none is in progress.
    pub(super) fn finalize(
        &self,
        clock: &dyn Clock,
        request: FinalizeRequest,
        row: StoredRow,
    ) -> Result<(), StoreError> {
        let mut queue = lock(&self.queue);
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push_back(Queued {
            ticket,
            request,
            row,
        });
        loop {
            if let Some(result) = queue.done.remove(&ticket) {
                return result;
            }
            if queue.leader_active {
                queue = self
                    .batch_done
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            queue.leader_active = true;
            let take = queue.pending.len().min(MAX_BATCH);
            let batch: Vec<Queued> = queue.pending.drain(..take).collect();
            queue.applying = batch.len();
            drop(queue);
            let results = {
                let mut db = lock(&self.db);
                commit_batch(&mut db, clock, &batch)
            };
            queue = lock(&self.queue);
            queue.leader_active = false;
            queue.applying = 0;
            queue.stats.finalizes += batch.len() as u64;
            queue.stats.commits += 1;
            queue.stats.largest_batch = queue.stats.largest_batch.max(batch.len());
            for (queued, result) in batch.iter().zip(results) {
                queue.done.insert(queued.ticket, result);
            }
            self.batch_done.notify_all();
        }
    }
}

/// Applies `batch` in one transaction, each request in its own savepoint when there are
/// several; returns one result per request, in order.
fn commit_batch(db: &mut Db, clock: &dyn Clock, batch: &[Queued]) -> Vec<Result<(), StoreError>> {
    let all = |e: StoreError| vec![Err(e); batch.len()];
    let conn = match db.durable_writes() {
        Ok(conn) => conn,
        Err(e) => return all(e),
    };
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return all(map_err(e)),
    };
    // The write lock is held from here to commit: the clock is read after taking it.
    let now = clock.now().as_millis();
    let mut results = Vec::with_capacity(batch.len());
    if let [only] = batch {
        // Alone, the transaction is the savepoint: a failure rolls it back when it drops.
        let result = apply(&tx, now, only);
        if result.is_err() {
            return vec![result];
        }
        results.push(result);
    } else {
        for queued in batch {
            let result = match tx.savepoint() {
                Ok(savepoint) => match apply(&savepoint, now, queued) {
                    Ok(()) => savepoint.commit().map_err(map_err),
                    // Dropping the savepoint rolls back to it and releases it.
                    Err(e) => Err(e),
                },
                Err(e) => Err(map_err(e)),
            };
            results.push(result);
        }
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => {
            let e = map_err(e);
            results.into_iter().map(|r| r.and(Err(e.clone()))).collect()
        }
    }
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

/// One finalize inside the batch's transaction: checks every condition, then writes.
fn apply(conn: &Connection, now: i64, queued: &Queued) -> Result<(), StoreError> {
    let (request, row) = (&queued.request, &queued.row);
    for lease in &request.held_leases {
        if !lease_is_current(conn, lease, now)? {
            return Err(StoreError::lease_lost(&lease.target));
        }
    }
    if !request.held_leases.is_empty() {
        let fence: Option<i64> = conn
            .prepare_cached("SELECT fence FROM erased_keys WHERE key = ?1")
            .map_err(map_err)?
            .query_row(params![row.key], |r| r.get(0))
            .optional()
            .map_err(map_err)?;
        check_erase_fence(&request.held_leases, fence.map(token_from_sql).transpose()?)?;
    }
    if request.require_key_absent {
        let bound: Option<i64> = conn
            .prepare_cached("SELECT 1 FROM bindings WHERE key = ?1")
            .map_err(map_err)?
            .query_row(params![row.key], |r| r.get(0))
            .optional()
            .map_err(map_err)?;
        if bound.is_some() {
            return Err(StoreError::already_exists(&row.key));
        }
    }
    let existing_key: Option<String> = conn
        .prepare_cached("SELECT key FROM threads WHERE id = ?1")
        .map_err(map_err)?
        .query_row(params![row.id], |r| r.get(0))
        .optional()
        .map_err(map_err)?;
    if existing_key.is_some_and(|k| k != row.key) {
        return Err(StoreError::invalid(
            "the record id already belongs to another key",
        ));
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
    conn.prepare_cached(
        "INSERT INTO threads (id, key, status, format, driver_type, agent, fingerprint, \
         scheme_version, components, codec, state, created_at, updated_at, turns) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, format = excluded.format, \
         driver_type = excluded.driver_type, agent = excluded.agent, \
         fingerprint = excluded.fingerprint, scheme_version = excluded.scheme_version, \
         components = excluded.components, codec = excluded.codec, state = excluded.state, \
         created_at = excluded.created_at, updated_at = excluded.updated_at, \
         turns = excluded.turns",
    )
    .map_err(map_err)?
    .execute(params![
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
        row.turns
    ])
    .map_err(map_err)?;
    if request.rebind_key {
        conn.prepare_cached(
            "INSERT INTO bindings (key, record_id) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET record_id = excluded.record_id",
        )
        .map_err(map_err)?
        .execute(params![row.key, row.id])
        .map_err(map_err)?;
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

pub(super) fn acquire_blocking(
    db: &mut Db,
    clock: &dyn Clock,
    target: &str,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    let tx = db
        .lease_writes()?
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(map_err)?;
    let now = clock.now();
    let holder: Option<(String, i64)> = tx
        .prepare_cached("SELECT owner, expires_at FROM leases WHERE target = ?1")
        .map_err(map_err)?
        .query_row(params![target], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(map_err)?;
    if let Some((holder, expires_at)) = holder
        && holder != owner
        && expires_at > now.as_millis()
    {
        return Err(StoreError::busy(target));
    }
    let token = next_token(&tx)?;
    tx.prepare_cached(
        "INSERT INTO leases (target, owner, token, expires_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, token = excluded.token, \
         expires_at = excluded.expires_at",
    )
    .map_err(map_err)?
    .execute(params![
        target,
        owner,
        token,
        now.saturating_add(ttl).as_millis()
    ])
    .map_err(map_err)?;
    tx.commit().map_err(map_err)?;
    Ok(Lease {
        target: target.to_owned(),
        owner: owner.to_owned(),
        token: token_from_sql(token)?,
    })
}
