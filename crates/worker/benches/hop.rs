//! Benchmark: the cost of the worker hop per turn, and a load of many namespaces at once.
//!
//! - **Reference rows.** The same reference-runtime configuration ([`DriverConfig::Reference`],
//!   no script) runs N text turns in process (the driver [`worker::build`] makes, as the
//!   worker itself would) and N text turns through a [`WorkerDriver`] over the real
//!   `agent-worker` binary, warm: the first turn of each mode (which, for the worker, spawns
//!   it and configures the driver) is excluded; the median per-turn latency is reported.
//! - **Resident Codex rows.** The same registry configuration of the real Codex CLI in
//!   resident mode (`"resident": true`: one `codex app-server` per conversation) against the
//!   test kit's loopback Responses mock, in process and through a worker: one Thread per
//!   mode, each turn continuing the last one's checkpoint, the two modes' turns interleaved
//!   in the order A B B A … (so load on the machine, and whatever one mode's CLI does after
//!   its turn, falls on both alike), the first turn excluded. Without
//!   `CODEX_BIN` these rows are skipped with a `SKIPPED` line on stderr.
//! - **Load row.** 16 namespaces, one worker each on one [`Workers`] pool, each with 4
//!   Threads (4 sessions of the reference driver) running at once, several turns each: how
//!   many runs failed, the wall time, and the resident set (`VmRSS`) of each worker while
//!   they are still live after the load.
//!
//! Run with `cargo bench -p worker --bench hop` (a table) or with `-- --json` (one JSON row
//! per mode); `HOP_VERBOSE=1` also prints every Codex turn's time on stderr. The bench locates the worker through `CARGO_BIN_EXE_agent-worker`, and makes
//! its namespaces in a temporary directory (`TMPDIR`). Results go to docs/benchmarks.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use compat_fingerprint::{Fingerprint, Kind};
use driver_process::pool::PoolLimits;
use driver_spi::{CollectingSink, Driver, ProfilePayload, Request, SessionContext, SessionState};
use run_service::RunId;
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use serde_json::{Value, json};
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};
use worker::{WorkerDriver, Workers};
use worker_protocol::DriverConfig;

/// Reference turns per mode (after the excluded first one).
const TURNS: usize = 200;
/// Codex turns per mode (after the excluded first one): a real turn is far slower.
const CODEX_TURNS: usize = 30;
const NAMESPACE: &str = "user:bench";
/// The load: namespaces, Threads per namespace, turns per Thread.
const LOAD_NAMESPACES: usize = 16;
const LOAD_THREADS: usize = 4;
const LOAD_TURNS: usize = 10;
/// The model key the Codex configuration hands the CLI (the mock accepts any).
const MODEL_KEY: &str = "sk-hop-bench-mock";

fn profile() -> ProfilePayload {
    const K: Kind = Kind::new("worker hop bench 2026-12-05 profile v1");
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    )
}

fn wire_env(base: &Path, namespace: &str) -> Value {
    json!({"base_dir": base.join("env"), "namespace": namespace, "cwd": base})
}

fn config(base: &Path, namespace: &str) -> DriverConfig {
    serde_json::from_value(json!({
        "kind": "reference",
        "env": wire_env(base, namespace),
        "script": [],
        "prompt_tools": false,
    }))
    .expect("a reference configuration")
}

/// The registry configuration of Codex in resident mode against `model`.
fn codex_config(base: &Path, binary: &Path, model: &MockResponses) -> DriverConfig {
    serde_json::from_value(json!({
        "kind": "registry",
        "env": wire_env(base, NAMESPACE),
        "runtime": "codex",
        "binary": binary,
        "base_url": model.base_url(),
        "key": {"name": "OPENAI_API_KEY", "value": MODEL_KEY},
        "resident": true,
    }))
    .expect("a codex configuration")
}

/// The runtime environment of `namespace` under `base`, as a host makes it for a worker.
fn runtime_env(base: &Path, namespace: &str, host: HostEnv) -> RuntimeEnv {
    RuntimeEnv::builder(
        base.join("env"),
        namespace.parse().expect("a namespace"),
        base,
    )
    .host_env(host)
    .build()
    .expect("the namespace's environment")
}

/// Per-turn latencies in microseconds of `turns` text turns on `driver`, the first excluded.
async fn measure(driver: &dyn Driver, mode: &str, turns: usize) -> Vec<f64> {
    let mut samples = Vec::with_capacity(turns);
    for i in 0..=turns {
        let request = Request::new(RunId::new(format!("{mode}-{i}")), "hello", profile());
        let start = Instant::now();
        let response = driver
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .expect("a reference turn");
        let elapsed = start.elapsed().as_secs_f64() * 1e6;
        assert!(response.is_clean(), "{response:?}");
        if i > 0 {
            samples.push(elapsed);
        }
    }
    samples.sort_by(f64::total_cmp);
    samples
}

/// A Thread: each turn continues the last one's checkpoint.
#[derive(Default)]
struct Thread {
    state: Option<SessionState>,
    samples: Vec<f64>,
}

impl Thread {
    /// Runs turn `i` on `driver`, timing it unless it is the first.
    async fn turn(&mut self, driver: &dyn Driver, mode: &str, i: usize) {
        let mut request = Request::new(RunId::new(format!("{mode}-{i}")), "Say OK.", profile());
        if let Some(state) = &self.state {
            request = request.with_session(SessionContext::continue_only(state.clone()));
        }
        let start = Instant::now();
        let response = driver
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .unwrap_or_else(|e| panic!("{mode}: codex turn {i} failed: {e:?}"));
        let elapsed = start.elapsed().as_secs_f64() * 1e6;
        assert!(response.is_clean(), "{mode}: codex turn {i}: {response:?}");
        self.state = Some(
            response
                .persistable_checkpoint()
                .expect("a codex turn leaves a checkpoint")
                .clone(),
        );
        if i > 0 {
            self.samples.push(elapsed);
        }
    }
}

struct Row {
    mode: &'static str,
    driver: &'static str,
    samples: Vec<f64>,
}

impl Row {
    fn new(mode: &'static str, driver: &'static str, mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        Self {
            mode,
            driver,
            samples,
        }
    }

    fn pct(&self, p: f64) -> f64 {
        let last = self.samples.len() - 1;
        self.samples[(last as f64 * p) as usize]
    }

    fn json(&self) -> Value {
        json!({
            "mode": self.mode,
            "driver": self.driver,
            "turn_median_us": (self.pct(0.5) * 10.0).round() / 10.0,
            "turns": self.samples.len(),
        })
    }
}

/// The reference driver's turns, in process then through a worker.
async fn reference_pair(base: &Path) -> [Row; 2] {
    let in_process =
        worker::build(config(base, NAMESPACE), HostEnv::empty()).expect("the in-process driver");
    let local = measure(in_process.as_ref(), "in-process", TURNS).await;

    let workers = Workers::new(env!("CARGO_BIN_EXE_agent-worker"), PoolLimits::default());
    let env = runtime_env(base, NAMESPACE, HostEnv::empty());
    let driver = WorkerDriver::new(Arc::clone(&workers), Arc::new(env), config(base, NAMESPACE))
        .expect("a worker driver");
    let hopped = measure(&driver, "worker", TURNS).await;
    workers.close().await;
    [
        Row::new("in-process", "reference", local),
        Row::new("worker", "reference", hopped),
    ]
}

/// Codex in resident mode, in process and through a worker, turns interleaved.
async fn codex_pair(binary: &Path) -> [Row; 2] {
    let model =
        MockResponses::start(Script::new().with_default(Reply::text("OK"))).expect("a mock model");
    let local_base = tempfile::tempdir().expect("temp dir");
    let worker_base = tempfile::tempdir().expect("temp dir");
    // The host's allow-list (PATH, for the CLI's Node wrapper) reaches the CLI, in process
    // directly, through a worker by the worker's own environment.
    let in_process = worker::build(
        codex_config(local_base.path(), binary, &model),
        HostEnv::capture(),
    )
    .expect("the in-process codex driver");
    assert!(
        in_process.descriptor().capabilities.persistent_processes,
        "the configuration asks for resident processes"
    );
    let workers = Workers::new(env!("CARGO_BIN_EXE_agent-worker"), PoolLimits::default());
    let env = runtime_env(worker_base.path(), NAMESPACE, HostEnv::capture());
    let hopped = WorkerDriver::new(
        Arc::clone(&workers),
        Arc::new(env),
        codex_config(worker_base.path(), binary, &model),
    )
    .expect("a worker driver");

    let (mut local, mut remote) = (Thread::default(), Thread::default());
    for i in 0..=CODEX_TURNS {
        // In the order A B B A …, so neither mode always follows the other's turn.
        if i % 2 == 0 {
            local.turn(in_process.as_ref(), "in-process", i).await;
            remote.turn(&hopped, "worker", i).await;
        } else {
            remote.turn(&hopped, "worker", i).await;
            local.turn(in_process.as_ref(), "in-process", i).await;
        }
    }
    if std::env::var_os("HOP_VERBOSE").is_some() {
        eprintln!("codex-resident in-process turns µs: {:.0?}", local.samples);
        eprintln!("codex-resident worker turns µs:     {:.0?}", remote.samples);
    }
    if let Some(lifecycle) = in_process.process_lifecycle() {
        lifecycle.close_processes().await.expect("close");
    }
    workers.close().await;
    [
        Row::new("in-process", "codex-resident", local.samples),
        Row::new("worker", "codex-resident", remote.samples),
    ]
}

/// What the load measured.
struct Load {
    runs: usize,
    failures: usize,
    /// The resident set of each worker, KiB, sorted.
    rss_kib: Vec<u64>,
    wall_ms: f64,
}

impl Load {
    fn json(&self) -> Value {
        json!({
            "mode": "load",
            "driver": "reference",
            "namespaces": LOAD_NAMESPACES,
            "threads_per_namespace": LOAD_THREADS,
            "turns_per_thread": LOAD_TURNS,
            "runs": self.runs,
            "failures": self.failures,
            "worker_rss_kib_median": self.rss_kib.get(self.rss_kib.len() / 2),
            "worker_rss_kib_max": self.rss_kib.last(),
            "total_rss_kib": self.rss_kib.iter().sum::<u64>(),
            "wall_ms": (self.wall_ms * 10.0).round() / 10.0,
        })
    }
}

/// One Thread of the load: `LOAD_TURNS` turns, each continuing the last; the number of
/// failed runs (an error, a response that is not clean, or one that did not continue the
/// Thread).
async fn load_thread(driver: Arc<WorkerDriver>, name: String) -> usize {
    let mut state: Option<SessionState> = None;
    let mut failures = 0;
    for i in 0..LOAD_TURNS {
        let mut request = Request::new(RunId::new(format!("{name}-{i}")), "hello", profile());
        if let Some(state) = &state {
            request = request.with_session(SessionContext::continue_only(state.clone()));
        }
        // The reference runtime numbers a session's turns: a clean turn that did not continue
        // its Thread is a failure too.
        let due = format!("reference turn {}:", i + 1);
        match driver.run(request, Arc::new(CollectingSink::new())).await {
            Ok(response) if response.is_clean() && response.output.starts_with(&due) => {
                state = response.persistable_checkpoint().cloned();
            }
            _ => failures += 1,
        }
    }
    failures
}

/// 16 namespaces × 4 Threads at once, each namespace through its own worker.
async fn load(base: &Path) -> Load {
    let limits = PoolLimits::default()
        .with_max_live(LOAD_NAMESPACES)
        .with_max_tasks_per_process(LOAD_THREADS);
    let workers = Workers::new(env!("CARGO_BIN_EXE_agent-worker"), limits);
    let mut namespaces = Vec::with_capacity(LOAD_NAMESPACES);
    let mut drivers = Vec::with_capacity(LOAD_NAMESPACES);
    for n in 0..LOAD_NAMESPACES {
        let namespace = format!("user:load-{n:02}");
        let base = base.join(format!("load-{n:02}"));
        std::fs::create_dir_all(&base).expect("the namespace's directory");
        let env = runtime_env(&base, &namespace, HostEnv::empty());
        let driver = WorkerDriver::new(
            Arc::clone(&workers),
            Arc::new(env),
            config(&base, &namespace),
        )
        .expect("a worker driver");
        namespaces.push(
            namespace
                .parse::<CredentialNamespace>()
                .expect("a namespace"),
        );
        drivers.push(Arc::new(driver));
    }
    let start = Instant::now();
    let mut threads = tokio::task::JoinSet::new();
    for (n, driver) in drivers.iter().enumerate() {
        for t in 0..LOAD_THREADS {
            threads.spawn(load_thread(Arc::clone(driver), format!("load-{n:02}-{t}")));
        }
    }
    let mut failures = 0;
    while let Some(done) = threads.join_next().await {
        // A Thread whose task panicked lost all its runs.
        failures += done.unwrap_or(LOAD_TURNS);
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    // The workers are still live (idle in the pool) after the load.
    assert_eq!(
        workers.live(),
        LOAD_NAMESPACES,
        "one live worker per namespace"
    );
    let mut rss_kib: Vec<u64> = namespaces
        .iter()
        .map(|namespace| {
            let pid = workers
                .worker_pid(namespace)
                .expect("the namespace's worker ran");
            worker_rss_kib(pid)
        })
        .collect();
    rss_kib.sort_unstable();
    workers.close().await;
    Load {
        runs: LOAD_NAMESPACES * LOAD_THREADS * LOAD_TURNS,
        failures,
        rss_kib,
        wall_ms,
    }
}

/// `VmRSS` of the `agent-worker` process at or below `pid` (the direct launcher spawns the
/// worker itself; a launcher with a wrapper has it below).
fn worker_rss_kib(pid: u32) -> u64 {
    let worker = find_worker(pid).unwrap_or_else(|| panic!("no agent-worker at or below {pid}"));
    let status = std::fs::read_to_string(format!("/proc/{worker}/status")).expect("its status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

fn find_worker(pid: u32) -> Option<u32> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    if comm.trim() == "agent-worker" {
        return Some(pid);
    }
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| {
            children
                .split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .find_map(find_worker)
}

/// The Codex binary, or why its rows are skipped.
fn codex_binary() -> Result<PathBuf, String> {
    match std::env::var_os("CODEX_BIN").filter(|v| !v.is_empty()) {
        Some(path) if Path::new(&path).exists() => Ok(PathBuf::from(path)),
        Some(path) => Err(format!(
            "CODEX_BIN={} does not exist",
            Path::new(&path).display()
        )),
        None => Err("CODEX_BIN is not set".to_owned()),
    }
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let base = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let binary = codex_binary();
    if let Err(why) = &binary {
        eprintln!("hop: codex-resident rows SKIPPED: {why}");
    }
    let (reference, codex, load) = runtime.block_on(async {
        let reference = reference_pair(base.path()).await;
        let codex = match &binary {
            Ok(binary) => Some(codex_pair(binary).await),
            Err(_) => None,
        };
        let load = load(base.path()).await;
        (reference, codex, load)
    });
    if json {
        for row in reference.iter().chain(codex.iter().flatten()) {
            println!("{}", row.json());
        }
        println!("{}", load.json());
        return;
    }
    println!(
        "warm turns per mode (first turn excluded): reference {TURNS}, codex-resident {CODEX_TURNS}"
    );
    println!(
        "{:<12} {:<16} {:>12} {:>12} {:>12}",
        "mode", "driver", "median µs", "p90 µs", "p99 µs"
    );
    for pair in std::iter::once(&reference).chain(codex.iter()) {
        for row in pair {
            println!(
                "{:<12} {:<16} {:>12.1} {:>12.1} {:>12.1}",
                row.mode,
                row.driver,
                row.pct(0.5),
                row.pct(0.9),
                row.pct(0.99)
            );
        }
        println!(
            "hop on {} (worker − in-process, medians): {:.1} µs per turn ({:+.1}%)",
            pair[0].driver,
            pair[1].pct(0.5) - pair[0].pct(0.5),
            (pair[1].pct(0.5) / pair[0].pct(0.5) - 1.0) * 100.0
        );
    }
    println!("load: {}", load.json());
}
