//! End to end against the real `codebuddy` binary, fully offline: a loopback mock of the
//! OpenAI Chat Completions API stands in for the model, and the workspace's hosted-tools provider
//! serves a real bearer-checking MCP tool on a fresh port with a fresh token and env-var name
//! per host (the shared scenario: [`test_kit::restart`]).
//!
//! The binary comes from `CODEBUDDY_BIN` (`.ci/run` installs the pinned
//! `@tencent-ai/agent-sdk@0.3.201`, which bundles the CLI at `cli/bin/codebuddy`, and exports
//! it). Without it the test prints a visible
//! `SKIPPED` line locally; under CI a missing binary fails the test.
//!
//! This is its own test binary because the scenario installs a global TRACE subscriber for
//! its canary scan.

use std::path::Path;
use std::sync::Arc;

use driver_cli::ProcessMode;
use driver_codebuddy::{CodeBuddyDriver, CodeBuddyOptions, CommonOptions};
use driver_process::command::Limits;
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::chat::MockChat;
use test_kit::restart::{self, Secrets, Setup};

/// The model API key: a canary that must reach only CodeBuddy's environment.
pub(crate) const MODEL_KEY: &str = "cb-model-key-canary-3f9a2c71";

fn driver(dir: &Path, bin: &Path, model: &MockChat) -> CodeBuddyDriver {
    driver_with(dir, bin, model, ProcessMode::PerTurn)
}

/// The driver of these tests in process `mode` (the resident tests share it).
pub(crate) fn driver_with(
    dir: &Path,
    bin: &Path,
    model: &MockChat,
    mode: ProcessMode,
) -> CodeBuddyDriver {
    let env = RuntimeEnv::builder(
        dir.join("rt"),
        "user:e2e".parse().unwrap(),
        dir.join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .runtimes([&driver_codebuddy::RUNTIME.descriptor])
    .build()
    .unwrap();
    let options = CodeBuddyOptions::new()
        .with_binary(bin)
        .with_process_mode(mode)
        .with_base_url(model.base_url())
        .with_api_key(SecretString::from(MODEL_KEY))
        .with_offline(true)
        // CodeBuddy hangs when the model endpoint refuses connections: bound every turn.
        .with_limits(
            Limits::default()
                .with_idle_timeout(std::time::Duration::from_secs(90))
                .with_total_timeout(std::time::Duration::from_secs(180)),
        );
    CodeBuddyDriver::new(Arc::new(env), options)
}

#[test]
fn codebuddy_resumes_one_session_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEBUDDY_BIN",
        "driver-codebuddy end to end against the real codebuddy",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockChat::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "--output-format stream-json",
            // The key's tail too: without ACC_USER_ID CodeBuddy would log it.
            secrets: Secrets::new([
                MODEL_KEY.to_owned(),
                MODEL_KEY[MODEL_KEY.len() - 8..].to_owned(),
            ]),
            log,
            call_ids: restart::CallIds::NotPassed,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        restart::unknown_session_is_rejected(&driver(dir.path(), &bin, &model), &|| {
            model.model_requests()
        })
        .await;
        let tail = &MODEL_KEY[MODEL_KEY.len() - 8..];
        for request in model.model_requests() {
            assert_eq!(
                request.bearer(),
                Some(MODEL_KEY),
                "the key reached codebuddy's env"
            );
            // ACC_USER_ID keeps the key's tail out of the user id CodeBuddy sends and logs.
            let user = request.header("x-user-id").unwrap_or_default();
            assert!(
                !user.contains(tail),
                "x-user-id carries part of the key: {user}"
            );
        }
    });
}

/// The drivers of the scenario tests (approvals, structured output): `driver_with` in the
/// process mode each step asks for.
pub(crate) fn drivers<'a>(
    dir: &'a Path,
    bin: &'a Path,
    model: &'a MockChat,
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
