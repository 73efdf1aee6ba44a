//! The SQLite schema, its migrations, the row layout and the error mapping.

use std::sync::LazyLock;

use rusqlite::{Connection, ErrorCode, TransactionBehavior, params};

use crate::StoreError;
use crate::row::{COLUMNS, RowSource, StoredRow, check_schema_version, columns_of};

/// The newest schema version this build knows. A database whose `schema_migrations` table
/// records a newer version is refused with [`StoreError::Corrupt`].
pub const SCHEMA_VERSION: i64 = crate::row::SCHEMA_VERSION;

// One migration per version.
const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION);

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
    // 4: the credential namespace owning each record (NULL for records written before it).
    "ALTER TABLE threads ADD COLUMN namespace TEXT;",
];

pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
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
    check_schema_version("SQLite", current)?;
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
pub(super) fn map_err(err: rusqlite::Error) -> StoreError {
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

impl RowSource for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, index: usize) -> rusqlite::Result<String> {
        self.get(index)
    }
    fn int(&self, index: usize) -> rusqlite::Result<i64> {
        self.get(index)
    }
    fn opt_text(&self, index: usize) -> rusqlite::Result<Option<String>> {
        self.get(index)
    }
}

pub(super) fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
    StoredRow::read(r)
}

pub(super) static SELECT_BY_ID: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM threads WHERE id = ?1"));

pub(super) static SELECT_BY_KEY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM bindings b JOIN threads t ON t.id = b.record_id WHERE b.key = ?1",
        columns_of("t")
    )
});

/// A page of records under a prefix (of one owner when `?7` is not NULL): the index scan seeks to the page's start (`?2, ?3`, never
/// below the prefix: `ListQuery::scan_start`) and stops at the prefix's successor (`?6`), so a
/// page costs the same wherever it sits. The row value comes first: SQLite's planner then
/// takes it, not `key >= ?1`, as the scan's lower bound (`EXPLAIN QUERY PLAN`:
/// `(key,id)>(?,?) AND key<?`).
pub(super) static SELECT_PAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM threads \
         WHERE (key, id) > (?2, ?3) AND key < ?6 AND key >= ?1 \
         AND (?4 OR status = 'active') AND (?7 IS NULL OR namespace = ?7) \
         ORDER BY key, id LIMIT ?5"
    )
});

/// A page of records under a prefix that has no successor (empty, or only `char::MAX`);
/// `?6` is NULL then, bound only so both statements take the same parameters.
pub(super) static SELECT_PAGE_UNBOUNDED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM threads \
         WHERE (key, id) > (?2, ?3) AND substr(key, 1, length(?1)) = ?1 AND ?6 IS NULL \
         AND (?4 OR status = 'active') AND (?7 IS NULL OR namespace = ?7) \
         ORDER BY key, id LIMIT ?5"
    )
});
