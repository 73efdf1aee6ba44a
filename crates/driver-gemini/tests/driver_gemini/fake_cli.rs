//! The Gemini driver against the scripted fake CLI: argv, environment, the settings file,
//! resume rejection, exit codes, broken output, crashes, hangs, cancellation and a missing
//! binary. (The namespace's own files and concurrent turns: `namespace.rs`.)

use std::sync::Arc;
use std::time::Duration;

use crate::support::{
    API_KEY, GeminiFake, RESULT, SECRET, checkpoint, failed_kind, fake_gemini, gemini_like, init,
    profile, request, run,
};
use driver_gemini::{AuthType, CommonOptions, GeminiDriver};
use driver_process::command::Limits;
use driver_spi::{
    Driver, DriverError, DriverEvent, FailureKind, Request, ResumeRejectReason, SessionContext,
    SessionGuard, SessionState, check_sequence,
};
use fake_cli::{HOST_CREDENTIAL, Invocation, Rule, Scenario};
use run_service::RunId;
use serde_json::json;

/// No secret value in argv, stdin or any file under GEMINI_CLI_HOME.
fn assert_no_secret_outside_env(call: &Invocation) {
    for secret in [SECRET, API_KEY, HOST_CREDENTIAL] {
        assert!(!call.argv.iter().any(|a| a.contains(secret)), "argv");
        assert!(!call.stdin.contains(secret), "stdin");
        for (path, file) in &call.files {
            assert!(!file.contents.contains(secret), "a secret in {path}");
        }
    }
}

#[tokio::test]
async fn start_and_resume_argv_environment_and_settings() {
    let fake = fake_gemini(
        gemini_like(),
        &[
            "GEMINI_CLI_HOME",
            "HOME",
            "TMPDIR",
            "GOOGLE_GEMINI_BASE_URL",
            "GEMINI_API_KEY",
            "UI_TOKEN_A",
        ],
    );
    let driver = fake.driver(fake.keyed_options());
    let (result, events) = run(
        &driver,
        request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "started: one");
    let usage = response.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens
        ),
        (20, 3, 10)
    );
    let state = checkpoint(&response);
    assert!(driver_cli::is_uuid(&state.resume_id));

    let call = fake.last();
    assert_eq!(
        call.argv,
        [
            "-p",
            "",
            "--output-format",
            "stream-json",
            "--skip-trust",
            "-m",
            "gemini-test",
            "--session-id",
            state.resume_id.as_str(),
            "--allowed-mcp-server-names=agent-tools",
        ]
    );
    assert_eq!(call.stdin, "one", "the prompt goes on stdin");
    assert_eq!(call.cwd, fake.workspace);
    // The namespace's state, temp dir and endpoint; the key only in the environment.
    let home = fake.state_dir();
    assert_eq!(call.env["GEMINI_CLI_HOME"], home.to_str().unwrap());
    assert!(call.env["TMPDIR"].starts_with(fake.path().to_str().unwrap()));
    assert!(call.env["HOME"].starts_with(fake.path().to_str().unwrap()));
    assert_eq!(call.env["GOOGLE_GEMINI_BASE_URL"], "http://127.0.0.1:9");
    assert_eq!(call.env["GEMINI_API_KEY"], API_KEY);
    assert_eq!(call.env["UI_TOKEN_A"], SECRET);
    assert!(!call.has_env("GOOGLE_API_KEY"), "no host credential");
    assert_no_secret_outside_env(&call);

    // The settings file: 0600, variable names only.
    let file = fake.settings(&call);
    assert_eq!(file.mode, "600");
    assert_eq!(
        fake.settings_json(&call),
        json!({
            "general": {"sessionRetention": {"enabled": false}},
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "mcpServers": {"agent-tools": {
                "httpUrl": "http://127.0.0.1:4101/mcp",
                "headers": {"Authorization": "Bearer ${UI_TOKEN_A}"},
                "trust": true
            }}
        })
    );

    // Resume after a restart: new port and variable, same session.
    let mut resumed = request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    resumed.profile = profile("exact-b", "session-s");
    let (result, events) = run(&driver, resumed).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "resumed: two");
    assert_eq!(checkpoint(&response).resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(call.arg_after("--resume"), Some(state.resume_id.as_str()));
    assert!(!call.has_arg("--session-id"));
    let text = &fake.settings(&call).contents;
    assert!(text.contains("http://127.0.0.1:4202/mcp") && text.contains("${UI_TOKEN_B}"));
    assert!(!text.contains("4101") && !text.contains("UI_TOKEN_A"));
    assert!(call.has_env("UI_TOKEN_B") && !call.has_env("UI_TOKEN_A"));
    assert_no_secret_outside_env(&call);
}

#[tokio::test]
async fn stateless_turns_instructions_and_options() {
    let fake = fake_gemini(gemini_like(), &["GEMINI_API_KEY"]);
    // No key and no base URL: no auth type, no key in the environment.
    let driver = fake.driver(
        fake.options()
            .with_offline(false)
            .with_trust_mcp_servers(false),
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::stateless())
        .with_instructions("Answer in French.");
    let response = run(&driver, req).await.0.unwrap();
    assert_eq!(response.output, "stateless: hi");
    assert!(response.checkpoint.is_none());
    let call = fake.last();
    assert!(!call.has_arg("--session-id") && !call.has_arg("--resume"));
    assert!(!call.has_arg("-m"));
    assert!(!call.has_env("GEMINI_API_KEY") && !call.has_env("GOOGLE_GEMINI_BASE_URL"));
    let settings = fake.settings_json(&call);
    assert!(settings.get("security").is_none() && settings.get("privacy").is_none());
    assert!(settings["mcpServers"]["agent-tools"].get("trust").is_none());
    assert_eq!(
        settings["context"]["fileName"],
        json!(["GEMINI.md", "sdk-instructions.md"])
    );
    let instructions = fake.state_dir().join(".gemini/sdk-instructions.md");
    let file = &call.files[instructions.to_str().unwrap()];
    assert_eq!(
        (file.contents.as_str(), file.mode.as_str()),
        ("Answer in French.", "600")
    );

    // The next turn without instructions leaves none behind.
    let req = request("again", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::stateless());
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert!(!call.files.contains_key(instructions.to_str().unwrap()));
    assert!(fake.settings_json(&call).get("context").is_none());

    // An explicit auth type, for credentials injected into the namespace.
    let vertex = fake.driver(fake.options().with_auth_type(AuthType::VertexAi));
    run(
        &vertex,
        request("x", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    assert_eq!(
        fake.settings_json(&fake.last())["security"]["auth"]["selectedType"],
        "vertex-ai"
    );
}

#[tokio::test]
async fn requests_that_cannot_be_written_are_refused_before_spawning() {
    let fake = fake_gemini(gemini_like(), &[]);
    let driver = fake.driver(fake.options());
    // Gemini would expand `$VAR` in the URL from its own environment.
    let req = request(
        "hi",
        "http://127.0.0.1:4101/$GEMINI_API_KEY",
        "UI_TOKEN_A",
        &fake,
    );
    let (result, events) = run(&driver, req).await;
    assert!(
        matches!(result, Err(DriverError::InvalidConfig(_))),
        "{result:?}"
    );
    assert!(events.is_empty());
    // Gemini silently cuts stdin after 8 MiB.
    let long = "x".repeat((8 << 20) + 1);
    let (result, events) = run(
        &driver,
        request(&long, "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert!(
        matches!(result, Err(DriverError::InvalidConfig(_))),
        "{result:?}"
    );
    assert!(events.is_empty());
    let fork = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::fork(SessionState::new("x")));
    assert!(matches!(
        run(&driver, fork).await.0,
        Err(DriverError::ResumeRejected { .. })
    ));
    assert!(fake.invocations().is_empty());
    let bad = fake.driver(fake.options().with_base_url("ftp://x"));
    assert!(bad.validate_config().is_err());
    // The shared level's `settings.json` is the host user's own: refused.
    let shared = runtime_env::RuntimeEnv::builder(
        fake.path().join("shared"),
        "user:fake".parse().unwrap(),
        &fake.workspace,
    )
    .level(runtime_env::IsolationLevel::Shared)
    .tenancy(runtime_env::Tenancy::Single)
    .host_env(runtime_env::HostEnv::from_vars([(
        "HOME",
        fake.path().join("host-home"),
    )]))
    .runtimes([&driver_gemini::RUNTIME.descriptor])
    .build()
    .unwrap();
    let driver = GeminiDriver::new(Arc::new(shared), fake.options());
    assert!(driver.validate_config().is_err());
    let (result, _) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert!(matches!(result, Err(DriverError::InvalidConfig(_))));
}

#[tokio::test]
async fn a_fork_imports_the_parents_recording_under_a_new_id() {
    let fake = fake_gemini(gemini_like(), &[]);
    let driver = fake.driver(fake.options());
    let first = request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let parent = checkpoint(&run(&driver, first).await.0.unwrap());
    let recording = fake.record_session(&parent.resume_id);
    let fork = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::fork(parent.clone()));
    let (result, events) = run(&driver, fork).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "forked: two");
    let child = checkpoint(&response);
    assert_ne!(child.resume_id, parent.resume_id);
    assert!(driver_cli::is_uuid(&child.resume_id));
    let call = fake.last();
    assert_eq!(call.arg_after("--session-file"), recording.to_str());
    assert!(!call.has_arg("--resume") && !call.has_arg("--session-id"));

    // A parent without a recording is unknown before anything is spawned.
    let calls = fake.invocations().len();
    let mut orphan = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
    let req = request("three", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    SessionGuard::for_request(&req).write_to(&mut orphan);
    let (result, events) = run(&driver, req.with_session(SessionContext::fork(orphan))).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());
    assert_eq!(fake.invocations().len(), calls);
    // It was looked up with the turn's files in place, and they are gone again.
    assert!(!fake.state_dir().join(".gemini/settings.json").exists());
}

#[tokio::test]
async fn an_unknown_session_is_rejected_from_geminis_exit_code() {
    // Verbatim stderr of gemini 0.61.0, which exits 42.
    let scenario = Scenario::new().rule(
        Rule::when(["--resume"])
            .stderr(
                r#"Error resuming session: Invalid session identifier "${ARG_AFTER:--resume}"."#,
            )
            .stderr("  Searched for sessions in /home/.gemini/tmp/work/chats.")
            .exit(42),
    );
    let fake = fake_gemini(scenario, &[]);
    let driver = fake.driver(fake.options());
    let mut state = SessionState::new("1f9c3813-6aa8-448e-8c61-b9a6080c42ad");
    SessionGuard::new(profile("x", "session-s").session_compatibility, None).write_to(&mut state);
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-s"))
        .with_session(SessionContext::continue_only(state.clone()));
    let (result, events) = run(&driver, req).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());
    // A guard mismatch and a stored id that is not a UUID are rejected before spawning.
    let calls = fake.invocations().len();
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-OTHER"))
        .with_session(SessionContext::continue_only(state));
    assert_eq!(
        run(&driver, req).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::GuardMismatch)
    );
    let mut latest = SessionState::new("latest");
    SessionGuard::new(profile("x", "session-s").session_compatibility, None).write_to(&mut latest);
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-s"))
        .with_session(SessionContext::continue_only(latest));
    assert_eq!(
        run(&driver, req).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::InvalidState)
    );
    assert_eq!(fake.invocations().len(), calls);
}

#[tokio::test]
async fn a_resume_that_reports_another_session_is_rejected() {
    let fake = fake_gemini(
        Scenario::new().rule(Rule::any().stdout(init("${NEW_UUID}")).stdout(RESULT)),
        &[],
    );
    let driver = fake.driver(fake.options());
    let mut state = SessionState::new("1f9c3813-6aa8-448e-8c61-b9a6080c42ad");
    SessionGuard::new(profile("x", "session-s").session_compatibility, None).write_to(&mut state);
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-s"))
        .with_session(SessionContext::continue_only(state));
    let (result, events) = run(&driver, req).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());
    // A new session under another id than the chosen one: a protocol failure, no events.
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (result, events) = run(&driver, req).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert!(events.is_empty());
}

async fn failing(
    scenario: Scenario,
    limits: Limits,
) -> (Result<driver_spi::Response, DriverError>, Vec<DriverEvent>) {
    let fake = fake_gemini(scenario, &[]);
    let driver = fake.driver(fake.options().with_limits(limits));
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
}

fn started() -> Rule {
    Rule::any().stdout(init("${ARG_AFTER:--session-id}"))
}

#[tokio::test]
async fn exit_41_is_an_authentication_failure() {
    // gemini 0.61.0 with `GOOGLE_GEMINI_BASE_URL` and no selected auth type.
    let (result, events) = failing(
        Scenario::new().rule(Rule::any().stderr("Invalid auth method selected.").exit(41)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
    assert!(events.is_empty());
    // A model API 401, reported in the `result` (Gemini exits with the status modulo 256).
    let unauthenticated = r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"denied\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"input_tokens":0,"output_tokens":0,"cached":0}}"#;
    let (result, events) = failing(
        Scenario::new().rule(started().stdout(unauthenticated).exit(145)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(result.unwrap().persistable_checkpoint().is_none());
}

#[tokio::test]
async fn broken_output_crashes_and_hangs_fail_the_run() {
    let (result, events) = failing(
        Scenario::new().rule(started().stdout("{not json")),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));

    let (result, events) = failing(
        Scenario::new().rule(started().stdout(r#"{"type":"tool_use","tool_name":"x"}"#)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));

    let (result, events) = failing(
        Scenario::new().rule(started().kill_self()),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Process));
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(result.unwrap().persistable_checkpoint().is_none());

    let (result, events) = failing(
        Scenario::new().rule(started().stderr("boom").exit(1)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Process));
    assert_eq!(check_sequence(&events), Ok(()));

    // A clean exit without a `result` is a protocol failure.
    let (result, _) = failing(Scenario::new().rule(started()), Limits::default()).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));

    let limits = Limits::default().with_idle_timeout(Duration::from_millis(300));
    let (result, events) = failing(Scenario::new().rule(started().hang()), limits).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert_eq!(check_sequence(&events), Ok(()));

    // The turn limit (exit 53) before anything started.
    let (result, events) = failing(
        Scenario::new().rule(Rule::any().stderr("Reached max session turns").exit(53)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Limit));
    assert!(events.is_empty());
}

#[tokio::test]
async fn tool_calls_are_reported_under_the_declared_server_name() {
    let id = "mcp_agent-tools_ping__mcp_agent-tools_ping_1796087179315_0";
    let fake = fake_gemini(
        Scenario::new().rule(
            started()
                .stdout(format!(r#"{{"type":"tool_use","tool_name":"mcp_agent-tools_ping","tool_id":"{id}","parameters":{{"text":"one"}}}}"#))
                .stdout(format!(r#"{{"type":"tool_result","tool_id":"{id}","status":"success","output":"pong"}}"#))
                .stdout(r#"{"type":"message","role":"assistant","content":"done","delta":true}"#)
                .stdout(RESULT),
        ),
        &[],
    );
    let driver = fake.driver(fake.options());
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(result.unwrap().output, "done");
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(events.contains(&DriverEvent::tool_call_started(
        id,
        "mcp__agent-tools__ping"
    )));
    assert!(events.contains(&DriverEvent::tool_call_arguments(id, r#"{"text":"one"}"#)));
    assert!(events.contains(&DriverEvent::tool_call_result(id, "pong", false)));
}

#[tokio::test]
async fn cancelling_the_run_ends_the_process_group_and_frees_the_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let fake = fake_gemini(
        Scenario::new()
            .rule(
                Rule::when(["--resume"])
                    .stdout(init("${ARG_AFTER:--resume}"))
                    .stdout(RESULT),
            )
            .rule(started().spawn_grandchild(&pid_file).hang()),
        &[],
    );
    let driver = fake.driver(
        fake.options()
            .with_limits(Limits::default().with_kill_grace(Duration::from_millis(500))),
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (call, _) = fake.cancel_mid_turn(&driver, req, &pid_file).await;
    // The turn lock went with the run: the next turn of the namespace runs at once.
    let next = request("again", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let mut state = SessionState::new(call.arg_after("--session-id").unwrap());
    SessionGuard::for_request(&next).write_to(&mut state);
    let next = next.with_session(SessionContext::continue_only(state));
    let quick = fake.driver(
        fake.options()
            .with_limits(Limits::default().with_total_timeout(Duration::from_secs(5))),
    );
    let (result, _) = run(&quick, next).await;
    assert!(result.unwrap().is_clean());
}

#[tokio::test]
async fn a_missing_binary_is_a_typed_error() {
    let fake = fake_gemini(gemini_like(), &[]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    fake.assert_missing_binary_fails(fake.options(), req).await;
    // Debug output never shows the key.
    let keyed = fake.driver(fake.keyed_options());
    assert!(!format!("{keyed:?}").contains(API_KEY));
}

/// The config fingerprint is the one stored Threads carry: the driver type, the model, the
/// endpoint, the auth type and MCP trust, then the namespace and isolation level, in that
/// order.
#[test]
fn the_config_fingerprint_is_unchanged() {
    use driver_spi::{ConfigFingerprintBuilder, ConfigFingerprinter};
    let fake = fake_gemini(gemini_like(), &[]);
    let driver = fake.driver(fake.keyed_options().with_trust_mcp_servers(false));
    let expected = ConfigFingerprintBuilder::new("gemini")
        .opt_str("model", Some("gemini-test"))
        .opt_str("base_url", Some("http://127.0.0.1:9"))
        .opt_str("auth_type", Some("gemini-api-key"))
        .bool("trust_mcp_servers", false)
        .str("namespace", fake.env.namespace().as_str())
        .str("isolation_level", fake.env.level().name())
        .finish();
    assert_eq!(driver.config_fingerprint(), expected);
    // The key, binary, limits and the offline switch are not part of it.
    let other = fake.driver(
        fake.keyed_options()
            .with_trust_mcp_servers(false)
            .with_api_key(secrecy::SecretString::from("another"))
            .with_offline(false)
            .with_limits(Limits::default().with_idle_timeout(Duration::from_secs(1))),
    );
    assert_eq!(other.config_fingerprint(), expected);
}
