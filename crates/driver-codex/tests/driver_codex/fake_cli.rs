//! The Codex driver against the scripted fake CLI: exact argv, environment, configuration,
//! resume rejection, broken output, hangs, cancellation, a missing or too-old binary.

use std::time::Duration;

use crate::support::{FakeCodex, codex_like, fake_codex, overrides, text_turn};
use cli_test_kit::{checkpoint, failed_kind, run};
use compat_fingerprint::{Fingerprint, Kind};
use driver_codex::{CodexOptions, CommonOptions, ModelProvider, ReasoningEffort};
use driver_process::command::Limits;
use driver_spi::{
    Action, DriverError, DriverEvent, ExitStatus, FailureKind, PermissionPolicy, ProfilePayload,
    Request, ResumeRejectReason, RuntimePayload, SessionContext, SessionState, Unsupported,
    check_sequence,
};
use fake_cli::HOST_CREDENTIAL;
use fake_cli::{Rule, Scenario};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

const K: Kind = Kind::new("driver-codex tests 2026-11-30 profile v1");

fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str(exact)),
        Fingerprint::of(K, |e| e.str(session)),
    )
}

const SECRET: &str = "mcp-canary-secret-9f3e1a";

/// A request with one streamable-HTTP MCP server at `url`, whose bearer travels in `var`.
fn request(prompt: &str, url: &str, var: &str, fake: &FakeCodex) -> Request {
    let mcp = McpServer::streamable_http("agent-ui", url).with_bearer_token_env(var);
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
async fn start_argv_is_exact_and_the_prompt_goes_on_stdin() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new().with_model("gpt-test"));
    let req = request("hello", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (result, events) = run(&driver, req).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "started: hello");
    assert_eq!(response.usage.unwrap().cached_input_tokens, 3);
    let call = fake.last();
    assert_eq!(
        call.argv,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ignore-user-config",
            "-c",
            r#"approval_policy="never""#,
            "-c",
            r#"sandbox_mode="read-only""#,
            "-c",
            "features.shell_tool=false",
            "-c",
            "features.unified_exec=false",
            "-c",
            r#"model="gpt-test""#,
            "-c",
            "features.unbounded_connection_retries=false",
            "-c",
            r#"mcp_servers.agent-ui.url="http://127.0.0.1:4101/mcp""#,
            "-c",
            r#"mcp_servers.agent-ui.bearer_token_env_var="UI_TOKEN_A""#,
            "-c",
            r#"mcp_servers.agent-ui.default_tools_approval_mode="approve""#,
            "-",
        ]
    );
    assert_eq!(call.stdin, "hello");
    assert_eq!(call.cwd, fake.workspace);
    let state = checkpoint(&response);
    assert_eq!(state.resume_id.len(), 36, "a UUID thread id");
}

#[tokio::test]
async fn resume_applies_the_current_request_and_fork_gets_a_new_thread() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new());
    let first = request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let state = checkpoint(&run(&driver, first).await.0.unwrap());

    // A restarted host: new port, new env-var name, same session-compatibility fingerprint.
    let mut resumed = request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    resumed.profile = profile("exact-b", "session-s");
    let (result, events) = run(&driver, resumed).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "resumed: two");
    assert_eq!(checkpoint(&response).resume_id, state.resume_id);
    let call = fake.last();
    let n = call.argv.len();
    assert_eq!(
        &call.argv[n - 3..],
        ["resume", state.resume_id.as_str(), "-"]
    );
    let c = overrides(&call.argv);
    assert_eq!(
        c["mcp_servers.agent-ui.url"].as_str(),
        Some("http://127.0.0.1:4202/mcp")
    );
    assert_eq!(
        c["mcp_servers.agent-ui.bearer_token_env_var"].as_str(),
        Some("UI_TOKEN_B")
    );
    assert!(call.has_env("UI_TOKEN_B") && !call.has_env("UI_TOKEN_A"));

    let fork = request("three", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::fork(state.clone()));
    let forked = run(&driver, fork).await.0.unwrap();
    assert_eq!(forked.output, "forked: three");
    let child = checkpoint(&forked);
    assert_ne!(child.resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(
        &call.argv[call.argv.len() - 3..],
        ["fork", state.resume_id.as_str(), "-"]
    );
}

#[tokio::test]
async fn every_option_has_its_flag() {
    let fake = fake_codex(codex_like(), &[]);
    let options = CodexOptions::new()
        .with_model("gpt-default")
        .with_reasoning_effort(ReasoningEffort::High)
        .with_model_provider(
            ModelProvider::new("gateway", "http://127.0.0.1:9/v1")
                .with_env_key("GATEWAY_KEY")
                .with_request_max_retries(0)
                .with_stream_max_retries(1),
        )
        .with_unbounded_connection_retries(true)
        .with_hermetic_config(false)
        .with_skip_git_repo_check(false);
    let driver = fake.driver(options);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_model("gpt-override")
        .with_instructions("Be brief.\nAlways.")
        .with_permissions(PermissionPolicy::allow_all());
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert!(!call.has_arg("--skip-git-repo-check"));
    assert!(!call.has_arg("--ignore-user-config"));
    assert!(!call.has_arg("--ephemeral"));
    let c = overrides(&call.argv);
    let s = |k: &str| c[k].as_str().unwrap().to_owned();
    assert_eq!(s("model"), "gpt-override");
    assert_eq!(s("model_reasoning_effort"), "high");
    assert_eq!(s("sandbox_mode"), "workspace-write");
    assert_eq!(s("approval_policy"), "never");
    assert_eq!(s("developer_instructions"), "Be brief.\nAlways.");
    assert_eq!(s("model_provider"), "gateway");
    assert_eq!(
        s("model_providers.gateway.base_url"),
        "http://127.0.0.1:9/v1"
    );
    assert_eq!(s("model_providers.gateway.wire_api"), "responses");
    assert_eq!(s("model_providers.gateway.env_key"), "GATEWAY_KEY");
    assert_eq!(
        c["model_providers.gateway.request_max_retries"].as_integer(),
        Some(0)
    );
    assert_eq!(
        c["model_providers.gateway.stream_max_retries"].as_integer(),
        Some(1)
    );
    assert!(!c.contains_key("features.unbounded_connection_retries"));

    assert_eq!(
        c["sandbox_workspace_write.network_access"].as_bool(),
        Some(true)
    );
    assert!(!c.contains_key("features.shell_tool"), "commands allowed");
    assert_eq!(
        s("mcp_servers.agent-ui.default_tools_approval_mode"),
        "approve"
    );

    // MCP denied: no per-server approval, so Codex refuses the calls (approval `never`).
    let never = fake.driver(CodexOptions::new());
    let denied = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_permissions(PermissionPolicy::default().deny(Action::Mcp));
    run(&never, denied).await.0.unwrap();
    let c = overrides(&fake.last().argv);
    assert!(!c.contains_key("mcp_servers.agent-ui.default_tools_approval_mode"));
    assert_eq!(c["approval_policy"].as_str(), Some("never"));

    // What Codex cannot enforce is refused before anything runs: network without writes.
    let calls = fake.invocations().len();
    let refused = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_permissions(PermissionPolicy::default().allow(Action::Network));
    assert!(matches!(
        run(&never, refused).await.0,
        Err(DriverError::Unsupported(Unsupported::Permission {
            action: Action::Network,
            ..
        }))
    ));
    assert_eq!(fake.invocations().len(), calls);

    // Stateless: --ephemeral and no checkpoint.
    let stateless = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::stateless());
    let response = run(&never, stateless).await.0.unwrap();
    assert!(fake.last().has_arg("--ephemeral"));
    assert!(response.checkpoint.is_none());
}

#[tokio::test]
async fn stdio_servers_get_their_service_secrets_forwarded_by_name() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new());
    let mcp = McpServer::stdio("files", "/usr/bin/files-mcp")
        .with_args(["--root", "/srv"])
        .with_env("MODE", "ro");
    let service = ServiceRef::new("files", "Files")
        .with_mcp(mcp.clone())
        .with_secret_env(EnvBinding::new("FILES_TOKEN", SECRET));
    let req = Request::new(RunId::new("r"), "hi", profile("a", "s"))
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp([mcp]);
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    let c = overrides(&call.argv);
    assert_eq!(
        c["mcp_servers.files.command"].as_str(),
        Some("/usr/bin/files-mcp")
    );
    assert_eq!(
        c["mcp_servers.files.args"],
        toml::Value::Array(vec!["--root".into(), "/srv".into()])
    );
    assert_eq!(c["mcp_servers.files.env"]["MODE"].as_str(), Some("ro"));
    assert_eq!(
        c["mcp_servers.files.env_vars"],
        toml::Value::Array(vec!["FILES_TOKEN".into()])
    );
    assert!(!call.argv.iter().any(|a| a.contains(SECRET)));
}

#[tokio::test]
async fn the_child_gets_the_namespace_and_the_request_secrets_and_no_host_credential() {
    let fake = fake_codex(
        codex_like(),
        &["CODEX_HOME", "HOME", "UI_TOKEN_A", "OPENAI_API_KEY"],
    );
    let driver = fake.driver(CodexOptions::new());
    // The driver is bound to its environment's namespace: the agent's Threads are its.
    let namespace = fake.env.namespace().as_str();
    assert_eq!(
        driver_spi::Driver::credential_namespace(&driver),
        Some(namespace)
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert!(!call.has_env("OPENAI_API_KEY") && !call.has_env("CODEX_API_KEY"));
    assert_eq!(
        call.env["CODEX_HOME"],
        fake.state_dir().to_str().unwrap(),
        "CODEX_HOME is the namespace's"
    );
    assert!(call.env["HOME"].starts_with(fake.path().to_str().unwrap()));
    assert_eq!(call.env["UI_TOKEN_A"], SECRET, "the secret reaches the env");
    // ... and nowhere else: not argv, not stdin, not a file the driver left in CODEX_HOME.
    assert!(!call.argv.iter().any(|a| a.contains(SECRET)));
    assert!(!call.stdin.contains(SECRET));
    for entry in walk(&fake.state_dir()) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(!text.contains(SECRET), "{}", entry.display());
        assert!(!text.contains(HOST_CREDENTIAL), "{}", entry.display());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[tokio::test]
async fn concurrent_runs_in_one_namespace_keep_their_own_configuration() {
    let fake = fake_codex(
        Scenario::new().rule(text_turn(Rule::any().sleep_ms(200), "${NEW_UUID}", "ok")),
        &[],
    );
    let driver = fake.driver(CodexOptions::new());
    let a = request("a", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let b = request("b", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake);
    let (ra, rb) = tokio::join!(run(&driver, a), run(&driver, b));
    ra.0.unwrap();
    rb.0.unwrap();
    for call in fake.invocations() {
        let c = overrides(&call.argv);
        let url = c["mcp_servers.agent-ui.url"].as_str().unwrap();
        let expected = if call.stdin == "a" { "4101" } else { "4202" };
        assert!(url.contains(expected), "{url} for {}", call.stdin);
    }
}

#[tokio::test]
async fn an_unknown_thread_is_rejected_from_codexs_own_output() {
    let scenario = Scenario::new()
        .rule(
            Rule::when(["resume"])
                .stderr("Error: thread/resume: no rollout found for thread id ${ARG_AFTER:resume}")
                .exit(1),
        )
        .rule(
            Rule::when(["fork"])
                .stderr("Error: something else broke")
                .exit(1),
        );
    let fake = fake_codex(scenario, &[]);
    let driver = fake.driver(CodexOptions::new());
    let gone = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
    let mut state = gone.clone();
    driver_spi::SessionGuard::new(profile("x", "session-s").session_compatibility, None)
        .write_to(&mut state);
    let req = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-s"))
        .with_session(SessionContext::continue_only(state.clone()));
    let (result, events) = run(&driver, req).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty(), "rejected before any event: {events:?}");

    // A different failure of the same exit code is not a rejection.
    let fork = Request::new(RunId::new("r"), "hi", profile("exact-a", "session-s"))
        .with_session(SessionContext::fork(state));
    let (result, _) = run(&driver, fork).await;
    assert!(
        matches!(result, Err(DriverError::Failed(ref f)) if f.kind == FailureKind::Process),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_guard_mismatch_or_missing_state_is_rejected_before_spawning() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new());
    let state = checkpoint(
        &run(
            &driver,
            request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
        )
        .await
        .0
        .unwrap(),
    );
    let calls = fake.invocations().len();
    let mut changed = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(state));
    changed.profile = profile("exact-a", "session-CHANGED");
    assert_eq!(
        run(&driver, changed).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::GuardMismatch)
    );
    let mut missing = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(SessionState::new("x")));
    missing.session.state = None;
    assert_eq!(
        run(&driver, missing).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::MissingState)
    );
    let flag = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(SessionState::new("--last")));
    assert_eq!(
        run(&driver, flag).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::InvalidState)
    );
    // Thread names are not resumed or forked: Codex would start a new thread when none
    // matches. Only a thread UUID reaches argv.
    for bad in [
        "",
        "--last",
        "a b",
        "my-thread-name",
        "01a22df3-cb69-70f3",
        "01a22df3-293f-7f41-947b-cff0d35cc64g",
        "01a22df3_293f-7f41-947b-cff0d35cc64e",
    ] {
        for session in [
            SessionContext::continue_only(SessionState::new(bad)),
            SessionContext::fork(SessionState::new(bad)),
        ] {
            let req = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
                .with_session(session);
            assert_eq!(
                driver.command_line(&req).unwrap_err(),
                DriverError::resume_rejected(ResumeRejectReason::InvalidState),
                "{bad:?}"
            );
            assert_eq!(
                run(&driver, req).await.0.unwrap_err(),
                DriverError::resume_rejected(ResumeRejectReason::InvalidState),
                "{bad:?}"
            );
        }
    }
    assert_eq!(fake.invocations().len(), calls, "codex was not spawned");
}

async fn failing(
    scenario: Scenario,
    limits: Limits,
) -> (Result<driver_spi::Response, DriverError>, Vec<DriverEvent>) {
    let fake = fake_codex(scenario, &[]);
    let driver = fake.driver(CodexOptions::new().with_limits(limits));
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    run(&driver, req).await
}

fn started() -> Rule {
    Rule::any()
        .stdout(r#"{"type":"thread.started","thread_id":"${NEW_UUID}"}"#)
        .stdout(r#"{"type":"turn.started"}"#)
}

#[tokio::test]
async fn malformed_jsonl_is_a_protocol_failure() {
    let (result, events) = failing(
        Scenario::new().rule(started().stdout("{not json")),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(
        events.last(),
        Some(&DriverEvent::RunFailed {
            kind: FailureKind::Protocol
        })
    );
}

#[tokio::test]
async fn an_over_long_line_is_refused_without_buffering_it() {
    let limits = Limits::default().with_max_line_bytes(64 << 10);
    let (result, events) = failing(
        Scenario::new().rule(started().stdout_unterminated_bytes(8 << 20)),
        limits,
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn a_crash_mid_stream_fails_the_run_and_keeps_no_checkpoint() {
    let (result, events) = failing(
        Scenario::new().rule(
            started()
                .stdout(r#"{"type":"item.started","item":{"id":"c1","type":"command_execution","command":"make"}}"#)
                .kill_self(),
        ),
        Limits::default(),
    )
    .await;
    let response = result.unwrap();
    assert_eq!(response.exit, ExitStatus::Signal(9));
    assert_eq!(
        response.failure.as_ref().unwrap().kind,
        FailureKind::Process
    );
    assert!(response.persistable_checkpoint().is_none());
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn exit_zero_without_a_completed_turn_is_not_clean() {
    let (result, _) = failing(Scenario::new().rule(started()), Limits::default()).await;
    let response = result.unwrap();
    assert_eq!(response.failure.unwrap().kind, FailureKind::Protocol);
}

#[tokio::test]
async fn a_turn_failure_is_classified() {
    let (result, events) = failing(
        Scenario::new().rule(
            started()
                .stdout(r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}"#)
                .exit(1),
        ),
        Limits::default(),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn a_hang_hits_the_idle_timeout() {
    let limits = Limits::default().with_idle_timeout(Duration::from_millis(300));
    let (result, events) = failing(Scenario::new().rule(started().hang()), limits).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn cancelling_the_run_ends_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let grandchild_pid = dir.path().join("grandchild.pid");
    let fake = fake_codex(
        Scenario::new().rule(started().spawn_grandchild(&grandchild_pid).hang()),
        &[],
    );
    let driver = fake.driver(
        CodexOptions::new()
            .with_limits(Limits::default().with_kill_grace(Duration::from_millis(500))),
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (_, events) = fake.cancel_mid_turn(&driver, req, &grandchild_pid).await;
    assert_eq!(events, [DriverEvent::RunStarted]);
}

#[tokio::test]
async fn a_missing_binary_is_a_typed_error() {
    let fake = fake_codex(codex_like(), &[]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    fake.assert_missing_binary_fails(CodexOptions::new(), req)
        .await;
}

#[tokio::test]
async fn a_too_old_codex_is_refused_before_any_turn() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(
        CodexOptions::new().with_minimum_version(driver_process::version::Version::new(0, 170, 0)),
    );
    let err = driver.check_version().await.unwrap_err();
    assert!(
        matches!(
            err,
            driver_process::error::ProcessError::VersionTooOld { .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("0.169.0"));
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (result, events) = run(&driver, req).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Process));
    assert!(events.is_empty());
    assert!(fake.invocations().is_empty(), "no turn was attempted");
}

#[tokio::test]
async fn invalid_server_names_and_sse_are_refused_before_spawning() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new());
    let bad = McpServer::streamable_http("a.b", "http://127.0.0.1:1/mcp");
    let req = Request::new(RunId::new("r"), "hi", profile("a", "s")).with_mcp([bad]);
    assert!(matches!(
        run(&driver, req).await.0,
        Err(DriverError::InvalidConfig(_))
    ));
    let sse = McpServer::sse("legacy", "http://127.0.0.1:1/sse");
    let req = Request::new(RunId::new("r"), "hi", profile("a", "s")).with_mcp([sse]);
    assert!(matches!(
        run(&driver, req).await.0,
        Err(DriverError::Unsupported(_))
    ));
    assert!(fake.invocations().is_empty());
}

#[tokio::test]
async fn a_resume_that_reports_another_thread_is_rejected() {
    // Codex takes an id it does not know as a thread *name* and may start a new thread.
    let fake = fake_codex(
        Scenario::new()
            .rule(text_turn(
                Rule::when(["resume"]),
                "${NEW_UUID}",
                "new thread",
            ))
            .rule(text_turn(Rule::any(), "${NEW_UUID}", "started")),
        &[],
    );
    let driver = fake.driver(CodexOptions::new());
    let first = request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let state = checkpoint(&run(&driver, first).await.0.unwrap());
    let resumed = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(state));
    let (result, events) = run(&driver, resumed).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty(), "{events:?}");
}

#[tokio::test]
async fn usage_is_reported_per_turn_although_codex_reports_thread_totals() {
    let total = |input: u64, cached: u64, output: u64| {
        format!(
            r#"{{"type":"turn.completed","usage":{{"input_tokens":{input},"cached_input_tokens":{cached},"output_tokens":{output}}}}}"#
        )
    };
    let turn = |rule: Rule, id: &str| {
        rule.stdout(format!(r#"{{"type":"thread.started","thread_id":"{id}"}}"#))
            .stdout(
                r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"ok"}}"#,
            )
    };
    let fake = fake_codex(
        Scenario::new()
            .rule(turn(Rule::when(["resume"]), "${ARG_AFTER:resume}").stdout(total(27, 6, 16)))
            .rule(turn(Rule::any(), "${NEW_UUID}").stdout(total(11, 3, 7))),
        &[],
    );
    let driver = fake.driver(CodexOptions::new());
    let first = run(
        &driver,
        request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    assert_eq!(
        first.usage,
        Some(driver_spi::Usage::new(11, 7).with_cached_input_tokens(3))
    );
    let resumed = request("two", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(checkpoint(&first)));
    let second = run(&driver, resumed).await.0.unwrap();
    assert_eq!(
        second.usage,
        Some(driver_spi::Usage::new(16, 9).with_cached_input_tokens(3))
    );
    assert_eq!(
        checkpoint(&second)
            .data
            .get("codex.usage_total")
            .map(String::as_str),
        Some("27,6,16")
    );
}

#[tokio::test]
async fn invalid_servers_are_refused_before_the_version_probe() {
    let fake = fake_codex(codex_like(), &[]);
    // No binary at all: a request that got past the checks would fail the version probe.
    let driver = fake.driver_without_binary(CodexOptions::new());
    let servers = [
        McpServer::streamable_http("x", "http://127.0.0.1:1/mcp"),
        McpServer::streamable_http("x", "http://127.0.0.1:2/mcp"),
    ];
    let req = Request::new(RunId::new("r"), "hi", profile("a", "s")).with_mcp(servers);
    assert!(matches!(
        driver.command_line(&req),
        Err(DriverError::InvalidConfig(_))
    ));
    assert!(matches!(
        run(&driver, req).await.0,
        Err(DriverError::InvalidConfig(_))
    ));
    let provider = fake.driver_without_binary(
        CodexOptions::new().with_model_provider(ModelProvider::new("a.b", "http://127.0.0.1:9/v1")),
    );
    let req = Request::new(RunId::new("r"), "hi", profile("a", "s"));
    assert!(matches!(
        run(&provider, req).await.0,
        Err(DriverError::InvalidConfig(_))
    ));
}

/// The config fingerprint is part of every stored Thread: it is built exactly as before the
/// driver became a dialect (model, the Codex fields in this order, namespace, isolation).
#[test]
fn the_config_fingerprint_is_unchanged() {
    use driver_spi::{ConfigFingerprintBuilder, ConfigFingerprinter};
    let fake = fake_codex(codex_like(), &[]);
    let env = fake.env.clone();
    let before = |model: Option<&str>,
                  effort: Option<&str>,
                  sandbox: &str,
                  approval: &str,
                  provider: Option<(&str, &str, &str, Option<&str>)>,
                  hermetic: bool,
                  skip_git: bool| {
        ConfigFingerprintBuilder::new("codex")
            .opt_str("model", model)
            .opt_str("reasoning_effort", effort)
            .str("sandbox", sandbox)
            .str("mcp_approval", approval)
            .opt_str("provider.id", provider.map(|p| p.0))
            .opt_str("provider.base_url", provider.map(|p| p.1))
            .opt_str("provider.wire_api", provider.map(|p| p.2))
            .opt_str("provider.env_key", provider.and_then(|p| p.3))
            .bool("hermetic_config", hermetic)
            .bool("skip_git_repo_check", skip_git)
            .str("namespace", env.namespace().as_str())
            .str("isolation_level", env.level().name())
            .finish()
    };
    let default = fake.driver(CodexOptions::new());
    assert_eq!(
        default.config_fingerprint(),
        before(
            None,
            None,
            "read-only",
            "approve_request_servers",
            None,
            true,
            true
        )
    );
    let every = fake.driver(
        CodexOptions::new()
            .with_model("gpt-x")
            .with_reasoning_effort(ReasoningEffort::High)
            .with_model_provider(
                ModelProvider::new("gw", "http://127.0.0.1:9/v1")
                    .with_env_key("GW_KEY")
                    .with_request_max_retries(3),
            )
            .with_hermetic_config(false)
            .with_skip_git_repo_check(false)
            .with_unbounded_connection_retries(true)
            .with_limits(Limits::default().with_idle_timeout(Duration::from_secs(5))),
    );
    assert_eq!(
        every.config_fingerprint(),
        before(
            Some("gpt-x"),
            Some("high"),
            "read-only",
            "approve_request_servers",
            Some(("gw", "http://127.0.0.1:9/v1", "responses", Some("GW_KEY"))),
            false,
            false
        )
    );
}

/// A run service's binding that would preload a library, hook the interpreter, move the model
/// endpoint or replace the model key fails the run before the CLI starts, naming the class.
#[tokio::test]
async fn a_service_binding_may_not_set_the_loader_interpreter_endpoint_or_model_key() {
    let fake = fake_codex(codex_like(), &[]);
    let driver = fake.driver(CodexOptions::new());
    for (name, class) in [
        ("LD_PRELOAD", "a dynamic-loader variable"),
        ("NODE_OPTIONS", "an interpreter or shell start-up variable"),
        ("OPENAI_BASE_URL", "a model-endpoint variable"),
        ("HTTPS_PROXY", "a proxy variable"),
        ("OPENAI_API_KEY", "the runtime's model credential"),
    ] {
        let service =
            ServiceRef::new("evil", "Evil").with_secret_env(EnvBinding::new(name, SECRET));
        let req = Request::new(RunId::new("r"), "hi", profile("a", "s"))
            .with_runtime(RuntimePayload::from_services([service]));
        let (result, _) = run(&driver, req).await;
        let Err(DriverError::Failed(failure)) = result else {
            panic!("{name}: {result:?}");
        };
        assert_eq!(failure.kind, FailureKind::Other);
        assert!(
            failure.message.contains(class),
            "{name}: {}",
            failure.message
        );
        assert!(!failure.message.contains(SECRET));
    }
    assert!(
        fake.invocations()
            .iter()
            .all(|call| call.argv == ["--version"]),
        "the CLI never ran a turn"
    );
}
