//! The canary scan: a host keeps its secret in a `SecretString` next to the record it stores.
//! After a full run through each adapter, the secret is absent from the SQLite files and from
//! every PostgreSQL row, while the non-secret data the caller gave is present (so the scan is
//! able to see what was stored).
//!
//! The store's API has no secret-typed field: everything it accepts is plain data that it
//! stores verbatim. A secret reaches storage only if a caller copies it into that data; these
//! tests show that keeping it in the caller's secret type is enough.

use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use thread_store::memory::MemoryStore;
use thread_store::postgres::PostgresStore;
use thread_store::{
    FinalizeRequest, Lease, ListQuery, ManualClock, Query, RecordId, StoreError, ThreadRecord,
    ThreadStore,
};

use crate::{PgSchema, open_sqlite, record, runtime};

/// What a host holds for one Thread turn: the record it will store, and the provider API key
/// it used to run the turn.
#[derive(Debug)]
struct HostTurn {
    record: ThreadRecord,
    api_key: SecretString,
}

struct Canary {
    secret: String,
    visible: String,
}

impl Canary {
    fn new() -> Self {
        let id = RecordId::generate();
        Self {
            secret: format!("CANARY-SECRET-{id}"),
            visible: format!("VISIBLE-MARKER-{id}"),
        }
    }

    fn turn(&self, key: &str) -> HostTurn {
        let mut record = record(key, 1);
        record.state.resume_id = self.visible.clone();
        record
            .state
            .data
            .insert("note".to_owned(), self.visible.clone());
        HostTurn {
            record,
            api_key: SecretString::from(self.secret.clone()),
        }
    }

    /// Asserts that `text` lacks the secret.
    fn assert_absent(&self, what: &str, text: &[u8]) {
        assert!(
            !contains(text, self.secret.as_bytes()),
            "the canary secret reached {what}"
        );
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A full run: leases, a fork, archive plus rebind, renewals, refusals, listing, deletion.
/// Every text the store returns (records, errors, Debug output) is collected for scanning.
async fn full_run(store: &dyn ThreadStore, canary: &Canary, observed: &mut Vec<String>) {
    let ttl = Duration::from_secs(60);
    let first = canary.turn("canary/main");
    // The host uses its secret while running the turn, never handing it to the store.
    assert_eq!(first.api_key.expose_secret(), canary.secret);
    assert!(
        !format!("{first:?}").contains(&canary.secret),
        "SecretString leaked in Debug"
    );

    let lease = store
        .acquire_lease("thread:canary/main", "host-1", ttl)
        .await
        .unwrap();
    let busy = store
        .acquire_lease("thread:canary/main", "host-2", ttl)
        .await;
    observed.push(format!("{busy:?} {}", busy.as_ref().unwrap_err()));
    let lease = store.renew_lease(&lease, ttl).await.unwrap();
    store
        .finalize(
            &FinalizeRequest::new(first.record.clone())
                .holding(lease.clone())
                .rebind_key()
                .release_leases(),
        )
        .await
        .unwrap();
    let stale = store
        .finalize(&FinalizeRequest::new(first.record.clone()).holding(lease.clone()))
        .await;
    observed.push(format!("{stale:?}"));
    assert!(matches!(stale, Err(StoreError::LeaseLost { .. })));

    let second = canary.turn("canary/main");
    let lease = store
        .acquire_lease("thread:canary/main", "host-1", ttl)
        .await
        .unwrap();
    store
        .finalize(
            &FinalizeRequest::new(second.record.clone())
                .holding(lease)
                .archive_previous(first.record.id.clone())
                .rebind_key()
                .release_leases(),
        )
        .await
        .unwrap();

    let fork = canary.turn("canary/fork");
    let clash = store
        .finalize(&FinalizeRequest::new(canary.turn("canary/main").record).require_key_absent())
        .await;
    observed.push(format!("{clash:?}"));
    store
        .finalize(
            &FinalizeRequest::new(fork.record.clone())
                .require_key_absent()
                .rebind_key(),
        )
        .await
        .unwrap();
    let doomed = canary.turn("canary/doomed");
    store
        .finalize(&FinalizeRequest::new(doomed.record).rebind_key())
        .await
        .unwrap();
    assert_eq!(store.delete("canary/doomed").await.unwrap(), 1);

    let resolved = store.resolve(&Query::key("canary/main")).await.unwrap();
    assert_eq!(resolved.as_ref(), Some(&second.record));
    let page = store
        .list(&ListQuery::prefix("canary/").including_archived())
        .await
        .unwrap();
    assert_eq!(page.records.len(), 3);
    observed.push(format!("{resolved:?} {page:?} {store:?}"));
    store
        .release_lease(&Lease {
            target: "thread:canary/main".into(),
            owner: "host-1".into(),
            token: 1,
        })
        .await
        .unwrap();
}

fn assert_observed_clean(canary: &Canary, observed: &[String]) {
    let all = observed.join("\n");
    canary.assert_absent("a returned value, error or Debug output", all.as_bytes());
    assert!(
        all.contains(&canary.visible),
        "the scan saw none of the stored data"
    );
}

#[test]
fn canary_secret_never_reaches_memory_store() {
    let canary = Canary::new();
    let store = MemoryStore::with_clock(Arc::new(ManualClock::starting_now()));
    let mut observed = Vec::new();
    runtime().block_on(full_run(&store, &canary, &mut observed));
    observed.push(format!("{store:?}"));
    assert_observed_clean(&canary, &observed);
}

#[test]
fn canary_secret_never_reaches_sqlite_file() {
    let canary = Canary::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("canary.sqlite3");
    let mut observed = Vec::new();
    runtime().block_on(async {
        let store = open_sqlite(&path, Arc::new(ManualClock::starting_now())).await;
        full_run(&store, &canary, &mut observed).await;
        // Scan while open: the WAL holds the recent commits.
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        canary.assert_absent("the open SQLite files", &bytes);
        assert!(
            contains(&bytes, canary.visible.as_bytes()),
            "the scan found none of the stored data in the SQLite files"
        );
    });
    // Scan again once closed: the WAL has been checkpointed into the main file.
    let bytes = std::fs::read(&path).unwrap();
    canary.assert_absent("the SQLite file", &bytes);
    assert!(contains(&bytes, canary.visible.as_bytes()));
    assert_observed_clean(&canary, &observed);
}

#[test]
fn canary_secret_never_reaches_postgres_rows() {
    let canary = Canary::new();
    let schema = PgSchema::new("canary");
    runtime().block_on(async {
        // The connection's password is a secret too: it must not show in the store's Debug.
        let mut pg: tokio_postgres::Config = schema.url.parse().unwrap();
        pg.password(canary.secret.as_bytes());
        let config = thread_store::postgres::PostgresConfig::new(pg, &schema.name).unwrap();
        let store = PostgresStore::connect(config).await.unwrap();
        let mut observed = Vec::new();
        full_run(&store, &canary, &mut observed).await;
        assert_observed_clean(&canary, &observed);

        let raw = schema.raw_client().await;
        let tables = raw
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
                &[&schema.name],
            )
            .await
            .unwrap();
        assert!(
            tables.len() >= 4,
            "the schema has only {} tables",
            tables.len()
        );
        let mut rows_seen = 0;
        let mut visible_seen = false;
        for table in tables {
            let table: String = table.get(0);
            let rows = raw
                .query(
                    &format!("SELECT t::text FROM \"{}\".\"{table}\" t", schema.name),
                    &[],
                )
                .await
                .unwrap();
            for row in rows {
                let text: String = row.get(0);
                canary.assert_absent(&format!("a row of {table}"), text.as_bytes());
                visible_seen |= text.contains(&canary.visible);
                rows_seen += 1;
            }
        }
        assert!(rows_seen > 0, "no rows were scanned");
        assert!(
            visible_seen,
            "the scan found none of the stored data in the rows"
        );
    });
}
