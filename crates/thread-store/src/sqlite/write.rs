//! The writes: one group-committed queue for finalizes and lease writes, the latter needing no
//! sync of their own.
//!
//! # Group commit
//! Writes (finalizes and lease writes) queue up; whichever caller finds no batch in progress
//! becomes the leader, takes every queued write (up to [`MAX_BATCH`]) and applies them in one
//! `BEGIN IMMEDIATE` transaction, each inside its own savepoint: a write whose check fails (a
//! lost lease, a bound key, a busy target) rolls back to its savepoint and fails alone, while
//! its neighbours commit together, with one sync when the batch holds a finalize and none when
//! it holds only lease writes. Within a batch the writes apply in queue order, exactly as if
//! each had been its own transaction. Only a failure of the commit itself (a full disk, an I/O
//! error) fails every write of the batch that had succeeded. Reads run on a connection of
//! their own, so they never wait behind a batch's sync.
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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::Connection;

use super::Synchronous;
use super::schema::map_err;
use super::statements::apply;
use crate::row::StoredRow;
use crate::{Clock, FinalizeRequest, Lease, StoreError};

/// The most writes one group commit takes.
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
            let pragma = match level {
                Synchronous::Full => "PRAGMA synchronous = FULL",
                _ => "PRAGMA synchronous = NORMAL",
            };
            exec(&self.conn, pragma)?;
            self.current = level;
        }
        Ok(())
    }
}

/// One queued write.
pub(super) enum Op {
    Finalize {
        request: Box<FinalizeRequest>,
        row: Box<StoredRow>,
    },
    Acquire {
        target: String,
        owner: String,
        ttl: Duration,
    },
    Renew {
        lease: Lease,
        ttl: Duration,
    },
    Release {
        lease: Lease,
        token: i64,
    },
}

/// What a write returns.
pub(super) enum Done {
    Unit,
    Lease(Lease),
}

pub(super) type OpResult = Result<Done, StoreError>;

/// A queued write's result, once its batch has committed, and how its caller is woken.
pub(super) struct Slot {
    result: Mutex<Option<OpResult>>,
    wake: tokio::sync::Notify,
    /// The caller stopped waiting (its future was dropped): nobody will lead for it.
    abandoned: std::sync::atomic::AtomicBool,
}

impl Slot {
    fn take(&self) -> Option<OpResult> {
        lock(&self.result).take()
    }

    fn finish(&self, result: OpResult) {
        *lock(&self.result) = Some(result);
        // Stores a permit when the caller is not waiting yet: no wake-up is lost.
        self.wake.notify_one();
    }
}

struct Queued {
    op: Op,
    slot: Arc<Slot>,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Queued>,
    leader_active: bool,
    applying: usize,
    stats: GroupCommitStats,
}

/// What group commit has done on one [`SqliteStore`](super::SqliteStore) since it opened:
/// see [`SqliteStore::group_commit_stats`](super::SqliteStore::group_commit_stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GroupCommitStats {
    /// Writes applied (committed or refused): finalizes and lease writes.
    pub writes: u64,
    /// Of those, finalizes.
    pub finalizes: u64,
    /// Transactions the writes were applied in: with no concurrency, one per write.
    pub commits: u64,
    /// The most writes one transaction held.
    pub largest_batch: usize,
    /// Writes queued now, waiting for the next batch.
    pub queued: usize,
    /// Writes in the batch being applied now (0 when none is).
    pub applying: usize,
}

/// The write connection with its queue, and the read connection.
pub(super) struct Shared {
    // Dropped first: the write connection closes last and, as the file's last connection,
    // checkpoints the WAL into the database file, which a read-only connection cannot.
    reader: Mutex<Connection>,
    db: Mutex<Db>,
    queue: Mutex<Queue>,
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
    pub(super) fn new(db: Db, reader: Connection) -> Self {
        Self {
            reader: Mutex::new(reader),
            db: Mutex::new(db),
            queue: Mutex::new(Queue::default()),
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

    /// The write connection, for a write outside the queue (a delete).
    pub(super) fn db(&self) -> MutexGuard<'_, Db> {
        lock(&self.db)
    }

    /// The read connection: reads see every committed write and never wait for a batch.
    pub(super) fn reader(&self) -> MutexGuard<'_, Connection> {
        lock(&self.reader)
    }

    /// Queues `op`; returns its slot and whether the caller is to lead a batch now.
    pub(super) fn enqueue(&self, op: Op) -> (Arc<Slot>, bool) {
        let slot = Arc::new(Slot {
            result: Mutex::new(None),
            wake: tokio::sync::Notify::new(),
            abandoned: std::sync::atomic::AtomicBool::new(false),
        });
        let mut queue = lock(&self.queue);
        queue.pending.push_back(Queued {
            op,
            slot: Arc::clone(&slot),
        });
        let lead = !std::mem::replace(&mut queue.leader_active, true);
        (slot, lead)
    }

    /// Becomes the leader if none is active and `slot`'s write is still queued.
    pub(super) fn try_lead(&self, slot: &Arc<Slot>) -> bool {
        let mut queue = lock(&self.queue);
        if queue.leader_active || !queue.pending.iter().any(|q| Arc::ptr_eq(&q.slot, slot)) {
            return false;
        }
        queue.leader_active = true;
        true
    }

    /// As the leader: applies one batch from the front of the queue (more while abandoned
    /// writes wait, which no caller would lead), hands every result to its slot, then gives
    /// leadership up and wakes every waiting caller, one of which leads the next batch.
    pub(super) fn lead(&self, clock: &dyn Clock) {
        let mut guard = LeaderGuard {
            shared: self,
            done: false,
        };
        loop {
            let batch: Vec<Queued> = {
                let mut queue = lock(&self.queue);
                let take = queue.pending.len().min(MAX_BATCH);
                let batch: Vec<Queued> = queue.pending.drain(..take).collect();
                queue.applying = batch.len();
                batch
            };
            let results = {
                let mut db = lock(&self.db);
                commit_batch(&mut db, clock, &batch)
            };
            let mut queue = lock(&self.queue);
            queue.applying = 0;
            let stats = &mut queue.stats;
            stats.writes += batch.len() as u64;
            stats.finalizes += batch
                .iter()
                .filter(|q| matches!(q.op, Op::Finalize { .. }))
                .count() as u64;
            stats.commits += u64::from(!batch.is_empty());
            stats.largest_batch = stats.largest_batch.max(batch.len());
            for (queued, result) in batch.iter().zip(results) {
                queued.slot.finish(result);
            }
            let orphans = queue
                .pending
                .iter()
                .any(|q| q.slot.abandoned.load(std::sync::atomic::Ordering::Acquire));
            if orphans {
                continue;
            }
            queue.leader_active = false;
            for queued in &queue.pending {
                queued.slot.wake.notify_one();
            }
            guard.done = true;
            return;
        }
    }

    /// Marks `slot`'s caller gone. Returns whether its write is still queued with no leader
    /// active, in which case the caller must have it led (it took leadership for that).
    pub(super) fn abandon(&self, slot: &Arc<Slot>) -> bool {
        let mut queue = lock(&self.queue);
        slot.abandoned
            .store(true, std::sync::atomic::Ordering::Release);
        let queued = queue.pending.iter().any(|q| Arc::ptr_eq(&q.slot, slot));
        if queued && !queue.leader_active {
            queue.leader_active = true;
            return true;
        }
        false
    }

    /// Waits for `slot`'s result, leading a batch whenever leadership is free.
    pub(super) async fn wait(&self, slot: &Arc<Slot>) -> Option<OpResult> {
        loop {
            if let Some(result) = slot.take() {
                return Some(result);
            }
            if self.try_lead(slot) {
                return None;
            }
            slot.wake.notified().await;
        }
    }
}

/// Gives leadership up if the leader unwinds, so the queue never stalls behind it.
struct LeaderGuard<'a> {
    shared: &'a Shared,
    done: bool,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut queue = lock(&self.shared.queue);
            queue.leader_active = false;
            queue.applying = 0;
            for queued in &queue.pending {
                queued.slot.wake.notify_one();
            }
        }
    }
}

/// Applies `batch` in one transaction, each write in its own savepoint when there are
/// several; returns one result per write, in order. The transaction syncs only when the
/// batch holds a finalize.
fn commit_batch(db: &mut Db, clock: &dyn Clock, batch: &[Queued]) -> Vec<OpResult> {
    let all = |e: StoreError| batch.iter().map(|_| Err(e.clone())).collect();
    let durable = batch.iter().any(|q| matches!(q.op, Op::Finalize { .. }));
    let conn = match if durable {
        db.durable_writes()
    } else {
        db.lease_writes()
    } {
        Ok(conn) => &*conn,
        Err(e) => return all(e),
    };
    let tx = match Open::begin(conn) {
        Ok(tx) => tx,
        Err(e) => return all(e),
    };
    // The write lock is held from here to commit: the clock is read after taking it.
    let now = clock.now();
    let mut results = Vec::with_capacity(batch.len());
    if let [only] = batch {
        // Alone, the transaction is the savepoint: a failure rolls it back when it drops.
        let result = apply(conn, now, &only.op);
        if result.is_err() {
            return vec![result];
        }
        results.push(result);
    } else {
        for queued in batch {
            let result = exec(conn, "SAVEPOINT write").and_then(|()| {
                match apply(conn, now, &queued.op) {
                    Ok(done) => exec(conn, "RELEASE write").map(|()| done),
                    Err(e) => {
                        // Undone alone; an undo that fails leaves the batch to the commit.
                        let _ = exec(conn, "ROLLBACK TO write")
                            .and_then(|()| exec(conn, "RELEASE write"));
                        Err(e)
                    }
                }
            });
            results.push(result);
        }
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => results
            .into_iter()
            .map(|r| r.and_then(|_| Err(e.clone())))
            .collect(),
    }
}

/// Runs a statement without parameters (`BEGIN`, `SAVEPOINT`, ...) from the connection's
/// statement cache: prepared once, not parsed again on every call.
pub(super) fn exec(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .map_err(map_err)?
        .execute([])
        .map(drop)
        .map_err(map_err)
}

/// An open `BEGIN IMMEDIATE` transaction: rolled back when dropped uncommitted (a failed
/// write, an unwinding panic).
struct Open<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Open<'c> {
    fn begin(conn: &'c Connection) -> Result<Self, StoreError> {
        exec(conn, "BEGIN IMMEDIATE")?;
        Ok(Self { conn, open: true })
    }

    fn commit(mut self) -> Result<(), StoreError> {
        exec(self.conn, "COMMIT")?;
        self.open = false;
        Ok(())
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            let _ = exec(self.conn, "ROLLBACK");
        }
    }
}
