//! The SQLite file itself: private permissions, WAL mode, numbered migrations applied once by
//! concurrent openers, and state that survives reopening.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use thread_store::sqlite::{SqliteConfig, SqliteStore, Synchronous};
use thread_store::{FinalizeRequest, Query, SystemClock, ThreadStore};

use crate::{open_sqlite, record, runtime};

#[test]
fn sqlite_files_are_private_and_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.sqlite3");
    runtime().block_on(async {
        let store = SqliteStore::open(SqliteConfig::new(&path).synchronous(Synchronous::Full))
            .await
            .unwrap();
        store
            .finalize(&FinalizeRequest::new(record("k", 1)).rebind_key())
            .await
            .unwrap();
        let mut checked = 0;
        for suffix in ["", "-wal", "-shm"] {
            let file = dir.path().join(format!("private.sqlite3{suffix}"));
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{} has mode {mode:o}", file.display());
            checked += 1;
        }
        assert_eq!(checked, 3);
        let raw = rusqlite::Connection::open(&path).unwrap();
        let mode: String = raw
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    });
}

#[test]
fn sqlite_concurrent_openers_migrate_once_and_state_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite3");
    let openers: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open_blocking(SqliteConfig::new(path)))
        })
        .collect();
    for o in openers {
        o.join().unwrap().unwrap();
    }
    let raw = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<i64> = raw
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, vec![thread_store::sqlite::SCHEMA_VERSION]);

    let saved = record("survivor", 7);
    runtime().block_on(async {
        let store = open_sqlite(&path, Arc::new(SystemClock)).await;
        store
            .finalize(&FinalizeRequest::new(saved.clone()).rebind_key())
            .await
            .unwrap();
    });
    runtime().block_on(async {
        let store = open_sqlite(&path, Arc::new(SystemClock)).await;
        assert_eq!(
            store.resolve(&Query::key("survivor")).await.unwrap(),
            Some(saved)
        );
    });
}

/// Tokio refuses `block_in_place` inside a `LocalSet`; an in-place store falls back to the
/// blocking pool there instead of panicking.
#[test]
fn sqlite_in_place_falls_back_inside_a_local_set() {
    use thread_store::sqlite::Execution;
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let path = dir.path().join("local.db");
    rt.block_on(local.run_until(async move {
        tokio::task::spawn_local(async move {
            let store = SqliteStore::open(SqliteConfig::new(&path).execution(Execution::InPlace))
                .await
                .unwrap();
            let lease = store
                .acquire_lease("thread:t", "owner", std::time::Duration::from_secs(5))
                .await
                .unwrap();
            store.release_lease(&lease).await.unwrap();
            assert!(store.resolve(&Query::key("t")).await.unwrap().is_none());
        })
        .await
        .unwrap();
    }));
}
