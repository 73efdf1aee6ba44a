//! The embedded default store: one SQLite file, safe for several processes on one host.
//!
//! - The file must be private. A missing file is created with mode exactly `0600` (created
//!   with `O_EXCL | O_NOFOLLOW`, then `fchmod`ed, so the umask does not matter). An existing
//!   file, and any existing `-wal`, `-shm` or `-journal` next to it, must be a regular file, not
//!   a symlink, owned by the current user, with no group or other permission bits; otherwise
//!   opening fails with [`StoreError::UnsafeFile`] and nothing is changed (the store never
//!   `chmod`s a file it did not create). SQLite opens the path with `SQLITE_OPEN_NOFOLLOW`, and
//!   creates `-wal` and `-shm` with the database file's permission bits (it copies them and
//!   `fchmod`s against the umask), so they are `0600` too; after the switch to WAL the store
//!   checks again that the database is the file it checked and that both companions are
//!   private. The directory holding the file is the caller's: it should not be writable by
//!   others.
//! - The file is opened in WAL mode with a busy timeout, and migrated through a numbered
//!   `schema_migrations` table inside a `BEGIN IMMEDIATE` transaction, so concurrent starters
//!   migrate once.
//! - Every write is one `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock up front:
//!   a lease check and the write it guards can never interleave with another process's write.
//! - Concurrent writes on one store (finalizes and lease writes) are group-committed: one
//!   transaction for all that are waiting, each in its own savepoint, so each validates its
//!   own leases and fails alone; the transaction syncs only when it holds a finalize. A Thread
//!   turn costs one sync: lease writes (acquire, renew, release) commit without a sync of
//!   their own and are made durable by the next finalize or delete. Why a power loss still
//!   cannot hand a fencing token out twice: see `docs/threads.md` ("Store throughput: one
//!   sync per turn, group commit"). Reads run on a read-only connection of their own.
//! - rusqlite is blocking, so no call blocks an async worker that other tasks need. By default
//!   ([`Execution::InPlace`]) a call runs in place on a multi-thread runtime through
//!   `tokio::task::block_in_place`, which first hands the worker's other tasks to another
//!   thread: no thread hop, so a turn costs what its SQL costs. The price: other futures of
//!   the *calling task* (what it `join!`s or `select!`s with the store call) wait meanwhile;
//!   other tasks do not. On a current-thread runtime or inside a `LocalSet`, where Tokio does
//!   not allow that, the call runs on the blocking pool instead, as it always does with
//!   [`Execution::BlockingPool`]: one hop per call (about as much as a NORMAL-durability
//!   turn's SQL), with the calling task's other futures kept running. A Tokio runtime must be
//!   running. A future dropped mid-call lets the call finish its transaction, so a write is
//!   either wholly committed or not at all.
//! - Lease expiry follows the store's [`Clock`] (the host clock by default), which all processes
//!   on one host share. Do not put the file on a network file system.

mod file;
mod schema;
mod statements;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use self::file::{open_private_file, verify_after_open};
pub use self::schema::SCHEMA_VERSION;
use self::schema::{
    SELECT_BY_ID, SELECT_BY_KEY, SELECT_PAGE, SELECT_PAGE_UNBOUNDED, map_err, migrate, read_row,
};
use self::statements::next_token;
pub use self::write::GroupCommitStats;
use self::write::{Db, Done, Op, Shared, Slot};
use crate::LeaseHolder;
use crate::record::check_name as check_lease_target_name;
use crate::row::{StoredRow, decode_all};
use crate::store::{check_lease_args, is_storable_key, millis_until, prefix_successor, visible};
use crate::{
    Clock, FinalizeRequest, Lease, ListPage, ListQuery, Lookup, Query, StoreError, SystemClock,
    ThreadRecord, ThreadStore,
};

/// SQLite's `synchronous` setting: how hard each commit pushes data to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// `NORMAL`: in WAL mode a commit survives a process crash; a power loss may roll back the
    /// last commits, but never corrupts the file. The default.
    #[default]
    Normal,
    /// `FULL`: every commit is synced to the disk before it returns.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }
}

/// Where a [`SqliteStore`] runs SQLite's blocking calls; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Execution {
    /// In place through `block_in_place` on a multi-thread runtime: no thread hop, but other
    /// futures of the calling task (those it `join!`s or `select!`s with the store call) wait
    /// for the call, under write contention up to the busy timeout. Falls back to the blocking
    /// pool where Tokio does not allow it (a current-thread runtime, a `LocalSet`). The
    /// default.
    #[default]
    InPlace,
    /// On Tokio's blocking pool: one thread hop per call; other futures of the calling task
    /// keep running while it waits. Works on every runtime.
    BlockingPool,
}

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone)]
pub struct SqliteConfig {
    path: PathBuf,
    synchronous: Synchronous,
    busy_timeout: Duration,
    clock: Arc<dyn Clock>,
    execution: Execution,
}

impl SqliteConfig {
    /// The database at `path` (created if missing), `synchronous=NORMAL`, a 5 s busy timeout,
    /// and the system clock.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            clock: Arc::new(SystemClock),
            execution: Execution::InPlace,
        }
    }

    /// Sets where blocking calls run (default [`Execution::InPlace`]).
    pub fn execution(mut self, execution: Execution) -> Self {
        self.execution = execution;
        self
    }

    /// Sets the durability of each commit.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets how long a write waits for another connection's write lock before failing with
    /// [`StoreError::Unavailable`].
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Sets the clock that lease expiry follows.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

/// A [`ThreadStore`] in one SQLite file. Cheap to share: clones of the `Arc` share one
/// connection; other processes (or other `SqliteStore`s) open their own.
#[derive(Debug)]
pub struct SqliteStore {
    shared: Arc<Shared>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
    execution: Execution,
}

impl SqliteStore {
    /// Opens (creating and migrating if needed) the database, on Tokio's blocking pool.
    pub async fn open(config: SqliteConfig) -> Result<Self, StoreError> {
        tokio::task::spawn_blocking(move || Self::open_blocking(config))
            .await
            .map_err(|_| StoreError::unavailable("the SQLite open task did not complete"))?
    }

    /// Opens (creating and migrating if needed) the database on the calling thread.
    ///
    /// Several processes may open one file at once. Switching a fresh file to WAL can report
    /// "busy" without waiting for SQLite's busy handler, so an unavailable database is retried
    /// with a short pause until the busy timeout has passed.
    pub fn open_blocking(config: SqliteConfig) -> Result<Self, StoreError> {
        let deadline = std::time::Instant::now() + config.busy_timeout;
        let mut pause = Duration::from_millis(5);
        loop {
            match Self::try_open(&config) {
                Err(StoreError::Unavailable { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                outcome => return outcome,
            }
        }
    }

    fn try_open(config: &SqliteConfig) -> Result<Self, StoreError> {
        // Held open until SQLite has opened the same path, so its identity can be compared.
        let checked = open_private_file(&config.path)?;
        let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let mut conn = Connection::open_with_flags(&config.path, flags).map_err(map_err)?;
        conn.busy_timeout(config.busy_timeout).map_err(map_err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(map_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::unavailable(
                "the SQLite file could not be switched to WAL mode",
            ));
        }
        // The switch to WAL created `-wal` and `-shm` if they were missing.
        verify_after_open(&config.path, &checked)?;
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF;",
            config.synchronous.pragma()
        ))
        .map_err(map_err)?;
        migrate(&mut conn)?;
        // Reads get a connection of their own, so they never wait behind a batch's sync.
        let reader = Connection::open_with_flags(
            &config.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(map_err)?;
        reader.busy_timeout(config.busy_timeout).map_err(map_err)?;
        verify_after_open(&config.path, &checked)?;
        Ok(Self {
            shared: Arc::new(Shared::new(Db::new(conn, config.synchronous), reader)),
            clock: Arc::clone(&config.clock),
            path: config.path.clone(),
            execution: config.execution,
        })
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many writes (and of them finalizes) this store has applied, in how many
    /// transactions: the effect of group commit, for operators and benchmarks.
    pub fn group_commit_stats(&self) -> GroupCommitStats {
        self.shared.stats()
    }

    /// Runs `f` in place or on the blocking pool (see [`Execution`]).
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Shared, &dyn Clock) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let clock = Arc::clone(&self.clock);
        let mut f = f;
        // On a multi-thread runtime, `block_in_place` hands this worker's other tasks to
        // another thread and runs the statement here, without a thread hop.
        let in_place = self.execution == Execution::InPlace
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if in_place {
            // Tokio refuses (panics) inside a `LocalSet`, which the flavor does not reveal; the
            // statement has not started then, so it falls back to the blocking pool.
            let job = std::cell::Cell::new(Some(f));
            let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tokio::task::block_in_place(|| {
                    let f = job.take()?;
                    Some(f(&shared, clock.as_ref()))
                })
            }));
            match (attempt, job.take()) {
                (Ok(Some(result)), _) => return result,
                (_, Some(unstarted)) => f = unstarted,
                (Ok(None), None) => {
                    return Err(StoreError::unavailable("the SQLite call was lost"));
                }
                (Err(panic), None) => std::panic::resume_unwind(panic),
            }
        }
        tokio::task::spawn_blocking(move || f(&shared, clock.as_ref()))
            .await
            .map_err(|_| StoreError::unavailable("the SQLite task did not complete"))?
    }

    /// Queues a write for the next group commit and waits for its result, leading a batch
    /// (where [`run`](Self::run) runs calls) whenever none is in progress. Waiting is async:
    /// a caller whose write another caller's batch applies holds no thread meanwhile.
    async fn write(&self, op: Op) -> Result<Done, StoreError> {
        let (slot, mut lead) = self.shared.enqueue(op);
        let mut waiting = Waiting {
            store: self,
            slot: &slot,
            armed: true,
        };
        loop {
            if lead {
                self.run(|shared, clock| {
                    shared.lead(clock);
                    Ok(())
                })
                .await?;
            }
            match self.shared.wait(&slot).await {
                Some(result) => {
                    waiting.armed = false;
                    return result;
                }
                None => lead = true,
            }
        }
    }
}

/// A caller waiting for its queued write. If its future is dropped, the write still commits
/// promptly (or fails) on its own: a caller that goes away never leaves it queued.
struct Waiting<'a> {
    store: &'a SqliteStore,
    slot: &'a Arc<Slot>,
    armed: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.armed || !self.store.shared.abandon(self.slot) {
            return;
        }
        // No leader is active and the write is queued: lead it off this (dropped) task.
        let (shared, clock) = (
            Arc::clone(&self.store.shared),
            Arc::clone(&self.store.clock),
        );
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || shared.lead(clock.as_ref()))),
            Err(_) => shared.lead(clock.as_ref()),
        }
    }
}

#[async_trait::async_trait]
impl ThreadStore for SqliteStore {
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        let query = query.clone();
        self.run(move |shared, _| {
            let conn = shared.reader();
            let row = match &query.lookup {
                Lookup::Id(id) => conn
                    .prepare_cached(&SELECT_BY_ID)
                    .map_err(map_err)?
                    .query_row(params![id.as_str()], read_row),
                Lookup::Key(key) => conn
                    .prepare_cached(&SELECT_BY_KEY)
                    .map_err(map_err)?
                    .query_row(params![key], read_row),
            }
            .optional()
            .map_err(map_err)?;
            match row {
                Some(row) => {
                    let record = row.decode()?;
                    Ok(visible(&record, query.include_archived).then_some(record))
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        query.validate()?;
        let query = query.clone();
        self.run(move |shared, _| {
            let (after_key, after_id) = query.scan_start();
            let conn = shared.reader();
            let limit = i64::from(query.limit) + 1;
            let end = prefix_successor(&query.prefix);
            let sql = match end {
                Some(_) => &*SELECT_PAGE,
                None => &*SELECT_PAGE_UNBOUNDED,
            };
            let rows = conn
                .prepare_cached(sql)
                .map_err(map_err)?
                .query_map(
                    params![
                        query.prefix,
                        after_key,
                        after_id,
                        query.include_archived,
                        limit,
                        end,
                        query.namespace
                    ],
                    read_row,
                )
                .map_err(map_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(map_err)?;
            Ok(ListPage::from_fetched(decode_all(rows)?, query.limit))
        })
        .await
    }

    async fn finalize(&self, request: &FinalizeRequest) -> Result<(), StoreError> {
        request.validate()?;
        let row = StoredRow::encode(&request.record)?;
        let request = request.clone();
        self.write(Op::Finalize {
            request: Box::new(request),
            row: Box::new(row),
        })
        .await
        .map(drop)
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        check_lease_args(target, owner, ttl)?;
        let (target, owner) = (target.to_owned(), owner.to_owned());
        match self.write(Op::Acquire { target, owner, ttl }).await? {
            Done::Lease(lease) => Ok(lease),
            Done::Unit => Err(StoreError::unavailable("an acquire returned no lease")),
        }
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        check_lease_args(&lease.target, &lease.owner, ttl)?;
        let lease = lease.clone();
        match self.write(Op::Renew { lease, ttl }).await? {
            Done::Lease(lease) => Ok(lease),
            Done::Unit => Err(StoreError::unavailable("a renewal returned no lease")),
        }
    }

    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError> {
        check_lease_target_name("lease target", target)?;
        let target = target.to_owned();
        self.run(move |shared, clock| {
            let now = clock.now().as_millis();
            let holder: Option<(String, i64)> = shared
                .reader()
                .prepare_cached("SELECT owner, expires_at FROM leases WHERE target = ?1")
                .map_err(map_err)?
                .query_row(params![target], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(map_err)?;
            Ok(holder
                .filter(|(_, expires_at)| *expires_at > now)
                .map(|(owner, expires_at)| LeaseHolder {
                    owner,
                    expires_in: millis_until(expires_at, now),
                }))
        })
        .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let Ok(token) = i64::try_from(lease.token) else {
            // No stored lease has such a token: nothing to release.
            return Ok(());
        };
        let lease = lease.clone();
        self.write(Op::Release { lease, token }).await.map(drop)
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        if !is_storable_key(key) {
            return Ok(0);
        }
        let key = key.to_owned();
        self.run(move |shared, clock| {
            let mut db = shared.db();
            let tx = db
                .durable_writes()?
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(map_err)?;
            // The write lock is held: the fence is ordered against every acquisition.
            let fence = next_token(&tx)?;
            tx.prepare_cached(
                "INSERT INTO erased_keys (key, fence) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET fence = excluded.fence",
            )
            .map_err(map_err)?
            .execute(params![key, fence])
            .map_err(map_err)?;
            // A fence matters only while a live lease older than it exists.
            tx.prepare_cached(
                "DELETE FROM erased_keys WHERE NOT EXISTS (SELECT 1 FROM leases \
                 WHERE leases.expires_at > ?1 AND leases.token < erased_keys.fence)",
            )
            .map_err(map_err)?
            .execute(params![clock.now().as_millis()])
            .map_err(map_err)?;
            tx.prepare_cached("DELETE FROM bindings WHERE key = ?1")
                .map_err(map_err)?
                .execute(params![key])
                .map_err(map_err)?;
            let removed = tx
                .prepare_cached("DELETE FROM threads WHERE key = ?1")
                .map_err(map_err)?
                .execute(params![key])
                .map_err(map_err)?;
            tx.commit().map_err(map_err)?;
            Ok(u64::try_from(removed).unwrap_or(u64::MAX))
        })
        .await
    }
}
