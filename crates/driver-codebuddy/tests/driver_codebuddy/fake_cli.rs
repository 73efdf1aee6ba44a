//! The CodeBuddy driver against the scripted fake CLI: argv, the MCP file (eager loading,
//! bearer references), environment (endpoint, secret key, privacy switches, user id),
//! resume rejection from CodeBuddy's `error` event, a failed MCP server, exit-0 failures,
//! hangs, cancellation, a missing binary.

use std::time::Duration;

use crate::support::{FakeCodeBuddy, codebuddy_like, fake_codebuddy};
use cli_test_kit::{checkpoint, failed_kind, run};
use compat_fingerprint::{Fingerprint, Kind};
use driver_codebuddy::{CodeBuddyOptions, CommonOptions};
use driver_process::command::Limits;
use driver_spi::{Action, PermissionPolicy};
use driver_spi::{
    DriverError, DriverEvent, FailureKind, ProfilePayload, Request, ResumeRejectReason,
    RuntimePayload, SessionContext, SessionGuard, SessionState, check_sequence,
};
use fake_cli::HOST_CREDENTIAL;
use fake_cli::{Rule, Scenario};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
use secrecy::SecretString;

const K: Kind = Kind::new("driver-codebuddy tests 2026-11-30 profile v1");
const SECRET: &str = "mcp-canary-secret-c0ffee11";
const API_KEY: &str = "cb-api-key-canary-9b1d77e3";

fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str(exact)),
        Fingerprint::of(K, |e| e.str(session)),
    )
}

fn request(prompt: &str, url: &str, var: &str, fake: &FakeCodeBuddy) -> Request {
    let mcp = McpServer::streamable_http("agent-ui", url)
        .with_bearer_token_env(var)
        .required(true);
    let service = ServiceRef::new("agent-ui", "Agent UI")
        .with_url(url)
        .with_mcp(mcp.clone())
        .with_secret_env(EnvBinding::new(var, SECRET));
    Request::new(RunId::new("run-1"), prompt, profile("exact-a", "session-s"))
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp([mcp])
        .with_workspace(fake.workspace.to_str().unwrap())
}

#[tokio::test]
async fn start_resume_and_fork_argv_and_the_mcp_file() {
    let fake = fake_codebuddy(codebuddy_like(), &[]);
    let driver = fake.driver(CodeBuddyOptions::new().with_model("default-model"));
    let (result, events) = run(
        &driver,
        request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "started: one");
    let state = checkpoint(&response);
    let call = fake.last();
    let config_path = call.arg_after("--mcp-config").unwrap().to_owned();
    assert_eq!(
        call.argv,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--session-id",
            state.resume_id.as_str(),
            "--model",
            "default-model",
            "--mcp-config",
            config_path.as_str(),
            "--strict-mcp-config",
            "--permission-mode",
            "dontAsk",
            "--allowedTools",
            "mcp__agent-ui",
        ]
    );
    assert_eq!(call.stdin, "one");
    let file = &call.files[&config_path];
    assert_eq!(file.mode, "600");
    let config: serde_json::Value = serde_json::from_str(&file.contents).unwrap();
    assert_eq!(
        config,
        serde_json::json!({"mcpServers": {"agent-ui": {
            "type": "http", "url": "http://127.0.0.1:4101/mcp", "defer_loading": false,
            "headers": {"Authorization": "Bearer ${UI_TOKEN_A}"}
        }}})
    );
    assert!(
        !std::path::Path::new(&config_path).exists(),
        "removed after the run"
    );
    assert!(config_path.starts_with(fake.state_dir().to_str().unwrap()));

    let mut resumed = request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    resumed.profile = profile("exact-b", "session-s");
    let response = run(&driver, resumed).await.0.unwrap();
    assert_eq!(response.output, "resumed: two");
    assert_eq!(checkpoint(&response).resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(call.arg_after("--resume"), Some(state.resume_id.as_str()));
    let file = &call.files[call.arg_after("--mcp-config").unwrap()];
    assert!(file.contents.contains("4202") && file.contents.contains("${UI_TOKEN_B}"));
    assert!(!file.contents.contains("4101") && !file.contents.contains("UI_TOKEN_A"));

    let fork = request("three", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::fork(state.clone()));
    let forked = run(&driver, fork).await.0.unwrap();
    assert_ne!(checkpoint(&forked).resume_id, state.resume_id);
    assert!(fake.last().has_arg("--fork-session"));

    let stateless = request("four", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::stateless());
    let response = run(&driver, stateless).await.0.unwrap();
    assert!(response.checkpoint.is_none());
    assert!(!fake.last().has_arg("--resume"));
}

#[tokio::test]
async fn options_and_the_child_environment() {
    let fake = fake_codebuddy(
        codebuddy_like(),
        &[
            "CODEBUDDY_CONFIG_DIR",
            "HOME",
            "UI_TOKEN_A",
            "CODEBUDDY_BASE_URL",
            "CODEBUDDY_API_KEY",
            "CODEBUDDY_SKIP_BUILTIN_MARKETPLACE",
            "DISABLE_TELEMETRY",
            "ACC_USER_ID",
            "ACC_USER_NICKNAME",
            "CODEBUDDY_DISABLE_SHELL_SNAPSHOT",
        ],
    );
    let driver = fake.driver(
        CodeBuddyOptions::new()
            .with_base_url("http://127.0.0.1:9")
            .with_api_key(SecretString::from(API_KEY))
            .with_max_turns(3),
    );
    // The request's policy: writes allowed (acceptEdits), MCP allowed by server name; a
    // disallowed built-in would fail CodeBuddy's turn, so none is passed.
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_instructions("Be brief.")
        .with_permissions(PermissionPolicy::default().allow(Action::Write));
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert_eq!(call.arg_after("--permission-mode"), Some("acceptEdits"));
    assert_eq!(call.arg_after("--allowedTools"), Some("mcp__agent-ui"));
    assert!(!call.has_arg("--disallowedTools"));
    assert!(
        !call.has_arg("--permission-prompt-tool"),
        "a per-turn text prompt"
    );
    assert_eq!(call.arg_after("--append-system-prompt"), Some("Be brief."));
    assert_eq!(call.arg_after("--max-turns"), Some("3"));
    assert!(!call.has_arg("--verbose"));
    assert_eq!(
        call.env["CODEBUDDY_CONFIG_DIR"],
        fake.state_dir().to_str().unwrap()
    );
    assert!(call.env["HOME"].starts_with(fake.path().to_str().unwrap()));
    assert_eq!(call.env["CODEBUDDY_BASE_URL"], "http://127.0.0.1:9");
    assert_eq!(
        call.env["CODEBUDDY_API_KEY"], API_KEY,
        "the key reaches the env"
    );
    assert_eq!(call.env["UI_TOKEN_A"], SECRET);
    assert_eq!(call.env["CODEBUDDY_SKIP_BUILTIN_MARKETPLACE"], "1");
    assert_eq!(call.env["DISABLE_TELEMETRY"], "1");
    assert_eq!(call.env["ACC_USER_ID"], "agent-sdk");
    assert_eq!(call.env["ACC_USER_NICKNAME"], "agent-sdk");
    assert_eq!(call.env["CODEBUDDY_DISABLE_SHELL_SNAPSHOT"], "1");
    assert!(!call.has_env("CODEBUDDY_AUTH_TOKEN"), "no host credential");
    for secret in [API_KEY, SECRET, HOST_CREDENTIAL] {
        assert!(!call.argv.iter().any(|a| a.contains(secret)));
        assert!(call.files.values().all(|f| !f.contents.contains(secret)));
    }
    // The privacy switches can be turned off; the key never shows in Debug.
    let open = fake.driver(CodeBuddyOptions::new().with_offline(false));
    run(
        &open,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    assert!(!fake.last().has_env("DISABLE_TELEMETRY"));
    // No shell snapshot either way: it would write the environment's secrets to disk.
    assert_eq!(fake.last().env["CODEBUDDY_DISABLE_SHELL_SNAPSHOT"], "1");
    assert!(!format!("{driver:?}").contains(API_KEY));
}

#[tokio::test]
async fn an_unknown_session_is_rejected_from_codebuddys_error_event() {
    let scenario = Scenario::new().rule(
        Rule::when(["--resume"])
            .stdout(r#"{"type":"error","error":"No conversation found with session ID: ${ARG_AFTER:--resume}"}"#),
    );
    let fake = fake_codebuddy(scenario, &[]);
    let driver = fake.driver(CodeBuddyOptions::new());
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
}

#[tokio::test]
async fn a_required_mcp_server_missing_from_init_stops_the_run() {
    // CodeBuddy leaves a server that failed (401, refused) out of `system/init`.
    let init = r#"{"type":"system","subtype":"init","session_id":"${ARG_AFTER:--session-id}","mcp_servers":[]}"#;
    let fake = fake_codebuddy(
        Scenario::new().rule(Rule::any().stdout(init).sleep_ms(30_000)),
        &[],
    );
    let driver = fake.driver(CodeBuddyOptions::new());
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::McpUnavailable));
    // The one stop rule: the `system/init` batch is checked before it is emitted, so the run
    // never started and the failure is the error.
    assert_eq!(events, []);
}

fn started() -> Rule {
    Rule::any().stdout(
        r#"{"type":"system","subtype":"init","session_id":"${ARG_AFTER:--session-id}","mcp_servers":[{"name":"agent-ui","status":"connected"}]}"#,
    )
}

async fn failing(
    scenario: Scenario,
    limits: Limits,
) -> (Result<driver_spi::Response, DriverError>, Vec<DriverEvent>) {
    let fake = fake_codebuddy(scenario, &[]);
    let driver = fake.driver(CodeBuddyOptions::new().with_limits(limits));
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
}

#[tokio::test]
async fn failures_are_judged_from_the_stream_although_the_exit_is_zero() {
    // A failed turn: exit 0, an error result with `errors`.
    let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":null,"session_id":"${ARG_AFTER:--session-id}","errors":["401 Unauthorized (req/sid)"]}"#;
    let (result, events) = failing(
        Scenario::new().rule(started().stdout(failed)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
    assert_eq!(check_sequence(&events), Ok(()));
    let response = result.unwrap();
    assert!(response.persistable_checkpoint().is_none());
    assert!(
        response
            .failure
            .unwrap()
            .message
            .contains("401 Unauthorized")
    );

    // No result at all (exit 0): a protocol failure.
    let (result, _) = failing(Scenario::new().rule(started()), Limits::default()).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));

    // The endpoint refuses connections: CodeBuddy prints text and hangs. The idle timeout
    // ends the run with a typed failure.
    let refused = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"502 连接被拒绝 (connect ECONNREFUSED 127.0.0.1:1)"}]},"session_id":"${ARG_AFTER:--session-id}"}"#;
    let limits = Limits::default().with_idle_timeout(Duration::from_millis(300));
    let (result, events) = failing(
        Scenario::new().rule(started().stdout(refused).hang()),
        limits,
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert_eq!(check_sequence(&events), Ok(()));

    // Malformed output and a crash.
    let (result, _) = failing(
        Scenario::new().rule(started().stdout("{oops")),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    let (result, events) = failing(
        Scenario::new().rule(started().kill_self()),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Process));
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn tool_names_on_the_wire_are_reported_under_the_declared_server() {
    let session = "${ARG_AFTER:--session-id}";
    let fake = fake_codebuddy(
        Scenario::new().rule(
            started()
                .stdout(format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"call_0","name":"mcp__agent_ui__ping","input":{{"text":"hi"}}}}]}},"session_id":"{session}"}}"#))
                .stdout(format!(r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"call_0","content":[{{"type":"text","text":"[{{\"type\":\"text\",\"text\":\"pong:hi\"}}]"}}],"is_error":false}}],"role":"user"}},"session_id":"{session}"}}"#))
                .stdout(format!(r#"{{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}}"#)),
        ),
        &[],
    );
    let driver = fake.driver(CodeBuddyOptions::new());
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(result.unwrap().output, "done");
    assert!(events.contains(&DriverEvent::tool_call_started(
        "call_0",
        "mcp__agent-ui__ping"
    )));
    assert!(events.contains(&DriverEvent::tool_call_result("call_0", "pong:hi", false)));
}

#[tokio::test]
async fn cancelling_the_run_ends_the_process_group_and_removes_the_mcp_file() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let fake = fake_codebuddy(
        Scenario::new()
            .capture_arg_flag("--mcp-config")
            .rule(started().spawn_grandchild(&pid_file).hang()),
        &[],
    );
    let driver = fake.driver(
        CodeBuddyOptions::new()
            .with_limits(Limits::default().with_kill_grace(Duration::from_millis(500))),
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (call, _) = fake.cancel_mid_turn(&driver, req, &pid_file).await;
    let config = call.arg_after("--mcp-config").unwrap();
    assert!(
        !std::path::Path::new(config).exists(),
        "the MCP file was removed"
    );
}

#[tokio::test]
async fn a_missing_binary_is_a_typed_error() {
    let fake = fake_codebuddy(codebuddy_like(), &[]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    fake.assert_missing_binary_fails(fake.options(), req).await;
}
