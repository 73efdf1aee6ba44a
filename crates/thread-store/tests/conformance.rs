//! Runs the thread-store conformance kit against each adapter: `memory`, `sqlite`, `postgres`.
//!
//! `postgres` needs `THREAD_STORE_POSTGRES_URL` and fails, saying so, when it is unset. It
//! works in its own freshly named schema and drops it at the end.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use thread_store::conformance::{self, Factory, Harness, TimeControl};
use thread_store::memory::MemoryStore;
use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::sqlite::{Execution, SqliteConfig, SqliteStore};
use thread_store::{ManualClock, StoreError};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

struct Memory;

#[async_trait::async_trait]
impl Factory for Memory {
    async fn create(&self) -> Result<Harness, StoreError> {
        let clock = ManualClock::starting_now();
        let store = MemoryStore::with_clock(Arc::new(clock.clone()));
        Ok(Harness::manual(Arc::new(store), clock))
    }
}

#[test]
fn memory() {
    let report = runtime().block_on(conformance::run(&Memory));
    println!("{report}");
    report.assert_passed();
}

struct Sqlite {
    dir: tempfile::TempDir,
    next: AtomicUsize,
    execution: Execution,
    /// The file `create` opened last, for `reopen`.
    last: Mutex<Option<PathBuf>>,
}

#[async_trait::async_trait]
impl Factory for Sqlite {
    async fn create(&self) -> Result<Harness, StoreError> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let clock = ManualClock::starting_now();
        let path = self.dir.path().join(format!("store-{n}.sqlite3"));
        *self.last.lock().unwrap() = Some(path.clone());
        let config = SqliteConfig::new(path)
            .clock(Arc::new(clock.clone()))
            .execution(self.execution);
        let store = SqliteStore::open(config).await?;
        Ok(Harness::manual(Arc::new(store), clock))
    }

    /// Another connection to the same file, as another process opens it.
    async fn reopen(&self, harness: &Harness) -> Result<Harness, StoreError> {
        let path = self.last.lock().unwrap().clone().unwrap();
        let TimeControl::Manual(clock) = &harness.time else {
            unreachable!("the SQLite factory's harnesses run on a manual clock");
        };
        let config = SqliteConfig::new(path)
            .clock(Arc::new(clock.clone()))
            .execution(self.execution);
        let store = SqliteStore::open(config).await?;
        Ok(Harness::manual(Arc::new(store), clock.clone()))
    }
}

/// The SQLite adapter runs statements on the blocking pool, or in place on a multi-thread
/// runtime when told to: the kit runs on every combination.
#[test]
fn sqlite() {
    let current_thread = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a Tokio runtime")
    };
    let cases = [
        ("multi-thread, in place", runtime(), Execution::InPlace),
        (
            "multi-thread, blocking pool",
            runtime(),
            Execution::BlockingPool,
        ),
        (
            "current-thread, in place (falls back to the pool)",
            current_thread(),
            Execution::InPlace,
        ),
    ];
    for (case, rt, execution) in cases {
        let factory = Sqlite {
            dir: tempfile::tempdir().unwrap(),
            next: AtomicUsize::new(0),
            execution,
            last: Mutex::new(None),
        };
        let report = rt.block_on(conformance::run(&factory));
        println!("{case}:\n{report}");
        report.assert_passed();
    }
}

struct Postgres {
    url: String,
    schema: String,
}

#[async_trait::async_trait]
impl Factory for Postgres {
    async fn create(&self) -> Result<Harness, StoreError> {
        let config = PostgresConfig::from_url(&self.url, &self.schema)?;
        let store = PostgresStore::connect(config).await?;
        Ok(Harness::real_time(Arc::new(store)))
    }

    /// Another pool of connections to the same schema, as another host opens it.
    async fn reopen(&self, _harness: &Harness) -> Result<Harness, StoreError> {
        self.create().await
    }
}

#[test]
fn postgres() {
    let url = std::env::var("THREAD_STORE_POSTGRES_URL").expect(
        "THREAD_STORE_POSTGRES_URL is not set: the PostgreSQL conformance run needs a server \
         (e.g. postgresql://postgres@127.0.0.1:5432/test); `cargo xtask conformance` skips it \
         visibly when the URL is absent",
    );
    let schema = format!(
        "ts_conf_{}",
        thread_store::RecordId::generate()
            .as_str()
            .replace('-', "_")
    );
    let factory = Postgres {
        url: url.clone(),
        schema: schema.clone(),
    };
    let rt = runtime();
    let report = rt.block_on(conformance::run(&factory));
    rt.block_on(drop_schema(&url, &schema));
    println!("{report}");
    report.assert_passed();
}

async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap();
    drop(client);
    let _ = driver.await;
}
