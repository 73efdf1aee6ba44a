//! The host-restart scenario ([`test_kit::restart`]) through the worker, on the real `codex`
//! binary, fully offline: each host is a new agent with a new pool of workers, whose
//! `WorkerDriver` stands for Codex's registry configuration (the mock model as endpoint, the
//! model key as the configuration's key); the hosted-tools MCP server runs on a fresh port,
//! token and env-var name per host. Host 2 resumes host 1's session on a new worker, host 3's
//! tool revision is refused before the driver (and so any worker) runs, and the canary scan
//! looks for the model key and both tokens in every process's argv (the workers' included),
//! the events, results, error, TRACE log and every file under the test directory.
//!
//! The model key reaches the worker only on its stdin, as a `WireSecret` in the
//! configuration: the host's environment of the namespace, which the worker is spawned in,
//! holds only `PATH` (the CLI's Node wrapper needs it). The MCP tokens cross in each request.
//!
//! The binary comes from `CODEX_BIN`; without it the test prints a visible `SKIPPED` line
//! locally and fails under CI ([`test_kit::real_cli::binary`]).
//!
//! The scenario installs a global TRACE subscriber for its canary scan (the host's log; the
//! `agent-worker` process installs no subscriber and logs nothing), so it also sees the other
//! tests of this binary: none of them knows the canary.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use driver_process::pool::PoolLimits;
use run_service::EnvBinding;
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use test_kit::responses::MockResponses;
use test_kit::restart::{self, Secrets, Setup};
use worker::{WorkerDriver, Workers};
use worker_protocol::{DriverConfig, WireBinding, WireEnv};

/// The model API key: a canary that must reach only Codex's environment, and the worker only
/// on its stdin.
const MODEL_KEY: &str = "model-key-canary-worker-8d41f0c2";

const NAMESPACE: &str = "user:e2e";

/// The host's environment of the shared credential namespace: `PATH` only, no secret.
fn namespace(dir: &Path) -> RuntimeEnv {
    let namespace: CredentialNamespace = NAMESPACE.parse().expect("a namespace");
    RuntimeEnv::builder(dir.join("rt"), namespace, dir.join("workspace"))
        .host_env(HostEnv::from_vars([(
            "PATH",
            std::env::var("PATH").unwrap_or_default(),
        )]))
        .build()
        .expect("the namespace's environment")
}

/// Codex's registry configuration: the binary, the mock model as endpoint, the key.
fn codex(dir: &Path, bin: &Path, model: &MockResponses) -> DriverConfig {
    DriverConfig::Registry {
        env: WireEnv {
            base_dir: dir.join("rt"),
            namespace: NAMESPACE.to_owned(),
            cwd: dir.join("workspace"),
            vars: BTreeMap::new(),
        },
        runtime: "codex".to_owned(),
        binary: Some(bin.to_path_buf()),
        model: Some("mock-model".to_owned()),
        base_url: Some(model.base_url()),
        key: Some(WireBinding::from(&EnvBinding::new(
            "OPENAI_API_KEY",
            MODEL_KEY,
        ))),
        resident: false,
    }
}

/// A host's driver: Codex's configuration through a pool of workers of the host's own, which
/// joins `pools`.
fn driver(
    dir: &Path,
    bin: &Path,
    model: &MockResponses,
    pools: &Mutex<Vec<Arc<Workers>>>,
) -> WorkerDriver {
    let workers = Workers::new(env!("CARGO_BIN_EXE_agent-worker"), PoolLimits::default());
    pools.lock().expect("pools").push(Arc::clone(&workers));
    WorkerDriver::new(workers, Arc::new(namespace(dir)), codex(dir, bin, model))
        .expect("a worker driver")
}

#[test]
fn codex_through_a_worker_resumes_one_thread_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "the restart scenario through the worker against the real codex",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().expect("tempdir");
    let model = MockResponses::start(restart::script()).expect("a mock model");
    let pools = Mutex::new(Vec::new());
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model, &pools)),
            model_requests: &|| model.model_requests(),
            argv_marker: "exec --json",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::Separate,
        })
        .await;
        // Hosts 1 and 2 ran on workers of their own, host 3 on none (refused before its
        // driver ran), and agent.close ended them.
        let namespace: CredentialNamespace = NAMESPACE.parse().expect("a namespace");
        let started: Vec<Option<u32>> = pools
            .lock()
            .expect("pools")
            .iter()
            .map(|pool| {
                assert_eq!(pool.live(), 0, "closed with its host");
                pool.worker_pid(&namespace)
            })
            .collect();
        assert!(
            matches!(started[..], [Some(a), Some(b), None] if a != b),
            "{started:?}"
        );
        // The CLI itself, in a worker, refuses a session its namespace does not hold.
        let unknown = driver(dir.path(), &bin, &model, &pools);
        restart::unknown_session_is_rejected(&unknown, &|| model.model_requests()).await;
        driver_spi::Driver::process_lifecycle(&unknown)
            .expect("a worker driver closes its worker")
            .close_processes()
            .await
            .expect("closed");
        // The model key reached codex's environment through the worker, and so the mock.
        for request in model.model_requests() {
            assert_eq!(request.bearer(), Some(MODEL_KEY));
        }
    });
}
