//! Several PostgreSQL connections race Thread turns on 16 keys: no update is lost. Also:
//! concurrent starters migrate a fresh schema exactly once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use thread_store::postgres::PostgresStore;
use thread_store::{FinalizeRequest, Query, StoreError, ThreadStore};

use crate::{PgSchema, counter_of, record, runtime};

const KEYS: usize = 16;
const WORKERS: usize = 4;
const TURNS_EACH: usize = 40;

/// One Thread turn on `key`: acquire (retrying on Busy), resolve, finalize with release.
/// Every fourth turn replaces the record (archive plus rebind) instead of updating it in
/// place. Returns the counter it read.
async fn turn(store: &PostgresStore, key: &str, owner: &str, n: usize) -> u64 {
    let target = format!("thread:{key}");
    let lease = loop {
        match store
            .acquire_lease(&target, owner, Duration::from_secs(30))
            .await
        {
            Ok(lease) => break lease,
            Err(StoreError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(1)).await,
            Err(e) => panic!("acquire failed: {e}"),
        }
    };
    let current = store.resolve(&Query::key(key)).await.unwrap();
    let read = current.as_ref().map_or(0, counter_of);
    let request = match current {
        Some(existing) if n % 4 == 3 => FinalizeRequest::new(record(key, read + 1))
            .archive_previous(existing.id)
            .rebind_key(),
        Some(mut existing) => {
            existing
                .state
                .data
                .insert("counter".into(), (read + 1).to_string());
            FinalizeRequest::new(existing)
        }
        None => FinalizeRequest::new(record(key, 1)).rebind_key(),
    };
    store
        .finalize(&request.holding(lease).release_leases())
        .await
        .unwrap();
    read
}

#[test]
fn postgres_connections_race_on_16_keys_without_lost_updates() {
    let schema = PgSchema::new("race");
    runtime().block_on(async {
        let mut tasks = Vec::new();
        for w in 0..WORKERS {
            // Each worker has its own store, so its own connections.
            let store = Arc::new(
                PostgresStore::connect(schema.config().pool_size(1))
                    .await
                    .unwrap(),
            );
            tasks.push(tokio::spawn(async move {
                let mut reads = Vec::new();
                for n in 0..TURNS_EACH {
                    let key = format!("race/{:02}", (w * 5 + n * 3) % KEYS);
                    let read = turn(&store, &key, &format!("worker-{w}"), n).await;
                    reads.push((key, read));
                }
                reads
            }));
        }
        let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for task in tasks {
            for (key, read) in task.await.unwrap() {
                by_key.entry(key).or_default().push(read);
            }
        }
        let store = schema.store().await;
        let mut total = 0;
        for (key, mut reads) in by_key {
            reads.sort_unstable();
            let n = reads.len() as u64;
            assert_eq!(
                reads,
                (0..n).collect::<Vec<_>>(),
                "{key}: a counter value was read twice (a lost update) or skipped"
            );
            let last = store.resolve(&Query::key(&key)).await.unwrap().unwrap();
            assert_eq!(counter_of(&last), n, "{key}: the final record lost updates");
            total += n;
        }
        assert_eq!(total, (WORKERS * TURNS_EACH) as u64);
    });
}

#[test]
fn postgres_concurrent_starters_migrate_once() {
    let schema = PgSchema::new("migrate");
    runtime().block_on(async {
        let mut starters = Vec::new();
        for _ in 0..6 {
            let config = schema.config().pool_size(1);
            starters.push(tokio::spawn(PostgresStore::connect(config)));
        }
        for s in starters {
            s.await.unwrap().unwrap();
        }
        let client = schema.raw_client().await;
        let rows = client
            .query(
                &format!(
                    "SELECT version FROM \"{}\".schema_migrations ORDER BY version",
                    schema.name
                ),
                &[],
            )
            .await
            .unwrap();
        let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(
            versions,
            (1..=thread_store::postgres::SCHEMA_VERSION).collect::<Vec<_>>()
        );
    });
}

/// A finalize whose lease row is changed by a concurrent transaction after its snapshot gets a
/// serialization failure (40001) under SERIALIZABLE; the store replays the whole transaction,
/// which then succeeds.
#[test]
fn postgres_serialization_failure_is_retried() {
    let schema = PgSchema::new("retry");
    runtime().block_on(async {
        let mut pg: tokio_postgres::Config = schema.url.parse().unwrap();
        pg.options("-c default_transaction_isolation=serializable");
        let config = thread_store::postgres::PostgresConfig::new(pg, &schema.name)
            .unwrap()
            .pool_size(1);
        let store = Arc::new(PostgresStore::connect(config).await.unwrap());
        let lease = store
            .acquire_lease("thread:retry", "owner", Duration::from_secs(60))
            .await
            .unwrap();

        // Another session changes the lease row and holds its lock.
        let mut raw = schema.raw_client().await;
        let tx = raw.transaction().await.unwrap();
        tx.execute(
            &format!(
                "UPDATE \"{}\".leases SET expires_at = expires_at + interval '1 second'",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();

        let saved = record("retry/thread", 1);
        let request = FinalizeRequest::new(saved.clone())
            .holding(lease)
            .rebind_key()
            .release_leases();
        let finalize = {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.finalize(&request).await })
        };
        // Wait until the finalize has taken its snapshot and waits for the row lock.
        let watcher = schema.raw_client().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' \
                     AND strpos(query, $1) > 0",
                    &[&schema.name],
                )
                .await
                .unwrap()
                .get(0);
            if waiting > 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the finalize never waited"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tx.commit().await.unwrap();

        finalize.await.unwrap().unwrap();
        assert_eq!(
            store.retry_count(),
            1,
            "the conflict was not replayed exactly once"
        );
        assert_eq!(
            store.resolve(&Query::key("retry/thread")).await.unwrap(),
            Some(saved)
        );
    });
}

/// A delete racing a lease holder's finalize, on separate connections, never leaves the erased
/// key behind: either the finalize commits first and the delete removes its record, or the
/// finalize comes second and is refused with `LeaseLost` (the erase fence).
#[test]
fn postgres_delete_racing_a_finalize_never_resurrects_the_key() {
    let schema = PgSchema::new("erase");
    runtime().block_on(async {
        let holder = Arc::new(schema.store().await);
        let eraser = Arc::new(schema.store().await);
        let (mut fenced, mut erased_after) = (0, 0);
        for round in 0..40 {
            let key = format!("erase/{round}");
            let lease = holder
                .acquire_lease(&format!("thread:{key}"), "holder", Duration::from_secs(30))
                .await
                .unwrap();
            let saved = record(&key, 1);
            let finalize = {
                let (holder, saved) = (Arc::clone(&holder), saved.clone());
                tokio::spawn(async move {
                    holder
                        .finalize(&FinalizeRequest::new(saved).holding(lease).rebind_key())
                        .await
                })
            };
            let delete = {
                let (eraser, key) = (Arc::clone(&eraser), key.clone());
                tokio::spawn(async move { eraser.delete(&key).await })
            };
            match (finalize.await.unwrap(), delete.await.unwrap().unwrap()) {
                (Ok(()), 1) => erased_after += 1,
                (Err(StoreError::LeaseLost { .. }), 0) => fenced += 1,
                other => panic!("round {round}: unexpected outcome {other:?}"),
            }
            assert_eq!(holder.resolve(&Query::key(&key)).await.unwrap(), None);
            assert_eq!(
                holder
                    .resolve(&Query::id(saved.id.clone()).including_archived())
                    .await
                    .unwrap(),
                None,
                "round {round}: the erased key's record came back"
            );
        }
        println!("fenced {fenced}, erased after the finalize {erased_after}");
    });
}
