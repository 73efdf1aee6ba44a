//! The real Codex CLI through the worker, against the test kit's mock model: a turn, the
//! worker killed, and the session resumed on a new worker (the CLI's own sessions outlive
//! its process). Skipped, visibly, without `CODEX_BIN` (never under CI).

use std::sync::Arc;

use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::{Reply, Script};
use worker::WorkerDriver;
use worker_protocol::DriverConfig;

use crate::support::{Watch, namespace, turn_kill_resume, wire_env, workers};

const MODEL_KEY: &str = "sk-worker-codex-canary-7d2f";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_resumes_on_a_new_worker_after_the_worker_is_killed() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "codex through the worker") else {
        return;
    };
    let script = Script::new()
        .then(Reply::text("first answer"))
        .then(Reply::text("second answer"));
    let model = test_kit::responses::MockResponses::start(script).expect("a mock model");
    let base = tempfile::tempdir().expect("tempdir");
    let config: DriverConfig = serde_json::from_value(json!({
        "kind": "registry",
        "env": wire_env(base.path()),
        "runtime": "codex",
        "binary": binary,
        "base_url": model.base_url(),
        "key": {"name": "OPENAI_API_KEY", "value": MODEL_KEY},
    }))
    .expect("a codex configuration");
    // The host's allow-list (PATH for the CLI's Node wrapper) reaches the worker, and from it
    // the CLI.
    let env = RuntimeEnv::builder(base.path().join("env"), namespace(), base.path())
        .host_env(HostEnv::capture())
        .build()
        .expect("the namespace's environment");
    let workers = workers();
    let driver =
        WorkerDriver::new(Arc::clone(&workers), Arc::new(env), config).expect("a worker driver");

    let sink = Arc::new(Watch::default());
    let (first, second) =
        turn_kill_resume(&driver, &workers, sink.clone(), ["hello", "and again"]).await;
    assert!(first.output.contains("first answer"), "{}", first.output);
    assert!(second.output.contains("second answer"), "{}", second.output);
    let requests = model.requests();
    let last = requests.last().expect("requests");
    assert!(
        last.body().to_string().contains("first answer"),
        "the resumed request carries the first turn"
    );
    let events = format!("{:?}", sink.events());
    assert!(!events.contains(MODEL_KEY), "no secret in the events");
}
