//! SQLite group commit, made deterministic: another connection holds the write lock while
//! sixteen finalizes arrive, so the first waits in `BEGIN IMMEDIATE` and the other fifteen
//! queue behind it and must be committed together, in one transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};
use thread_store::sqlite::{GroupCommitStats, SqliteConfig, SqliteStore, Synchronous};
use thread_store::{FinalizeRequest, Query, StoreError, SystemClock, ThreadStore};

use crate::{counter_of, open_sqlite, record};

const WRITERS: usize = 16;

#[test]
fn sqlite_group_commit_batches_queued_finalizes_and_fails_each_alone() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.sqlite3");
    rt.block_on(async {
        let store = Arc::new(
            SqliteStore::open(
                SqliteConfig::new(&path)
                    .synchronous(Synchronous::Full)
                    .busy_timeout(Duration::from_secs(60)),
            )
            .await
            .unwrap(),
        );
        // Writer 3's key is bound already and it asks for an absent key; writer 9's lease was
        // taken over. Every other writer must commit.
        let (bound, stale) = (3, 9);
        store
            .finalize(&FinalizeRequest::new(record("batch/3", 500)).rebind_key())
            .await
            .unwrap();
        let mut requests = Vec::new();
        for n in 0..WRITERS {
            let target = format!("lease/{n}");
            let lease = store
                .acquire_lease(&target, "writer", Duration::from_secs(600))
                .await
                .unwrap();
            if n == stale {
                store.release_lease(&lease).await.unwrap();
                store
                    .acquire_lease(&target, "usurper", Duration::from_secs(600))
                    .await
                    .unwrap();
            }
            let mut request = FinalizeRequest::new(record(&format!("batch/{n}"), n as u64))
                .holding(lease)
                .rebind_key()
                .release_leases();
            if n == bound {
                request = request.require_key_absent();
            }
            requests.push(request);
        }
        let before = store.group_commit_stats();

        // Another connection (another process, as far as SQLite can tell) takes the write lock.
        let mut blocker = Connection::open(&path).unwrap();
        let held = blocker
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let spawn = |request: FinalizeRequest| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.finalize(&request).await })
        };
        // The first leads a batch of itself and waits in BEGIN IMMEDIATE; then the others
        // queue behind it.
        let mut tasks = vec![spawn(requests[0].clone())];
        wait_for(&store, |s| s.applying == 1).await;
        tasks.extend(requests[1..].iter().cloned().map(spawn));
        wait_for(&store, |s| s.queued == WRITERS - 1).await;
        held.rollback().unwrap();

        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap());
        }
        let after = store.group_commit_stats();
        assert_eq!(after.finalizes - before.finalizes, WRITERS as u64);
        assert_eq!(
            after.commits - before.commits,
            2,
            "the leader alone, then the fifteen queued behind it together: {after:?}"
        );
        assert_eq!(after.largest_batch, WRITERS - 1);

        for (n, result) in results.into_iter().enumerate() {
            let saved = store
                .resolve(&Query::key(format!("batch/{n}")))
                .await
                .unwrap();
            match n {
                n if n == stale => {
                    assert!(
                        matches!(result, Err(StoreError::LeaseLost { .. })),
                        "{result:?}"
                    );
                    assert_eq!(saved, None);
                }
                n if n == bound => {
                    assert!(
                        matches!(result, Err(StoreError::AlreadyExists { .. })),
                        "{result:?}"
                    );
                    assert_eq!(counter_of(&saved.unwrap()), 500);
                }
                n => {
                    result.unwrap();
                    assert_eq!(saved.as_ref(), Some(&requests[n].record));
                }
            }
        }
    });
    // What was committed together is durable and readable by a fresh connection.
    rt.block_on(async {
        let reopened = open_sqlite(&path, Arc::new(SystemClock)).await;
        let page = reopened
            .list(&thread_store::ListQuery::prefix("batch/").limit(100))
            .await
            .unwrap();
        assert_eq!(page.records.len(), WRITERS - 1);
    });
}

/// Polls the store's group-commit statistics until `ready` holds (a liveness bound of a
/// minute, not a timing assertion).
async fn wait_for(store: &SqliteStore, ready: impl Fn(&GroupCommitStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(&store.group_commit_stats()) {
        assert!(
            Instant::now() < deadline,
            "the finalizes never got there: {:?}",
            store.group_commit_stats()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
