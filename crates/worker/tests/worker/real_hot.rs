//! Hot Threads on the real `codex app-server` through the worker, offline against the test
//! kit's Responses mock: the shared pre-warm scenario ([`test_kit::prewarm`]: a pre-warmed
//! process serves the first run and the resume, an incompatible change is refused before any
//! process starts, a rotation recycles it) and the shared steering scenario
//! ([`test_kit::steer`]: a follow-up goes into the running turn; one process per turn refuses
//! it, typed), each with a `WorkerDriver` where the in-process tests have the driver.
//! Skipped, visibly, without `CODEX_BIN` (never under CI).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_spi::Driver;
use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::resident::{self, ResidentSetup};
use test_kit::responses::MockResponses;
use test_kit::steer::{SteerSetup, run_steer_scenario};
use test_kit::{Reply, Script};
use worker::{WorkerDriver, Workers};
use worker_protocol::DriverConfig;

use crate::support::{namespace, wire_env, workers};

const MODEL_KEY: &str = "sk-worker-codex-hot-canary-41c9";

/// The namespace's environment on `base`, with the host's allow-list (PATH for the CLI's
/// Node wrapper), as the worker builds it.
fn env(base: &Path) -> RuntimeEnv {
    RuntimeEnv::builder(base.join("env"), namespace(), base)
        .host_env(HostEnv::capture())
        .runtimes([&driver_codex::RUNTIME.descriptor])
        .build()
        .expect("the namespace's environment")
}

/// A worker driver of the real Codex over `model`, resident or one process per turn.
fn codex(
    base: &Path,
    binary: &Path,
    model: &MockResponses,
    resident: bool,
    workers: &Arc<Workers>,
) -> Arc<WorkerDriver> {
    let config: DriverConfig = serde_json::from_value(json!({
        "kind": "registry",
        "env": wire_env(base),
        "runtime": "codex",
        "binary": binary,
        "base_url": model.base_url(),
        "key": {"name": "OPENAI_API_KEY", "value": MODEL_KEY},
        "resident": resident,
    }))
    .expect("a codex configuration");
    let driver = WorkerDriver::new(Arc::clone(workers), Arc::new(env(base)), config);
    Arc::new(driver.expect("a worker driver"))
}

/// Where the namespace's Codex keeps its state (`CODEX_HOME`), which marks its processes.
fn codex_home(base: &Path) -> PathBuf {
    env(base)
        .state_dir(&driver_codex::RUNTIME.descriptor)
        .expect("codex's state directory")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_prewarms_through_the_worker() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "codex pre-warm through the worker")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let model = MockResponses::start(test_kit::prewarm::prewarm_script()).expect("a mock model");
    let workers = workers();
    let driver = codex(dir.path(), &binary, &model, true, &workers);
    assert!(driver.descriptor().capabilities.prewarm);
    let home = codex_home(dir.path());
    let live = || -> BTreeSet<u32> {
        resident::processes_with_env(
            "app-server",
            driver_codex::RUNTIME.descriptor.state_var,
            &home,
        )
    };
    test_kit::prewarm::run_prewarm_scenario(ResidentSetup {
        dir: dir.path(),
        driver: driver.clone(),
        live_pids: &live,
        // The pool is the worker's: no counts cross.
        pool_counts: &|| None,
        model_requests: &|| model.model_requests(),
    })
    .await;
    workers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_takes_a_follow_up_through_the_worker() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "codex steering through the worker")
    else {
        return;
    };
    let (dir, workspace) = test_kit::approvals::workspace();
    let model = MockResponses::start(Script::new()).expect("a mock model");
    let workers = workers();
    let resident = codex(dir.path(), &binary, &model, true, &workers);
    let per_turn = codex(dir.path(), &binary, &model, false, &workers);
    assert!(resident.descriptor().capabilities.steer);
    assert!(!per_turn.descriptor().capabilities.steer);
    run_steer_scenario(&SteerSetup {
        workspace: &workspace,
        resident,
        per_turn,
        command_call: &|cmd| Reply::codex_command(cmd),
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
    })
    .await;
    workers.close().await;
}
