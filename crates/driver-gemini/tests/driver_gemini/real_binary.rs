//! End to end against the real `gemini` binary, fully offline: a loopback mock of the Gemini
//! API stands in for the model, and the workspace's hosted-tools provider serves a real
//! bearer-checking MCP tool on a fresh port with a fresh token and env-var name per host
//! (the shared scenario: [`test_kit::restart`]).
//!
//! The binary comes from `GEMINI_BIN` (`.ci/run` installs the pinned
//! `@google/gemini-cli@0.61.0` and exports it). Without it the test prints a visible
//! `SKIPPED` line locally; under CI (`CI` set) a missing binary fails the test
//! ([`test_kit::real_cli::binary`]).
//!
//! The scenario installs a global TRACE subscriber for its canary scan; in this binary it
//! also sees the fake-CLI tests' logs, which carry their own canaries, never this test's.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use driver_gemini::{CommonOptions, GeminiDriver, GeminiOptions};
use driver_process::command::Limits;
use runtime_env::{HostEnv, RuntimeEnv};
use secrecy::SecretString;
use test_kit::gemini::MockGemini;
use test_kit::restart::{self, Secrets, Setup};

/// The model API key: a canary that must reach only Gemini's environment.
const MODEL_KEY: &str = "AIza-model-key-canary-3f8a61d2";

/// A driver over the shared credential namespace of every host.
pub(crate) fn driver(dir: &Path, bin: &Path, model: &MockGemini) -> GeminiDriver {
    let env = RuntimeEnv::builder(
        dir.join("rt"),
        "user:e2e".parse().unwrap(),
        dir.join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .runtimes([&driver_gemini::RUNTIME.descriptor])
    .build()
    .unwrap();
    let options = GeminiOptions::new()
        .with_binary(bin)
        .with_model("gemini-mock")
        .with_base_url(model.base_url())
        .with_api_key(SecretString::from(MODEL_KEY))
        .with_limits(
            Limits::default()
                .with_idle_timeout(Duration::from_secs(90))
                .with_total_timeout(Duration::from_secs(240)),
        );
    GeminiDriver::new(Arc::new(env), options)
}

#[test]
fn gemini_resumes_one_session_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = test_kit::real_cli::binary(
        "GEMINI_BIN",
        "driver-gemini end to end against the real gemini",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockGemini::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "--output-format stream-json",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::NotPassed,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        restart::unknown_session_is_rejected(&driver(dir.path(), &bin, &model), &|| {
            model.model_requests()
        })
        .await;
        // The key reached gemini's environment, and so the mock; the model came from -m.
        for request in model.model_requests() {
            assert_eq!(request.bearer(), Some(MODEL_KEY));
            assert_eq!(request.model(), Some("gemini-mock"));
        }
    });
}

/// Fork (`--session-file`), instructions (a context file in the system instruction) and a
/// stateless turn, against the real binary and the mock.
#[test]
fn gemini_forks_follows_instructions_and_runs_stateless() {
    use compat_fingerprint::{Fingerprint, Kind};
    use driver_spi::{
        CollectingSink, Driver, ProfilePayload, Request, SessionContext, SessionState,
    };
    use run_service::RunId;
    use test_kit::{Reply, Script};

    let Some(bin) = test_kit::real_cli::binary(
        "GEMINI_BIN",
        "driver-gemini fork, instructions and stateless against the real gemini",
    ) else {
        return;
    };
    const K: Kind = Kind::new("driver-gemini real tests 2026-12-01 profile v1");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockGemini::start(
        Script::new()
            .then(Reply::text("Parent answer."))
            .then(Reply::text("Forked answer."))
            .then(Reply::text("Stateless answer.")),
    )
    .unwrap();
    let driver = driver(dir.path(), &bin, &model);
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    );
    let request = |prompt: &str, session: SessionContext| {
        Request::new(RunId::new(prompt), prompt, profile).with_session(session)
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let sink = Arc::new(CollectingSink::new());
            let parent = request("first", SessionContext::start())
                .with_instructions("Always answer in haiku.");
            let response = driver.run(parent, sink.clone()).await.unwrap();
            assert_eq!(response.output, "Parent answer.");
            let parent: SessionState = response.persistable_checkpoint().unwrap().clone();
            let system = model.model_requests()[0].body()["systemInstruction"].to_string();
            assert!(system.contains("Always answer in haiku."), "{system}");

            let fork = request("second", SessionContext::fork(parent.clone()));
            let response = driver.run(fork, sink.clone()).await.unwrap();
            assert_eq!(response.output, "Forked answer.");
            let child = response.persistable_checkpoint().unwrap();
            assert_ne!(child.resume_id, parent.resume_id);
            let texts = model.model_requests()[1].input_texts();
            assert_eq!(texts, ["first", "Parent answer.", "second"]);
            let system = model.model_requests()[1].body()["systemInstruction"].to_string();
            assert!(
                !system.contains("haiku"),
                "instructions do not outlive their turn"
            );

            let stateless = request("third", SessionContext::stateless());
            let response = driver.run(stateless, sink).await.unwrap();
            assert_eq!(response.output, "Stateless answer.");
            assert!(response.checkpoint.is_none());
            assert_eq!(model.model_requests()[2].input_texts(), ["third"]);
        });
}
