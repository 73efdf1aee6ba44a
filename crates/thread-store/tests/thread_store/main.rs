//! Integration tests of thread-store beyond the conformance kit: several OS processes on one
//! SQLite file, a killed lease holder, concurrent PostgreSQL connections, damaged data, and
//! a canary scan proving secrets never reach storage.
//!
//! Tests that need PostgreSQL have `postgres` in their name and fail, saying so, when
//! `THREAD_STORE_POSTGRES_URL` is unset. Each creates its own schema and drops it.
#![allow(clippy::unwrap_used, reason = "tests")]

mod bad_data;
mod canary;
mod fuzz;
mod group_commit;
mod ownership;
mod postgres_race;
mod postgres_tls;
mod processes;
mod roundtrip;
mod sqlite_file;

use std::collections::BTreeMap;
use std::sync::Arc;

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};
use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::sqlite::{SqliteConfig, SqliteStore, Synchronous};
use thread_store::{Clock, Compatibility, RecordId, SessionState, ThreadRecord, Timestamp};

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

/// A record for `key` whose session data holds `counter`.
pub(crate) fn record(key: &str, counter: u64) -> ThreadRecord {
    let mut components = Breakdown::new();
    components.insert_or_replace(
        ComponentName::new("model").unwrap(),
        Fingerprint::from_bytes([1; 32]),
    );
    let mut data = BTreeMap::new();
    data.insert("counter".to_owned(), counter.to_string());
    ThreadRecord::new(
        key,
        "reference",
        "agent:test",
        Compatibility {
            fingerprint: Fingerprint::from_bytes([2; 32]),
            scheme_version: 1,
            components,
        },
        "reference-v1",
        SessionState {
            resume_id: format!("resume-{counter}"),
            display_id: None,
            data,
        },
        Timestamp::now(),
    )
}

/// The counter a [`record`] carries.
pub(crate) fn counter_of(record: &ThreadRecord) -> u64 {
    record.state.data["counter"].parse().unwrap()
}

/// Opens at `synchronous=FULL`, where lease writes commit without a sync of their own and
/// finalizes are group-committed: the configuration whose fencing these tests must prove.
pub(crate) async fn open_sqlite(path: &std::path::Path, clock: Arc<dyn Clock>) -> SqliteStore {
    SqliteStore::open(
        SqliteConfig::new(path)
            .clock(clock)
            .synchronous(Synchronous::Full),
    )
    .await
    .unwrap()
}

/// The PostgreSQL URL; a PostgreSQL test without one fails here with a clear message.
pub(crate) fn postgres_url() -> String {
    std::env::var("THREAD_STORE_POSTGRES_URL").expect(
        "THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test needs a server \
         (e.g. postgresql://postgres@127.0.0.1:5432/test)",
    )
}

/// A uniquely named PostgreSQL schema, dropped when the guard drops (even after a failure).
pub(crate) struct PgSchema {
    pub(crate) url: String,
    pub(crate) name: String,
}

impl PgSchema {
    pub(crate) fn new(purpose: &str) -> Self {
        let id = RecordId::generate().as_str().replace('-', "_");
        Self {
            url: postgres_url(),
            name: format!("ts_{purpose}_{id}"),
        }
    }

    pub(crate) fn config(&self) -> PostgresConfig {
        PostgresConfig::from_url(&self.url, &self.name).unwrap()
    }

    pub(crate) async fn store(&self) -> PostgresStore {
        PostgresStore::connect(self.config()).await.unwrap()
    }

    /// A plain client for inspecting or damaging the schema's tables.
    pub(crate) async fn raw_client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Runs on its own thread and runtime: Drop may run inside another runtime.
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a Tokio runtime");
            rt.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                    .await
            })
        })
        .join();
        if !matches!(done, Ok(Ok(()))) && !std::thread::panicking() {
            panic!("could not drop the test schema {}", self.name);
        }
    }
}
