//! Damaged data is reported as `Corrupt` with a clear message, never a panic or a guess: a
//! damaged SQLite file, an unknown record or schema version, a state that does not decode.

use std::sync::Arc;

use thread_store::sqlite::{SqliteConfig, SqliteStore};
use thread_store::{FinalizeRequest, ListQuery, Query, StoreError, SystemClock, ThreadStore};

use crate::{PgSchema, open_sqlite, record, runtime};

/// Something stored inside the damaged value, which no message may repeat.
const INSIDE: &str = "stored-value-7c1e";

fn expect_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, needle: &str) -> String {
    match result {
        Err(e @ StoreError::Corrupt { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(needle),
                "the message {message:?} does not mention {needle:?}"
            );
            assert!(
                !message.contains(INSIDE),
                "the message repeats stored data: {message}"
            );
            message
        }
        other => panic!("expected Corrupt mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn sqlite_garbage_file_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.sqlite3");
    std::fs::write(&path, INSIDE.repeat(500)).unwrap();
    // A private file, so the store gets past its permission checks to the content.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let result = SqliteStore::open_blocking(SqliteConfig::new(&path));
    expect_corrupt(result.map(drop), "not a database");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        INSIDE.repeat(500).into_bytes(),
        "opening a damaged file changed it"
    );
}

#[test]
fn sqlite_damaged_pages_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.sqlite3");
    runtime().block_on(async {
        let store = open_sqlite(&path, Arc::new(SystemClock)).await;
        store
            .finalize(&FinalizeRequest::new(record("k", 1)).rebind_key())
            .await
            .unwrap();
    });
    // Keep the 100-byte header, overwrite every page after it.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes.len() > 4096,
        "the database was not checkpointed into its file"
    );
    for b in &mut bytes[100..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let result = SqliteStore::open_blocking(SqliteConfig::new(&path));
    expect_corrupt(result.map(drop), "damaged");
}

/// Opens a store with one record under key `k`, then lets `damage` edit the file directly.
fn sqlite_with_damage(sql: &str) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open_blocking(SqliteConfig::new(&path)).unwrap();
    runtime().block_on(async {
        store
            .finalize(&FinalizeRequest::new(record("k", 1)).rebind_key())
            .await
            .unwrap();
    });
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch(sql).unwrap();
    (dir, store)
}

#[test]
fn sqlite_unknown_record_format_is_corrupt() {
    let (_dir, store) = sqlite_with_damage("UPDATE threads SET format = 99");
    runtime().block_on(async {
        let message = expect_corrupt(store.resolve(&Query::key("k")).await, "version 99");
        assert!(message.contains("reads version 1"), "{message}");
        expect_corrupt(store.list(&ListQuery::prefix("")).await, "version 99");
    });
}

#[test]
fn sqlite_undecodable_session_state_is_corrupt() {
    let (_dir, store) = sqlite_with_damage(&format!(
        "UPDATE threads SET state = '{{\"resume_id\": \"{INSIDE}'"
    ));
    runtime().block_on(async {
        expect_corrupt(
            store.resolve(&Query::key("k")).await,
            "session state does not decode",
        );
    });
    let (_dir, store) =
        sqlite_with_damage(&format!("UPDATE threads SET state = '[\"{INSIDE}\", 2]'"));
    runtime().block_on(async {
        expect_corrupt(store.resolve(&Query::key("k")).await, "wrong shape");
    });
    let (_dir, store) = sqlite_with_damage(&format!(
        "UPDATE threads SET created_at = '{INSIDE}', fingerprint = 'b3:00'"
    ));
    runtime().block_on(async {
        expect_corrupt(store.resolve(&Query::key("k")).await, "column 11");
    });
    let (_dir, store) = sqlite_with_damage("UPDATE threads SET fingerprint = 'b3:00'");
    runtime().block_on(async {
        expect_corrupt(store.resolve(&Query::key("k")).await, "fingerprint");
    });
}

#[test]
fn sqlite_unknown_schema_version_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.sqlite3");
    drop(SqliteStore::open_blocking(SqliteConfig::new(&path)).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)",
        [],
    )
    .unwrap();
    drop(raw);
    let message = expect_corrupt(
        SqliteStore::open_blocking(SqliteConfig::new(&path)).map(drop),
        "version 99",
    );
    assert!(
        message.contains("newer than this build supports"),
        "{message}"
    );
}

#[test]
fn postgres_bad_data_is_corrupt() {
    let schema = PgSchema::new("bad");
    runtime().block_on(async {
        let store = schema.store().await;
        store
            .finalize(&FinalizeRequest::new(record("k", 1)).rebind_key())
            .await
            .unwrap();
        let raw = schema.raw_client().await;
        let s = &schema.name;

        raw.batch_execute(&format!("UPDATE \"{s}\".threads SET format = 99"))
            .await
            .unwrap();
        expect_corrupt(store.resolve(&Query::key("k")).await, "version 99");
        expect_corrupt(store.list(&ListQuery::prefix("")).await, "version 99");

        raw.batch_execute(&format!(
            "UPDATE \"{s}\".threads SET format = 1, state = '{{\"resume_id\": \"{INSIDE}'"
        ))
        .await
        .unwrap();
        expect_corrupt(
            store.resolve(&Query::key("k")).await,
            "session state does not decode",
        );

        raw.batch_execute(&format!(
            "UPDATE \"{s}\".threads SET state = '{{}}', components = '{{\"Bad Name\": 1}}'"
        ))
        .await
        .unwrap();
        expect_corrupt(store.resolve(&Query::key("k")).await, "component breakdown");

        raw.batch_execute(&format!(
            "INSERT INTO \"{s}\".schema_migrations (version) VALUES (99)"
        ))
        .await
        .unwrap();
        let message = expect_corrupt(
            thread_store::postgres::PostgresStore::connect(schema.config())
                .await
                .map(drop),
            "version 99",
        );
        assert!(
            message.contains("newer than this build supports"),
            "{message}"
        );
    });
}
