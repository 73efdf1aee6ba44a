//! End to end against the real `codex` binary, fully offline: a loopback mock of the OpenAI
//! Responses API stands in for the model, and the workspace's hosted-tools provider serves a
//! real bearer-checking MCP tool on a fresh port with a fresh token and env-var name per host
//! (the shared scenario: [`test_kit::restart`]).
//!
//! The binary comes from `CODEX_BIN` (`.ci/run` installs the pinned `@openai/codex@0.169.0`
//! and exports it). Without it the test prints a visible `SKIPPED` line locally; under CI
//! (`CI` set) a missing binary fails the test, so CI never skips it
//! ([`test_kit::real_cli::binary`]).
//!
//! The scenario installs a global TRACE subscriber for its canary scan, so it also sees the
//! other tests of this binary: none of them knows the canary.

use std::path::Path;
use std::sync::Arc;

use driver_cli::ProcessMode;
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use driver_process::command::Limits;
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::responses::MockResponses;
use test_kit::restart::{self, Secrets, Setup};

/// The model API key: a canary that must reach only Codex's environment.
pub(crate) const MODEL_KEY: &str = "model-key-canary-5b0c9e2f7a1d";

/// The shared credential namespace of every host, with the model key injected.
fn namespace(dir: &Path) -> RuntimeEnv {
    RuntimeEnv::builder(
        dir.join("rt"),
        "user:e2e".parse().unwrap(),
        dir.join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret("MOCK_MODEL_KEY", SecretString::from(MODEL_KEY))
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .unwrap()
}

fn driver(dir: &Path, bin: &Path, model: &MockResponses) -> CodexDriver {
    driver_with(dir, bin, model, ProcessMode::PerTurn)
}

/// The driver of these tests in process `mode` (the resident tests share it).
pub(crate) fn driver_with(
    dir: &Path,
    bin: &Path,
    model: &MockResponses,
    mode: ProcessMode,
) -> CodexDriver {
    let options = CodexOptions::new()
        .with_binary(bin)
        .with_process_mode(mode)
        .with_model("mock-model")
        .with_model_provider(
            ModelProvider::new("mock", model.base_url())
                .with_env_key("MOCK_MODEL_KEY")
                .with_request_max_retries(0)
                .with_stream_max_retries(0),
        )
        .with_limits(
            Limits::default()
                .with_idle_timeout(std::time::Duration::from_secs(90))
                .with_total_timeout(std::time::Duration::from_secs(240)),
        );
    CodexDriver::new(Arc::new(namespace(dir)), options)
}

#[test]
fn codex_resumes_one_thread_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex end to end against the real codex",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockResponses::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "exec --json",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::Separate,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        restart::unknown_session_is_rejected(&driver(dir.path(), &bin, &model), &|| {
            model.model_requests()
        })
        .await;
        // The model key reached codex's environment, and so the mock.
        for request in model.model_requests() {
            assert_eq!(request.bearer(), Some(MODEL_KEY));
        }
    });
}

/// The drivers of the scenario tests (approvals, structured output): `driver_with` in the
/// process mode each step asks for.
pub(crate) fn drivers<'a>(
    dir: &'a Path,
    bin: &'a Path,
    model: &'a MockResponses,
) -> impl Fn(bool) -> Arc<dyn driver_spi::Driver> + Sync + 'a {
    move |resident| {
        Arc::new(driver_with(
            dir,
            bin,
            model,
            cli_test_kit::process_mode(resident),
        ))
    }
}
