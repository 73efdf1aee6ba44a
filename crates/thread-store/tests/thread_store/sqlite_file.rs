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
    assert_eq!(
        versions,
        (1..=thread_store::sqlite::SCHEMA_VERSION).collect::<Vec<_>>()
    );

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

/// What opening a store at `path` must do to a file it refuses: fail, and leave it alone.
fn expect_refused(path: &std::path::Path, what: &str) -> thread_store::StoreError {
    match SqliteStore::open_blocking(SqliteConfig::new(path)) {
        Ok(_) => panic!("{what}: the store opened"),
        Err(e) => e,
    }
}

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn sqlite_refuses_a_symlink_at_the_database_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linked.sqlite3");
    // Dangling: opening through it would create the target.
    let target = dir.path().join("elsewhere.sqlite3");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let error = expect_refused(&path, "a dangling symlink");
    assert!(
        matches!(
            error,
            thread_store::StoreError::UnsafeFile {
                file: thread_store::StoreFile::Database,
                reason: thread_store::UnsafeFileReason::Symlink,
            }
        ),
        "{error:?}"
    );
    assert!(!target.exists(), "the store created the symlink's target");

    // Pointing at a private, valid database: still refused, the target is not touched.
    drop(SqliteStore::open_blocking(SqliteConfig::new(&target)).unwrap());
    let before = std::fs::read(&target).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    expect_refused(&path, "a symlink to a database");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert!(!dir.path().join("linked.sqlite3-wal").exists());
}

#[test]
fn sqlite_refuses_a_database_open_to_group_or_others() {
    for mode in [0o644, 0o640, 0o604, 0o660, 0o620, 0o602] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("open.sqlite3");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let error = expect_refused(&path, &format!("mode {mode:o}"));
        assert!(
            matches!(
                error,
                thread_store::StoreError::UnsafeFile {
                    file: thread_store::StoreFile::Database,
                    reason: thread_store::UnsafeFileReason::OpenToOthers { mode: m },
                } if m == mode
            ),
            "mode {mode:o}: {error:?}"
        );
        assert_eq!(mode_of(&path), mode, "the store changed the file's mode");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"",
            "the store wrote the file"
        );
        for suffix in ["-wal", "-shm"] {
            let side = dir.path().join(format!("open.sqlite3{suffix}"));
            assert!(!side.exists(), "mode {mode:o}: {suffix} was created");
        }
    }
}

#[test]
fn sqlite_refuses_a_wal_or_shm_open_to_others_or_linked() {
    for (suffix, file) in [
        ("-wal", thread_store::StoreFile::WriteAheadLog),
        ("-shm", thread_store::StoreFile::SharedMemory),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        drop(SqliteStore::open_blocking(SqliteConfig::new(&path)).unwrap());
        let side = dir.path().join(format!("store.sqlite3{suffix}"));
        std::fs::write(&side, b"").unwrap();
        std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = expect_refused(&path, &format!("a 0644 {suffix}"));
        assert!(
            matches!(
                &error,
                thread_store::StoreError::UnsafeFile {
                    file: f,
                    reason: thread_store::UnsafeFileReason::OpenToOthers { mode: 0o644 },
                } if *f == file
            ),
            "{suffix}: {error:?}"
        );
        assert_eq!(mode_of(&side), 0o644, "the store changed the {suffix} mode");

        std::fs::remove_file(&side).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, &side).unwrap();
        let error = expect_refused(&path, &format!("a symlinked {suffix}"));
        assert!(
            matches!(
                &error,
                thread_store::StoreError::UnsafeFile {
                    file: f,
                    reason: thread_store::UnsafeFileReason::Symlink,
                } if *f == file
            ),
            "{suffix}: {error:?}"
        );
        assert!(
            !elsewhere.exists(),
            "the store wrote through a {suffix} symlink"
        );
    }
}

#[test]
fn sqlite_refuses_a_database_owned_by_another_user() {
    if rustix_free_euid() != 0 {
        println!("SKIPPED: changing a file's owner needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.sqlite3");
    drop(SqliteStore::open_blocking(SqliteConfig::new(&path)).unwrap());
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    let error = expect_refused(&path, "a file owned by uid 65534");
    assert!(
        matches!(
            error,
            thread_store::StoreError::UnsafeFile {
                file: thread_store::StoreFile::Database,
                reason: thread_store::UnsafeFileReason::OwnedByAnotherUser { owner: 65534 },
            }
        ),
        "{error:?}"
    );
    assert!(!dir.path().join("foreign.sqlite3-wal").exists());
}

/// The effective uid, read from a file the test creates (tests do not depend on rustix).
fn rustix_free_euid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::NamedTempFile::new().unwrap();
    probe.as_file().metadata().unwrap().uid()
}

/// A database written before schema version 3 (no turn count) migrates on open, and its
/// records read a turn count of 0; new writes keep theirs.
#[test]
fn sqlite_schema_2_databases_migrate_to_turn_counts() {
    use thread_store::{FinalizeRequest, Query, ThreadStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let rt = crate::runtime();
    rt.block_on(async {
        let store = SqliteStore::open(SqliteConfig::new(&path)).await.unwrap();
        store
            .finalize(&FinalizeRequest::new(crate::record("old", 1)).rebind_key())
            .await
            .unwrap();
    });
    // Turn the file back into schema version 2, as an older build left it.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "ALTER TABLE threads DROP COLUMN namespace; ALTER TABLE threads DROP COLUMN turns; \
             DELETE FROM schema_migrations WHERE version >= 3;",
        )
        .unwrap();
    }
    rt.block_on(async {
        let store = SqliteStore::open(SqliteConfig::new(&path)).await.unwrap();
        let old = store.resolve(&Query::key("old")).await.unwrap().unwrap();
        assert_eq!(old.turns, 0, "written before turn counts");
        let mut new = crate::record("new", 2);
        new.turns = 7;
        store
            .finalize(&FinalizeRequest::new(new).rebind_key())
            .await
            .unwrap();
        let new = store.resolve(&Query::key("new")).await.unwrap().unwrap();
        assert_eq!(new.turns, 7);
    });
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(version, thread_store::sqlite::SCHEMA_VERSION);
    assert_eq!(version, 4);
}
