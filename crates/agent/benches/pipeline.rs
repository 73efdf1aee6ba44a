//! Benchmark: the per-run overhead of the whole Thread pipeline, with driver time and store
//! time measured separately and subtracted, on the memory store and on SQLite.
//!
//! Run with `cargo bench -p agent --bench pipeline`. The fixture has 10 providers with 3
//! services each (one MCP server per provider, 5 of 10 opted into semantic compatibility).
//! Results go to docs/benchmarks.md; targets: pipeline overhead excluding the store under
//! 100 µs at the median.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent::Agent;
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, ProcessLifecycle,
    Request, Response, SessionCodec,
};
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunId, RunServiceCompatibility, RunServiceError,
    RunServiceProvider, ServiceRef, async_trait,
};
use thread_store::{
    FinalizeRequest, Lease, ListPage, ListQuery, Query, StoreError, ThreadRecord, ThreadStore,
};

/// Accumulates wall time spent inside a callee.
#[derive(Debug, Default)]
struct Clock(AtomicU64);

impl Clock {
    async fn time<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let start = Instant::now();
        let out = f.await;
        self.0
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }
    fn take(&self) -> u64 {
        self.0.swap(0, Ordering::Relaxed)
    }
}

struct TimedDriver {
    inner: ReferenceDriver,
    clock: Arc<Clock>,
}

#[async_trait]
impl Driver for TimedDriver {
    fn descriptor(&self) -> Descriptor {
        self.inner.descriptor()
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.inner.validate_config()
    }
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.clock.time(self.inner.run(request, sink)).await
    }
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.inner.session_codec()
    }
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.inner.config_fingerprinter()
    }
    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        self.inner.process_lifecycle()
    }
}

#[derive(Debug)]
struct TimedStore {
    inner: Arc<dyn ThreadStore>,
    clock: Arc<Clock>,
}

#[async_trait]
impl ThreadStore for TimedStore {
    async fn resolve(&self, q: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        self.clock.time(self.inner.resolve(q)).await
    }
    async fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        self.clock.time(self.inner.list(q)).await
    }
    async fn finalize(&self, r: &FinalizeRequest) -> Result<(), StoreError> {
        self.clock.time(self.inner.finalize(r)).await
    }
    async fn acquire_lease(&self, t: &str, o: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.clock.time(self.inner.acquire_lease(t, o, ttl)).await
    }
    async fn renew_lease(&self, l: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.clock.time(self.inner.renew_lease(l, ttl)).await
    }
    async fn release_lease(&self, l: &Lease) -> Result<(), StoreError> {
        self.clock.time(self.inner.release_lease(l)).await
    }
    async fn lease_holder(
        &self,
        target: &str,
    ) -> Result<Option<thread_store::LeaseHolder>, StoreError> {
        self.clock.time(self.inner.lease_holder(target)).await
    }
    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        self.clock.time(self.inner.delete(key)).await
    }
}

/// A provider with 3 services, one of which exposes an MCP server; a new token per attach.
#[derive(Debug)]
struct Provider {
    index: u16,
    opted_in: bool,
    next: AtomicU64,
}

#[async_trait]
impl RunServiceProvider for Provider {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) % 1000;
        let services = (0..3u16).map(|s| {
            // Opted-in providers rotate their port; exact ones must keep it to stay resumable.
            let port = 10_000 + self.index * 1000 + if self.opted_in { n as u16 } else { 0 } + s;
            let url = format!("http://127.0.0.1:{port}/svc{s}");
            let name = format!("P{}_S{s}_TOKEN", self.index);
            let mut svc = ServiceRef::new(format!("svc-{}-{s}", self.index), "svc")
                .with_url(&url)
                .with_port(port)
                .with_secret_env(EnvBinding::new(name.clone(), format!("secret-{n}")));
            if s == 0 {
                svc = svc.with_mcp(
                    McpServer::streamable_http(format!("mcp-{}", self.index), &url)
                        .with_bearer_token_env(name),
                );
            }
            svc
        });
        let attachment = RunAttachment::new(services);
        Ok(if self.opted_in {
            attachment.with_resume_compatibility(RunServiceCompatibility::new(
                format!("com.example.p{}", self.index),
                "b3:sem",
            ))
        } else {
            attachment
        })
    }
    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        Ok(())
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn measure(name: &str, store: Arc<dyn ThreadStore>, runs: usize) {
    let driver_clock = Arc::new(Clock::default());
    let store_clock = Arc::new(Clock::default());
    let driver = TimedDriver {
        inner: ReferenceDriver::with_backend(ReferenceBackend::new())
            .with_persistent_processes(false),
        clock: driver_clock.clone(),
    };
    let mut builder = Agent::builder(Arc::new(driver))
        .store(Arc::new(TimedStore {
            inner: store,
            clock: store_clock.clone(),
        }))
        .model("model-1");
    for index in 0..10 {
        builder = builder.run_service(Arc::new(Provider {
            index,
            opted_in: index % 2 == 0,
            next: AtomicU64::new(0),
        }));
    }
    let agent = builder.build().expect("valid agent");
    // Only the first run on a key starts; the measured runs all resume.
    agent
        .thread("bench")
        .run("warm up")
        .await
        .expect("first run");
    let (mut totals, mut overheads, mut stores, mut drivers) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        driver_clock.take();
        store_clock.take();
        let start = Instant::now();
        black_box(
            agent
                .thread("bench")
                .resume_only()
                .run("hello")
                .await
                .expect("run"),
        );
        let total = start.elapsed().as_nanos() as f64;
        let (d, s) = (driver_clock.take() as f64, store_clock.take() as f64);
        totals.push(total / 1000.0);
        drivers.push(d / 1000.0);
        stores.push(s / 1000.0);
        overheads.push((total - d - s) / 1000.0);
    }
    println!(
        "{name:<8} runs {runs:>5}   pipeline overhead (excl. driver and store) median {:>7.1} µs   store {:>7.1} µs   driver {:>6.1} µs   total {:>7.1} µs",
        median(overheads),
        median(stores),
        median(drivers),
        median(totals)
    );
    agent.close().await;
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        println!("fixture: 10 providers x 3 services (5 opted in), 10 MCP servers; resume-only runs on one Thread");
        let runs = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
        measure("memory", Arc::new(thread_store::memory::MemoryStore::new()), runs).await;
        if std::env::var_os("BENCH_MEMORY_ONLY").is_some() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let sqlite = thread_store::sqlite::SqliteStore::open(thread_store::sqlite::SqliteConfig::new(dir.path().join("bench.db")))
            .await
            .expect("sqlite");
        measure("sqlite", Arc::new(sqlite), 1500).await;
    });
}
