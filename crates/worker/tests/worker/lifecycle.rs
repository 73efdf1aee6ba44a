//! A worker's lifecycle on the host's pool: it ends when idle past the pool's timeout and when
//! its `Agent` closes, and a host caps its workers (an idle one is evicted for a new namespace;
//! with every worker busy, a run of another namespace fails as a limit, not by spawning).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use driver_process::pool::PoolLimits;
use driver_spi::{Driver, DriverError, DriverEvent, FailureKind, Request};
use run_service::RunId;
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use serde_json::json;
use worker::{WorkerDriver, Workers};

use crate::support::{Watch, profile};

/// `namespace`'s driver of the reference runtime (with `script`) on `workers`.
fn driver(base: &Path, namespace: &str, script: &[&str], workers: &Arc<Workers>) -> WorkerDriver {
    let ns: CredentialNamespace = namespace.parse().expect("a namespace");
    let env = RuntimeEnv::builder(base.join("env"), ns, base)
        .host_env(HostEnv::empty())
        .build()
        .expect("an environment");
    let config = serde_json::from_value(json!({
        "kind": "reference",
        "env": {"base_dir": base.join("env"), "namespace": namespace, "cwd": base},
        "script": script,
    }))
    .expect("a configuration");
    WorkerDriver::new(Arc::clone(workers), Arc::new(env), config).expect("a driver")
}

fn pool(limits: PoolLimits) -> Arc<Workers> {
    Workers::new(env!("CARGO_BIN_EXE_agent-worker"), limits)
}

async fn turn(driver: &WorkerDriver, run: &str) -> Result<driver_spi::Response, DriverError> {
    let request = Request::new(RunId::new(run), "hello", profile());
    driver.run(request, Arc::new(Watch::default())).await
}

fn pid_of(workers: &Workers, namespace: &str) -> u32 {
    workers
        .worker_pid(&namespace.parse().expect("a namespace"))
        .expect("a worker")
}

/// Waits (up to 10 s) until process `pid` is gone.
async fn gone(pid: u32) -> bool {
    for _ in 0..1000 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_ends_when_idle_past_the_timeout() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = pool(PoolLimits::default().with_idle_timeout(Duration::from_millis(300)));
    let alice = driver(base.path(), "user:alice", &[], &workers);
    turn(&alice, "r1").await.expect("a turn");
    let pid = pid_of(&workers, "user:alice");
    assert!(gone(pid).await, "the idle worker ended");
    assert_eq!(workers.live(), 0);
    // The next run starts a new one, lazily.
    turn(&alice, "r2").await.expect("a turn on a new worker");
    assert_ne!(pid_of(&workers, "user:alice"), pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_agent_ends_its_workers() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = pool(PoolLimits::default());
    let alice = driver(base.path(), "user:alice", &[], &workers);
    let agent = agent::Agent::builder(Arc::new(alice))
        .store(Arc::new(thread_store::memory::MemoryStore::new()))
        .build()
        .expect("an agent");
    agent.thread("t").run("hello").await.expect("a turn");
    let pid = pid_of(&workers, "user:alice");
    assert_eq!(workers.live(), 1);
    agent.close().await;
    assert!(gone(pid).await, "closing the agent ended its worker");
    assert_eq!(workers.live(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_caps_its_workers() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = pool(PoolLimits::default().with_max_live(1));
    // An idle worker is evicted for another namespace's.
    let alice = driver(base.path(), "user:alice", &[], &workers);
    turn(&alice, "a1").await.expect("alice's turn");
    let alice_pid = pid_of(&workers, "user:alice");
    let bob = driver(base.path(), "user:bob", &["stall"], &workers);
    let sink = Arc::new(Watch::default());
    let stalled = tokio::spawn({
        let sink = Arc::clone(&sink);
        async move {
            let request = Request::new(RunId::new("b1"), "wait", profile());
            bob.run(request, sink).await
        }
    });
    sink.until(|e| *e == DriverEvent::RunStarted).await;
    assert!(gone(alice_pid).await, "alice's idle worker made room");
    assert_eq!(workers.live(), 1);
    // With bob's worker busy, alice's next run meets the cap: a limit, no third process.
    let capped = turn(&alice, "a2").await;
    assert!(
        matches!(&capped, Err(DriverError::Failed(f)) if f.kind == FailureKind::Limit),
        "{capped:?}"
    );
    assert_eq!(workers.live(), 1);
    stalled.abort();
}
