//! End to end against the real `claude` binary, fully offline: a loopback mock of the
//! Anthropic Messages API stands in for the model, and the workspace's hosted-tools provider
//! serves a real bearer-checking MCP tool on a fresh port with a fresh token and env-var name
//! per host (the shared scenario: [`test_kit::restart`]).
//!
//! The binary comes from `CLAUDE_BIN` (`.ci/run` installs the pinned
//! `@anthropic-ai/claude-code@2.1.197` and exports it). Without it the test prints a visible
//! `SKIPPED` line locally; under CI a missing binary fails the test.
//!
//! This is its own test binary because the scenario installs a global TRACE subscriber for
//! its canary scan.

use std::path::Path;
use std::sync::Arc;

use driver_cli::ProcessMode;

use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::anthropic::MockAnthropic;
use test_kit::restart::{self, Secrets, Setup};

/// The model API key: a canary that must reach only Claude Code's environment.
pub(crate) const MODEL_KEY: &str = "sk-ant-model-key-canary-8d2e41";

fn driver(dir: &Path, bin: &Path, model: &MockAnthropic) -> ClaudeCodeDriver {
    driver_with(dir, bin, model, ProcessMode::PerTurn)
}

/// The driver of these tests in process `mode` (the resident tests share it).
pub(crate) fn driver_with(
    dir: &Path,
    bin: &Path,
    model: &MockAnthropic,
    mode: ProcessMode,
) -> ClaudeCodeDriver {
    let env = RuntimeEnv::builder(
        dir.join("rt"),
        "user:e2e".parse().unwrap(),
        dir.join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret("ANTHROPIC_API_KEY", SecretString::from(MODEL_KEY))
    .runtimes([&driver_claude_code::RUNTIME.descriptor])
    .build()
    .unwrap();
    let options = ClaudeCodeOptions::new()
        .with_binary(bin)
        .with_process_mode(mode)
        .with_model("claude-mock")
        .with_base_url(model.base_url())
        .with_max_retries(0);
    ClaudeCodeDriver::new(Arc::new(env), options)
}

#[test]
fn claude_resumes_one_session_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = test_kit::real_cli::binary(
        "CLAUDE_BIN",
        "driver-claude-code end to end against the real claude",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "--output-format stream-json",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::Shared,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        restart::unknown_session_is_rejected(&driver(dir.path(), &bin, &model), &|| {
            model.model_requests()
        })
        .await;
        for request in model.model_requests() {
            assert_eq!(
                request.bearer(),
                Some(MODEL_KEY),
                "the key reached claude's env"
            );
        }
    });
}

/// The drivers of the scenario tests (approvals, structured output): `driver_with` in the
/// process mode each step asks for.
pub(crate) fn drivers<'a>(
    dir: &'a Path,
    bin: &'a Path,
    model: &'a MockAnthropic,
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
