//! End-to-end secret hygiene: Threads run with rotated canary secrets through every path
//! (success, incompatibility, validation failure, lease loss, driver failure); then all
//! tracing output at TRACE, every event, result, error `Display` and `Debug`, the raw SQLite
//! file and (when configured) every PostgreSQL row are scanned for the canaries.
//!
//! A test binary of its own: it installs a global TRACE subscriber, so that every thread
//! (including blocking-pool threads) reports into the captured buffer.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, ThreadError};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use driver_spi::{DriverEvent, FailureKind};
use thread_store::{
    FinalizeRequest, Lease, ListPage, ListQuery, Query, StoreError, ThreadRecord, ThreadStore,
};

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, semantic_fingerprint};

/// Every token the providers mint starts with this; no byte of it may leak anywhere.
const CANARY: &str = "CANARY7f1e";

/// A `tracing` writer that keeps everything in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything a run produced that a host could show or log.
#[derive(Default)]
struct Surfaces(Vec<String>);

impl Surfaces {
    fn outcome(&mut self, outcome: &Result<agent::RunResult, ThreadError>) {
        match outcome {
            Ok(result) => {
                self.0.push(format!("{result:?}"));
                self.0.push(result.output.clone());
                for event in &result.events {
                    self.0.push(serde_json::to_string(event).unwrap());
                }
                // A host joins streamed deltas: a secret split across them must not survive
                // the join either.
                let mut text = String::new();
                let mut arguments = String::new();
                for event in &result.events {
                    match &event.kind {
                        agent::ThreadEventKind::TextDelta { delta } => text.push_str(delta),
                        agent::ThreadEventKind::ToolCallArguments { delta, .. } => {
                            arguments.push_str(delta);
                        }
                        _ => {}
                    }
                }
                self.0.push(text);
                self.0.push(arguments);
            }
            Err(error) => {
                self.0.push(error.to_string());
                self.0.push(format!("{error:?}"));
            }
        }
    }
}

/// A store whose lease renewals report the lease lost, to drive the lease-loss path.
#[derive(Debug)]
struct LosingStore(Arc<dyn ThreadStore>);

#[async_trait::async_trait]
impl ThreadStore for LosingStore {
    async fn resolve(&self, q: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        self.0.resolve(q).await
    }
    async fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        self.0.list(q).await
    }
    async fn finalize(&self, r: &FinalizeRequest) -> Result<(), StoreError> {
        self.0.finalize(r).await
    }
    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        self.0.acquire_lease(target, owner, ttl).await
    }
    async fn renew_lease(&self, lease: &Lease, _ttl: Duration) -> Result<Lease, StoreError> {
        // Another host took over: release ours so that its finalize is fenced out as well.
        self.0.release_lease(lease).await?;
        Err(StoreError::LeaseLost {
            target: compat_fingerprint::ShortDigest::of_str(&lease.target),
        })
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.0.release_lease(lease).await
    }
    async fn lease_holder(
        &self,
        target: &str,
    ) -> Result<Option<thread_store::LeaseHolder>, StoreError> {
        self.0.lease_holder(target).await
    }
    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        self.0.delete(key).await
    }
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn spec(generation: u16) -> ProviderSpec {
    let mut spec = ProviderSpec::semantic(generation);
    spec.token_prefix = format!("{CANARY}-g{generation}-");
    spec
}

fn agent(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    spec: ProviderSpec,
) -> (Agent, Arc<RotatingProvider>) {
    agent_with_ttl(store, backend, spec, agent::DEFAULT_LEASE_TTL)
}

/// [`agent`] with a lease TTL of its own: a short one makes the lease-loss path quick, and
/// only that path gets it (on a loaded machine a run could outlive a short lease).
fn agent_with_ttl(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    spec: ProviderSpec,
    ttl: Duration,
) -> (Agent, Arc<RotatingProvider>) {
    let provider = RotatingProvider::new(spec);
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(store)
        .run_service(provider.clone())
        .lease_ttl(ttl)
        .build()
        .unwrap();
    (agent, provider)
}

/// Runs every path against `store` (opened afresh by `open` per host) and returns what a host
/// could observe.
async fn every_path<F, Fut>(open: F) -> (Surfaces, ReferenceBackend)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn ThreadStore>>,
{
    let mut seen = Surfaces::default();
    let backend = ReferenceBackend::new();

    // Success, then a restart that resumes with rotated secrets.
    let (a1, _) = agent(open().await, &backend, spec(1));
    backend.push_behavior(Behavior::CallTool {
        name: "ask_user".into(),
        arguments: "{}".into(),
        result: "done".into(),
    });
    seen.outcome(&a1.thread("t").run("first").await);
    a1.close().await;
    let (a2, _) = agent(open().await, &backend, spec(2));
    let resumed = a2.thread("t").resume_only().run("second").await;
    assert!(resumed.is_ok(), "{resumed:?}");
    seen.outcome(&resumed);

    // Incompatibility: a semantic change.
    let changed = spec(3).with_fingerprint(semantic_fingerprint("2", "tenant-a"));
    let (a3, _) = agent(open().await, &backend, changed);
    let incompatible = a3.thread("t").resume_only().run("third").await;
    assert!(
        matches!(incompatible, Err(ThreadError::Incompatible { .. })),
        "{incompatible:?}"
    );
    seen.outcome(&incompatible);

    // Validation failure: a whitespace-only compatibility id.
    let mut bad = spec(4);
    bad.compat = Some(("  ".into(), "fp".into()));
    let (a4, _) = agent(open().await, &backend, bad);
    let invalid = a4.thread("t").run("fourth").await;
    assert!(
        matches!(invalid, Err(ThreadError::InvalidAttachment(_))),
        "{invalid:?}"
    );
    seen.outcome(&invalid);

    // Driver failure.
    let (a5, _) = agent(open().await, &backend, spec(5));
    backend.push_behavior(Behavior::Fail(FailureKind::Authentication));
    let failed = a5.thread("t").run("fifth").await;
    assert!(
        matches!(failed, Err(ThreadError::Driver { .. })),
        "{failed:?}"
    );
    seen.outcome(&failed);

    // Lease loss while the driver runs.
    let (a6, _) = agent_with_ttl(
        Arc::new(LosingStore(open().await)),
        &backend,
        spec(6),
        Duration::from_millis(300),
    );
    backend.push_behavior(Behavior::Stall);
    let lost = a6.thread("t").run("sixth").await;
    assert!(
        matches!(lost, Err(ThreadError::LeaseLost { .. })),
        "{lost:?}"
    );
    seen.outcome(&lost);
    backend.release_stalled();

    // A driver that streams the secret back in the shapes real CLIs produce: split across
    // small text deltas, JSON-escaped inside a tool call's arguments (also split), and
    // percent-encoded in text, and in two halves around a tool call. The token contains
    // characters that both escapings change.
    let mut streamed = spec(7);
    streamed.token_prefix = format!("{CANARY} \"q\\/&x=");
    let (a7, provider7) = agent(open().await, &backend, streamed);
    let token = provider7.allocation(0).token;
    let mut events = vec![DriverEvent::RunStarted];
    let text = format!("Your key is {token}, keep it.");
    events.extend(chunks(&text, 5).into_iter().map(DriverEvent::text));
    events.push(DriverEvent::tool_call_started("call-1", "save"));
    let arguments = serde_json::json!({ "key": token }).to_string();
    events.extend(
        chunks(&arguments, 7)
            .into_iter()
            .map(|c| DriverEvent::tool_call_arguments("call-1", c)),
    );
    events.push(DriverEvent::tool_call_result("call-1", "saved", false));
    events.push(DriverEvent::text(format!(
        " (url form: {})",
        percent_encode(&token)
    )));
    // Printed in two halves around a tool call: the joined text deltas hold it whole.
    let half = CANARY.len() + 4;
    events.push(DriverEvent::text(format!(" Again: {}", &token[..half])));
    events.push(DriverEvent::tool_call_started("call-2", "noop"));
    events.push(DriverEvent::tool_call_result("call-2", "done", false));
    events.push(DriverEvent::text(format!("{}.", &token[half..])));
    events.push(DriverEvent::RunFinished);
    backend.push_behavior(Behavior::Events(events));
    let streamed_run = a7.thread("streamed").run("seventh").await;
    assert!(streamed_run.is_ok(), "{streamed_run:?}");
    seen.outcome(&streamed_run);

    for a in [a2, a3, a4, a5, a6, a7] {
        a.close().await;
    }
    (seen, backend)
}

/// The positive control: the canary secrets really reached the driver, so a clean scan means
/// they were kept out of every other surface, not that they never existed.
fn assert_secrets_reached_the_driver(backend: &ReferenceBackend) {
    let reached = backend.requests().iter().any(|r| {
        r.secret_env_names()
            .iter()
            .any(|n| r.expose_secret_env(n).is_some_and(|v| v.contains(CANARY)))
    });
    assert!(
        reached,
        "no canary reached the driver: the scan would prove nothing"
    );
}

fn assert_clean(what: &str, haystack: &[u8]) {
    let needle = CANARY.as_bytes();
    assert!(
        !haystack.windows(needle.len()).any(|w| w == needle),
        "canary found in {what}"
    );
}

/// Runs `f` with every thread's `tracing` output, at TRACE, going to one global buffer, and
/// returns what was captured so far (by any test of this binary: all of it must be clean).
fn traced<T>(f: impl FnOnce() -> T) -> (T, Vec<u8>) {
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    let captured = CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("the only subscriber of this binary");
        captured
    });
    let out = f();
    let bytes = captured.0.lock().unwrap().clone();
    (out, bytes)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn no_canary_reaches_traces_events_errors_or_the_sqlite_file() {
    let file = SqliteFile::new();
    let ((seen, backend), traces) = traced(|| runtime().block_on(every_path(|| file.open())));
    assert_secrets_reached_the_driver(&backend);
    assert!(
        !traces.is_empty(),
        "tracing captured nothing: the scan would be vacuous"
    );
    assert!(String::from_utf8_lossy(&traces).contains("run finished"));
    assert_clean("tracing output", &traces);
    for (i, text) in seen.0.iter().enumerate() {
        assert_clean(&format!("surface {i}"), text.as_bytes());
    }
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", file.path().display());
        if let Ok(bytes) = std::fs::read(&path) {
            assert_clean(&path, &bytes);
        }
    }
    assert!(!std::fs::read(file.path()).unwrap().is_empty());
}

#[test]
fn no_canary_reaches_postgres_rows() {
    let url = std::env::var("THREAD_STORE_POSTGRES_URL")
        .expect("THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test cannot run (run with --skip postgres to skip it visibly)");
    let schema = format!("agent_canary_{}", uuid::Uuid::now_v7().simple());
    let rt = runtime();
    let ((_, backend), traces) = traced(|| {
        rt.block_on(every_path(|| {
            let (url, schema) = (url.clone(), schema.clone());
            async move {
                let config =
                    thread_store::postgres::PostgresConfig::from_url(&url, &schema).unwrap();
                Arc::new(
                    thread_store::postgres::PostgresStore::connect(config)
                        .await
                        .unwrap(),
                ) as Arc<dyn ThreadStore>
            }
        }))
    });
    assert_clean("tracing output", &traces);
    assert_secrets_reached_the_driver(&backend);
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let tables = client
            .query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                &[&schema],
            )
            .await
            .unwrap();
        assert!(!tables.is_empty(), "no tables to scan");
        let mut rows_scanned = 0;
        for table in tables {
            let name: String = table.get(0);
            let sql = format!("SELECT t::text FROM \"{schema}\".\"{name}\" t");
            for row in client.query(&sql, &[]).await.unwrap() {
                let text: String = row.get(0);
                assert_clean(&format!("row of {name}"), text.as_bytes());
                rows_scanned += 1;
            }
        }
        assert!(rows_scanned > 0, "no rows scanned");
        client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await
            .unwrap();
    });
}
