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
//! - rusqlite is blocking, so no call blocks an async worker that other tasks need. By default
//!   ([`Execution::BlockingPool`]) every call runs on Tokio's blocking pool (`spawn_blocking`):
//!   one thread hop per call, which costs about as much as a NORMAL-durability turn's SQL.
//!   [`Execution::InPlace`] runs a call in place on a multi-thread runtime through
//!   `tokio::task::block_in_place`, which first hands the worker's other tasks to another
//!   thread: no hop, so a turn costs what its SQL costs; other futures of the calling task
//!   wait meanwhile. A Tokio runtime must be running. A future dropped mid-call lets the call
//!   finish its transaction, so a write is either wholly committed or not at all.
//! - Lease expiry follows the store's [`Clock`] (the host clock by default), which all processes
//!   on one host share. Do not put the file on a network file system.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::LeaseHolder;
use crate::record::check_name as check_lease_target_name;
use crate::row::{COLUMNS, StoredRow, decode_all};
use crate::store::millis_until;
use crate::store::{check_erase_fence, check_lease_args, is_storable_key};
use crate::{
    Clock, FinalizeRequest, Lease, ListPage, ListQuery, Lookup, Query, RecordStatus, StoreError,
    StoreFile, SystemClock, ThreadRecord, ThreadStore, UnsafeFileReason,
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
    /// On Tokio's blocking pool: one thread hop per call; other futures of the calling task
    /// keep running while it waits. Works on every runtime.
    #[default]
    BlockingPool,
    /// In place through `block_in_place` on a multi-thread runtime: no thread hop, but other
    /// futures of the calling task wait for the call (under write contention, up to the busy
    /// timeout). Falls back to the blocking pool where Tokio does not allow it (a
    /// current-thread runtime, a `LocalSet`).
    InPlace,
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
            execution: Execution::BlockingPool,
        }
    }

    /// Sets where blocking calls run (default [`Execution::BlockingPool`]).
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
    conn: Arc<Mutex<Connection>>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
    execution: Execution,
}

/// The newest schema version this build knows. A database whose `schema_migrations` table
/// records a newer version is refused with [`StoreError::Corrupt`].
pub const SCHEMA_VERSION: i64 = 3;

/// Numbered migrations: entry `n` brings the schema from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: records, key bindings, leases and the fencing-token counter.
    "CREATE TABLE threads (
        id TEXT PRIMARY KEY NOT NULL,
        key TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
        format INTEGER NOT NULL,
        driver_type TEXT NOT NULL,
        agent TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        scheme_version INTEGER NOT NULL,
        components TEXT NOT NULL,
        codec TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX threads_by_key ON threads (key, id);
    CREATE TABLE bindings (
        key TEXT PRIMARY KEY NOT NULL,
        record_id TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE leases (
        target TEXT PRIMARY KEY NOT NULL,
        owner TEXT NOT NULL,
        token INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE lease_tokens (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        last INTEGER NOT NULL
    );
    INSERT INTO lease_tokens (id, last) VALUES (1, 0);",
    // 2: erase fences: the fencing token each delete of a key took.
    "CREATE TABLE erased_keys (
        key TEXT PRIMARY KEY NOT NULL,
        fence INTEGER NOT NULL
    ) WITHOUT ROWID;",
    // 3: the turn count of each record (0 for records written before it).
    "ALTER TABLE threads ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;",
];

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
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            clock: Arc::clone(&config.clock),
            path: config.path.clone(),
            execution: config.execution,
        })
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the connection, in place or on the blocking pool (see [`Execution`]).
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &dyn Clock) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
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
                    let mut conn = conn
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    Some(f(&mut conn, clock.as_ref()))
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
        tokio::task::spawn_blocking(move || {
            // A panic inside `f` rolls its transaction back (the Transaction guard drops), so
            // a poisoned connection is still consistent.
            let mut conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut conn, clock.as_ref())
        })
        .await
        .map_err(|_| StoreError::unavailable("the SQLite task did not complete"))?
    }
}

// The file checks below are local on purpose: runtime-env has similar ones in its crate-private
// `secure_fs`, but the store is a lower layer than the runtime environment, and a dependency
// edge for four checks would pull its whole crate into every store user. rustix supplies what
// std lacks (O_NOFOLLOW, the effective uid) without unsafe code.

/// The companions SQLite may keep next to the database file, by suffix.
const COMPANIONS: [(&str, StoreFile); 3] = [
    ("-wal", StoreFile::WriteAheadLog),
    ("-shm", StoreFile::SharedMemory),
    ("-journal", StoreFile::RollbackJournal),
];

/// The exact mode of every file the store creates.
const PRIVATE_MODE: u32 = 0o600;

/// Opens the database file without following a symlink, creating it with mode exactly 0600 if
/// it is missing, and checks it and every existing companion (see the module docs).
fn open_private_file(path: &Path) -> Result<std::fs::File, StoreError> {
    use rustix::fs::{Mode, OFlags};
    let uid = rustix::process::geteuid().as_raw();
    // NONBLOCK: opening a FIFO planted at the path must not hang; it is refused below.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(PRIVATE_MODE);
    let file = match rustix::fs::open(path, flags | OFlags::CREATE | OFlags::EXCL, mode) {
        Ok(fd) => {
            // We created it: fchmod makes it exactly 0600, whatever the umask.
            rustix::fs::fchmod(&fd, mode).map_err(|e| cannot("set the mode of", e.into()))?;
            std::fs::File::from(fd)
        }
        Err(rustix::io::Errno::EXIST) => match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => std::fs::File::from(fd),
            Err(e) => {
                // O_NOFOLLOW reports a symlink as ELOOP (EMLINK on some BSDs): ask lstat.
                if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(unsafe_file(StoreFile::Database, UnsafeFileReason::Symlink));
                }
                return Err(cannot("open", e.into()));
            }
        },
        Err(e) => return Err(cannot("create", e.into())),
    };
    let meta = file.metadata().map_err(|e| cannot("inspect", e))?;
    check_private(StoreFile::Database, &meta, uid)?;
    check_companions(path, uid)?;
    Ok(file)
}

/// After SQLite opened the path: it is still the file that was checked, and the companions
/// SQLite created (or found) are private.
fn verify_after_open(path: &Path, checked: &std::fs::File) -> Result<(), StoreError> {
    let uid = rustix::process::geteuid().as_raw();
    let now = std::fs::symlink_metadata(path).map_err(|e| cannot("inspect", e))?;
    let was = checked.metadata().map_err(|e| cannot("inspect", e))?;
    if (now.dev(), now.ino()) != (was.dev(), was.ino()) {
        return Err(StoreError::unavailable(
            "the SQLite file was replaced while the store opened it",
        ));
    }
    check_private(StoreFile::Database, &now, uid)?;
    check_companions(path, uid)
}

fn check_companions(path: &Path, uid: u32) -> Result<(), StoreError> {
    for (suffix, file) in COMPANIONS {
        let mut name = OsString::from(path.as_os_str());
        name.push(suffix);
        match std::fs::symlink_metadata(&name) {
            Ok(meta) => check_private(file, &meta, uid)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot("inspect", e)),
        }
    }
    Ok(())
}

/// A regular file (not a symlink), owned by `uid`, with no group or other permission bits.
fn check_private(file: StoreFile, meta: &std::fs::Metadata, uid: u32) -> Result<(), StoreError> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(unsafe_file(file, UnsafeFileReason::Symlink));
    }
    if !kind.is_file() {
        return Err(unsafe_file(file, UnsafeFileReason::NotARegularFile));
    }
    if meta.uid() != uid {
        return Err(unsafe_file(
            file,
            UnsafeFileReason::OwnedByAnotherUser { owner: meta.uid() },
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_file(file, UnsafeFileReason::OpenToOthers { mode }));
    }
    Ok(())
}

fn unsafe_file(file: StoreFile, reason: UnsafeFileReason) -> StoreError {
    StoreError::UnsafeFile { file, reason }
}

/// A file-system failure, named by the operation and the error kind, never by the path.
fn cannot(what: &str, e: std::io::Error) -> StoreError {
    StoreError::unavailable(format!("cannot {what} the SQLite file: {}", e.kind()))
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(map_err)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY NOT NULL,
            applied_at INTEGER NOT NULL
        )",
    )
    .map_err(map_err)?;
    let current: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(map_err)?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::corrupt(format!(
            "the SQLite schema is at version {current}, newer than this build supports ({SCHEMA_VERSION})"
        )));
    }
    if current < 0 {
        return Err(StoreError::corrupt(format!(
            "the SQLite schema version {current} is not a valid version"
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index as i64 + 1;
        tx.execute_batch(sql).map_err(map_err)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            params![version, crate::Timestamp::now().as_millis()],
        )
        .map_err(map_err)?;
    }
    tx.commit().map_err(map_err)
}

/// Maps a rusqlite error to the store's classes. SQLite's messages name tables, columns and
/// constraints, never bound values.
fn map_err(err: rusqlite::Error) -> StoreError {
    use rusqlite::Error as E;
    match err {
        E::SqliteFailure(e, _)
            if matches!(e.code, ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) =>
        {
            StoreError::corrupt(format!("the SQLite file is damaged: {e}"))
        }
        E::SqliteFailure(e, _)
            if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
        {
            StoreError::unavailable(
                "the SQLite database stayed locked longer than the busy timeout",
            )
        }
        E::SqliteFailure(e, msg) => StoreError::unavailable(match msg {
            Some(msg) => format!("SQLite error: {e}: {msg}"),
            None => format!("SQLite error: {e}"),
        }),
        E::InvalidColumnType(index, _, ty) => StoreError::corrupt(format!(
            "column {index} holds a value of type {ty}, not the type this build stores"
        )),
        E::IntegralValueOutOfRange(index, _) => {
            StoreError::corrupt(format!("column {index} holds an integer out of range"))
        }
        E::FromSqlConversionFailure(index, ty, _) => StoreError::corrupt(format!(
            "column {index} (type {ty}) does not convert to the type this build stores"
        )),
        E::Utf8Error(..) => StoreError::corrupt("a text column is not valid UTF-8"),
        other => StoreError::unavailable(format!("SQLite call failed: {}", kind_of(&other))),
    }
}

/// A value-free description of a rusqlite error.
fn kind_of(err: &rusqlite::Error) -> &'static str {
    use rusqlite::Error as E;
    match err {
        E::QueryReturnedNoRows => "no rows",
        E::InvalidParameterCount(..) => "wrong parameter count",
        E::InvalidPath(_) => "invalid path",
        E::NulError(_) => "a string holds a NUL byte",
        E::ToSqlConversionFailure(_) => "a value does not convert to SQL",
        _ => "unexpected error",
    }
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
    Ok(StoredRow {
        id: r.get(0)?,
        key: r.get(1)?,
        status: r.get(2)?,
        format: r.get(3)?,
        driver_type: r.get(4)?,
        agent: r.get(5)?,
        fingerprint: r.get(6)?,
        scheme_version: r.get(7)?,
        components: r.get(8)?,
        codec: r.get(9)?,
        state: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        turns: r.get(13)?,
    })
}

fn token_to_sql(token: u64) -> Result<i64, StoreError> {
    i64::try_from(token).map_err(|_| StoreError::invalid("lease token is out of range"))
}

fn token_from_sql(token: i64) -> Result<u64, StoreError> {
    u64::try_from(token).map_err(|_| StoreError::corrupt("a stored lease token is negative"))
}

/// Whether the stored lease is exactly `lease` and not expired at `now`.
fn lease_is_current(
    tx: &rusqlite::Transaction<'_>,
    lease: &Lease,
    now: i64,
) -> Result<bool, StoreError> {
    let token = token_to_sql(lease.token)?;
    let found: Option<i64> = tx
        .prepare_cached(
            "SELECT 1 FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3 AND expires_at > ?4",
        )
        .map_err(map_err)?
        .query_row(params![lease.target, lease.owner, token, now], |r| r.get(0))
        .optional()
        .map_err(map_err)?;
    Ok(found.is_some())
}

fn finalize_blocking(
    conn: &mut Connection,
    clock: &dyn Clock,
    request: &FinalizeRequest,
) -> Result<(), StoreError> {
    let row = StoredRow::encode(&request.record)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(map_err)?;
    // The write lock is held from here to commit: the clock is read after taking it.
    let now = clock.now().as_millis();
    for lease in &request.held_leases {
        if !lease_is_current(&tx, lease, now)? {
            return Err(StoreError::lease_lost(&lease.target));
        }
    }
    if !request.held_leases.is_empty() {
        let fence: Option<i64> = tx
            .prepare_cached("SELECT fence FROM erased_keys WHERE key = ?1")
            .map_err(map_err)?
            .query_row(params![row.key], |r| r.get(0))
            .optional()
            .map_err(map_err)?;
        check_erase_fence(&request.held_leases, fence.map(token_from_sql).transpose()?)?;
    }
    if request.require_key_absent {
        let bound: Option<i64> = tx
            .prepare_cached("SELECT 1 FROM bindings WHERE key = ?1")
            .map_err(map_err)?
            .query_row(params![row.key], |r| r.get(0))
            .optional()
            .map_err(map_err)?;
        if bound.is_some() {
            return Err(StoreError::already_exists(&row.key));
        }
    }
    let existing_key: Option<String> = tx
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
        let changed = tx
            .prepare_cached("UPDATE threads SET status = 'archived' WHERE id = ?1")
            .map_err(map_err)?
            .execute(params![previous.as_str()])
            .map_err(map_err)?;
        if changed == 0 {
            return Err(StoreError::not_found(previous.as_str()));
        }
    }
    tx.prepare_cached(
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
        tx.prepare_cached(
            "INSERT INTO bindings (key, record_id) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET record_id = excluded.record_id",
        )
        .map_err(map_err)?
        .execute(params![row.key, row.id])
        .map_err(map_err)?;
    }
    if request.release_leases {
        let mut delete = tx
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
    tx.commit().map_err(map_err)
}

/// Takes the next fencing token inside `tx`.
fn next_token(tx: &rusqlite::Transaction<'_>) -> Result<i64, StoreError> {
    tx.prepare_cached("UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last")
        .map_err(map_err)?
        .query_row([], |r| r.get(0))
        .optional()
        .map_err(map_err)?
        .ok_or_else(|| StoreError::corrupt("the lease token counter row is missing"))
}

fn acquire_blocking(
    conn: &mut Connection,
    clock: &dyn Clock,
    target: &str,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    let tx = conn
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

#[async_trait::async_trait]
impl ThreadStore for SqliteStore {
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        let query = query.clone();
        self.run(move |conn, _| {
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
                    let visible = query.include_archived || record.status == RecordStatus::Active;
                    Ok(visible.then_some(record))
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        query.validate()?;
        let query = query.clone();
        self.run(move |conn, _| {
            let (after_key, after_id) = match &query.after {
                Some(c) => (c.key.clone(), c.id.as_str().to_owned()),
                None => (String::new(), String::new()),
            };
            let mut stmt = conn.prepare_cached(&SELECT_PAGE).map_err(map_err)?;
            let rows = stmt
                .query_map(
                    params![
                        query.prefix,
                        after_key,
                        after_id,
                        query.include_archived,
                        i64::from(query.limit) + 1
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
        let request = request.clone();
        self.run(move |conn, clock| finalize_blocking(conn, clock, &request))
            .await
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        check_lease_args(target, owner, ttl)?;
        let (target, owner) = (target.to_owned(), owner.to_owned());
        self.run(move |conn, clock| acquire_blocking(conn, clock, &target, &owner, ttl))
            .await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        check_lease_args(&lease.target, &lease.owner, ttl)?;
        let lease = lease.clone();
        self.run(move |conn, clock| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(map_err)?;
            let now = clock.now();
            let changed = tx
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
            tx.commit().map_err(map_err)?;
            Ok(lease)
        })
        .await
    }

    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError> {
        check_lease_target_name("lease target", target)?;
        let target = target.to_owned();
        self.run(move |conn, clock| {
            let now = clock.now().as_millis();
            let holder: Option<(String, i64)> = conn
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
        self.run(move |conn, _| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(map_err)?;
            tx.prepare_cached("DELETE FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3")
                .map_err(map_err)?
                .execute(params![lease.target, lease.owner, token])
                .map_err(map_err)?;
            tx.commit().map_err(map_err)
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        if !is_storable_key(key) {
            return Ok(0);
        }
        let key = key.to_owned();
        self.run(move |conn, clock| {
            let tx = conn
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

static SELECT_BY_ID: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM threads WHERE id = ?1"));

static SELECT_BY_KEY: LazyLock<String> = LazyLock::new(|| {
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("t.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT {columns} FROM bindings b JOIN threads t ON t.id = b.record_id WHERE b.key = ?1"
    )
});

static SELECT_PAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM threads \
         WHERE key >= ?1 AND substr(key, 1, length(?1)) = ?1 \
         AND (key, id) > (?2, ?3) AND (?4 OR status = 'active') \
         ORDER BY key, id LIMIT ?5"
    )
});
