//! The Claude Code driver against the scripted fake CLI: argv, the MCP file, environment,
//! resume rejection, a failed MCP server, broken output, hangs, cancellation, a missing
//! binary.

use std::time::Duration;

use crate::support::{FakeClaude, claude_like, fake_claude};
use cli_test_kit::{checkpoint, failed_kind, run};
use compat_fingerprint::{Fingerprint, Kind};
use driver_claude_code::{ClaudeCodeOptions, CommonOptions};
use driver_process::command::Limits;
use driver_spi::{Action, Permission, PermissionPolicy, Unsupported};
use driver_spi::{
    DriverError, DriverEvent, FailureKind, ProfilePayload, Request, ResumeRejectReason,
    RuntimePayload, SessionContext, SessionGuard, SessionState, check_sequence,
};
use fake_cli::HOST_CREDENTIAL;
use fake_cli::{Rule, Scenario};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

const K: Kind = Kind::new("driver-claude-code tests 2026-11-30 profile v1");
const SECRET: &str = "mcp-canary-secret-77aa01";

fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str(exact)),
        Fingerprint::of(K, |e| e.str(session)),
    )
}

pub(crate) fn request(prompt: &str, url: &str, var: &str, fake: &FakeClaude) -> Request {
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
    let fake = fake_claude(claude_like(), &[]);
    let driver = fake.driver(ClaudeCodeOptions::new().with_model("claude-test"));
    let first = request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (result, events) = run(&driver, first).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "started: one");
    let usage = response.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.cached_input_tokens), (14, 3));
    let state = checkpoint(&response);
    let call = fake.last();
    let config_path = call.arg_after("--mcp-config").unwrap().to_owned();
    assert_eq!(
        call.argv,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--session-id",
            state.resume_id.as_str(),
            "--model",
            "claude-test",
            "--mcp-config",
            config_path.as_str(),
            "--strict-mcp-config",
            "--permission-mode",
            "dontAsk",
            "--disallowedTools",
            "Bash,WebFetch,WebSearch",
            "--allowedTools",
            "mcp__agent-ui",
        ]
    );
    assert_eq!(call.stdin, "one");
    assert!(driver_cli::is_uuid(&state.resume_id));
    // The MCP file: 0600, the bearer as a reference, never the value; removed after the run.
    let file = &call.files[&config_path];
    assert_eq!(file.mode, "600");
    let config: serde_json::Value = serde_json::from_str(&file.contents).unwrap();
    assert_eq!(
        config,
        serde_json::json!({"mcpServers": {"agent-ui": {
            "type": "http", "url": "http://127.0.0.1:4101/mcp",
            "headers": {"Authorization": "Bearer ${UI_TOKEN_A}"}
        }}})
    );
    assert!(!file.contents.contains(SECRET));
    assert!(
        !std::path::Path::new(&config_path).exists(),
        "removed after the run"
    );
    assert!(config_path.starts_with(fake.state_dir().to_str().unwrap()));

    // Resume after a restart: new port and variable, same session.
    let mut resumed = request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    resumed.profile = profile("exact-b", "session-s");
    let response = run(&driver, resumed).await.0.unwrap();
    assert_eq!(response.output, "resumed: two");
    assert_eq!(checkpoint(&response).resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(call.arg_after("--resume"), Some(state.resume_id.as_str()));
    assert!(!call.has_arg("--session-id"));
    let file = &call.files[call.arg_after("--mcp-config").unwrap()];
    assert!(file.contents.contains("http://127.0.0.1:4202/mcp"));
    assert!(file.contents.contains("${UI_TOKEN_B}"));
    assert!(!file.contents.contains("4101") && !file.contents.contains("UI_TOKEN_A"));
    assert!(call.has_env("UI_TOKEN_B") && !call.has_env("UI_TOKEN_A"));

    // Fork: --resume <parent> --fork-session, and a new session id.
    let fork = request("three", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::fork(state.clone()));
    let forked = run(&driver, fork).await.0.unwrap();
    assert_ne!(checkpoint(&forked).resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(call.arg_after("--resume"), Some(state.resume_id.as_str()));
    assert!(call.has_arg("--fork-session"));

    // Stateless: no persistence, no checkpoint.
    let stateless = request("four", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::stateless());
    let response = run(&driver, stateless).await.0.unwrap();
    assert!(fake.last().has_arg("--no-session-persistence"));
    assert!(response.checkpoint.is_none());
}

#[tokio::test]
async fn permission_policies_and_instructions() {
    let fake = fake_claude(claude_like(), &[]);
    let driver = fake.driver(ClaudeCodeOptions::new().with_max_turns(4));
    let argv = |policy: PermissionPolicy| {
        let driver = &driver;
        let fake = &fake;
        async move {
            let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", fake)
                .with_instructions("Be brief.")
                .with_permissions(policy);
            let result = run(driver, req).await.0;
            result.map(|_| fake.last())
        }
    };
    // Writes allowed: acceptEdits; commands and web tools still disallowed by name (Claude
    // Code runs read-only commands in every mode otherwise).
    let call = argv(PermissionPolicy::default().allow(Action::Write))
        .await
        .unwrap();
    assert_eq!(call.arg_after("--permission-mode"), Some("acceptEdits"));
    assert_eq!(
        call.arg_after("--disallowedTools"),
        Some("Bash,WebFetch,WebSearch")
    );
    assert_eq!(call.arg_after("--allowedTools"), Some("mcp__agent-ui"));
    assert_eq!(call.arg_after("--append-system-prompt"), Some("Be brief."));
    assert_eq!(call.arg_after("--max-turns"), Some("4"));
    // Everything allowed, MCP denied.
    let call = argv(PermissionPolicy::allow_all().deny(Action::Mcp))
        .await
        .unwrap();
    assert_eq!(call.arg_after("--disallowedTools"), Some("mcp__agent-ui"));
    assert_eq!(
        call.arg_after("--allowedTools"),
        Some("Bash,WebFetch,WebSearch")
    );
    // Commands without writes: Claude Code has no sandbox to hold them, so it is refused
    // before anything runs.
    let calls = fake.invocations().len();
    let refused = argv(PermissionPolicy::default().allow(Action::Commands)).await;
    assert!(
        matches!(
            refused,
            Err(DriverError::Unsupported(Unsupported::Permission {
                action: Action::Commands,
                permission: Permission::Allow
            }))
        ),
        "{refused:?}"
    );
    assert_eq!(fake.invocations().len(), calls, "nothing ran");
}

#[tokio::test]
async fn the_child_gets_the_namespace_and_no_host_credential() {
    let fake = fake_claude(
        claude_like(),
        &[
            "CLAUDE_CONFIG_DIR",
            "HOME",
            "UI_TOKEN_A",
            "ANTHROPIC_BASE_URL",
            "DISABLE_TELEMETRY",
        ],
    );
    let driver = fake.driver(ClaudeCodeOptions::new().with_base_url("http://127.0.0.1:9"));
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    let call = fake.last();
    assert!(!call.has_env("ANTHROPIC_API_KEY") && !call.has_env("CLAUDE_CODE_OAUTH_TOKEN"));
    assert_eq!(
        call.env["CLAUDE_CONFIG_DIR"],
        fake.state_dir().to_str().unwrap()
    );
    assert!(call.env["HOME"].starts_with(fake.path().to_str().unwrap()));
    assert_eq!(call.env["UI_TOKEN_A"], SECRET);
    assert_eq!(call.env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9");
    assert_eq!(call.env["DISABLE_TELEMETRY"], "1");
    assert!(
        !call
            .argv
            .iter()
            .any(|a| a.contains(SECRET) || a.contains(HOST_CREDENTIAL))
    );
}

#[tokio::test]
async fn an_unknown_session_is_rejected_from_claudes_own_output() {
    let scenario = Scenario::new().rule(
        Rule::when(["--resume"])
            .stderr("No conversation found with session ID: ${ARG_AFTER:--resume}")
            .exit(1),
    );
    let fake = fake_claude(scenario, &[]);
    let driver = fake.driver(ClaudeCodeOptions::new());
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
    // A guard mismatch is rejected before spawning.
    let calls = fake.invocations().len();
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-OTHER"))
        .with_session(SessionContext::continue_only(state));
    assert_eq!(
        run(&driver, req).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::GuardMismatch)
    );
    assert_eq!(fake.invocations().len(), calls);
}

#[tokio::test]
async fn a_required_mcp_server_that_failed_stops_the_run_at_init() {
    let init = r#"{"type":"system","subtype":"init","session_id":"${ARG_AFTER:--session-id}","mcp_servers":[{"name":"agent-ui","status":"failed"}]}"#;
    let fake = fake_claude(
        Scenario::new().rule(Rule::any().stdout(init).sleep_ms(30_000)),
        &[],
    );
    let driver = fake.driver(ClaudeCodeOptions::new());
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::McpUnavailable));
    let Err(DriverError::Failed(failure)) = &result else {
        panic!("{result:?}")
    };
    assert!(
        !failure.message.contains("agent-ui"),
        "names by digest only"
    );
    // The one stop rule: the `system/init` batch that shows the failed server is checked
    // before it is emitted, so the run never started and the failure is the error.
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
    let fake = fake_claude(scenario, &[]);
    let driver = fake.driver(ClaudeCodeOptions::new().with_limits(limits));
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
}

#[tokio::test]
async fn broken_output_crashes_hangs_and_error_results_fail_the_run() {
    let (result, events) = failing(
        Scenario::new().rule(started().stdout("{not json")),
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

    let limits = Limits::default().with_idle_timeout(Duration::from_millis(300));
    let (result, events) = failing(Scenario::new().rule(started().hang()), limits).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert_eq!(check_sequence(&events), Ok(()));

    let max_turns = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","session_id":"${ARG_AFTER:--session-id}"}"#;
    let (result, events) = failing(
        Scenario::new().rule(started().stdout(max_turns).exit(1)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Limit));
    assert_eq!(check_sequence(&events), Ok(()));

    let auth = r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"${ARG_AFTER:--session-id}"}"#;
    let (result, _) = failing(
        Scenario::new().rule(started().stdout(auth).exit(1)),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
}

#[tokio::test]
async fn cancelling_the_run_ends_the_process_group_and_removes_the_mcp_file() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let fake = fake_claude(
        Scenario::new()
            .capture_arg_flag("--mcp-config")
            .rule(started().spawn_grandchild(&pid_file).hang()),
        &[],
    );
    let driver = fake.driver(
        ClaudeCodeOptions::new()
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
    let fake = fake_claude(claude_like(), &[]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    fake.assert_missing_binary_fails(fake.options(), req).await;
}

#[tokio::test]
async fn tool_calls_are_reported_under_the_declared_server_name() {
    let session = "${ARG_AFTER:--session-id}";
    let fake = fake_claude(
        Scenario::new().rule(
            started()
                .stdout(format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"toolu_1","name":"mcp__agent-ui__ping","input":{{"text":"one"}}}}]}},"session_id":"{session}"}}"#))
                .stdout(format!(r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_1","type":"tool_result","content":[{{"type":"text","text":"pong"}}],"is_error":false}}]}},"session_id":"{session}"}}"#))
                .stdout(format!(r#"{{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}}"#)),
        ),
        &[],
    );
    let driver = fake.driver(ClaudeCodeOptions::new());
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(result.unwrap().output, "done");
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(events.contains(&DriverEvent::tool_call_started(
        "toolu_1",
        "mcp__agent-ui__ping"
    )));
    assert!(events.contains(&DriverEvent::tool_call_result("toolu_1", "pong", false)));
}
