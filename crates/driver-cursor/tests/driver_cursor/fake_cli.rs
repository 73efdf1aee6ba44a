//! The Cursor driver against the scripted fake CLI: argv, environment, the `mcp.json` a run
//! sees (mode, content, no secret anywhere), resume rejection, `create-chat`, tool calls,
//! broken output, crashes, hangs, cancellation and a missing binary. The namespace rules for
//! `mcp.json` (restore, one turn at a time) are in `namespace.rs`.

use std::path::Path;
use std::time::Duration;

use driver_cursor::{CommonOptions, CreateChatError, create_chat};
use driver_process::command::Limits;
use driver_spi::{
    Driver, DriverError, DriverEvent, FailureKind, ResumeRejectReason, RuntimePayload,
    SessionContext, check_sequence,
};
use fake_cli::{HOST_CREDENTIAL, Rule, Scenario};
use run_service::{EnvBinding, McpServer, ServiceRef};
use serde_json::json;

use crate::fixtures;
use crate::support::{
    CursorFake, HOST_CREDENTIALS, SECRET, STDIO_SECRET, checkpoint, cursor_like, failed_kind,
    fake_cursor, profile, request, run, stored,
};

#[tokio::test]
async fn new_chat_resume_and_stateless_argv_env_and_the_mcp_file() {
    let fake = fake_cursor(cursor_like(), &["CURSOR_CONFIG_DIR", "HOME", "UI_TOKEN_A"]);
    let driver = fake.driver(fake.options());
    let ws = fake.workspace.to_str().unwrap().to_owned();
    let (result, events) = run(
        &driver,
        request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "started: one");
    let state = checkpoint(&response);
    assert!(driver_cli::is_uuid(&state.resume_id));
    let call = fake.last();
    assert_eq!(
        call.argv,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--workspace",
            &ws,
            "--approve-mcps",
            "--trust"
        ]
    );
    assert_eq!(call.stdin, "one");
    assert_eq!(call.cwd, fake.workspace);
    // The environment: the namespace's config dir and HOME; the bearer only as a variable.
    assert_eq!(
        call.env["CURSOR_CONFIG_DIR"],
        fake.state_dir().to_str().unwrap()
    );
    assert!(call.env["HOME"].starts_with(fake.path().to_str().unwrap()));
    assert_eq!(call.env["UI_TOKEN_A"], SECRET);
    assert!(HOST_CREDENTIALS.iter().all(|v| !call.has_env(v)));
    // The MCP file: 0600, the bearer as an env reference, never the value; restored after.
    assert_eq!(
        fake.seen_mcp_json(&call),
        json!({"mcpServers": {"agent-ui": {
            "url": "http://127.0.0.1:4101/mcp",
            "headers": {"Authorization": "Bearer ${env:UI_TOKEN_A}"}
        }}})
    );
    assert!(!fake.mcp_json().exists(), "removed after the run");

    // Resume after a restart: new port and variable, same chat.
    let mut resumed = request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    resumed.profile = profile("exact-b", "session-s");
    let (result, events) = run(&driver, resumed).await;
    let response = result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(response.output, "resumed: two");
    assert_eq!(checkpoint(&response).resume_id, state.resume_id);
    let call = fake.last();
    assert_eq!(
        call.argv,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--workspace",
            &ws,
            "--resume",
            &state.resume_id,
            "--approve-mcps",
            "--trust",
        ]
    );
    let seen = fake.seen_mcp_json(&call).to_string();
    assert!(seen.contains("http://127.0.0.1:4202/mcp") && seen.contains("${env:UI_TOKEN_B}"));
    assert!(!seen.contains("4101") && !seen.contains("UI_TOKEN_A"));
    assert!(call.has_env("UI_TOKEN_B") && !call.has_env("UI_TOKEN_A"));

    // Stateless: a new chat whose id is not returned.
    let stateless = request("three", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::stateless());
    let response = run(&driver, stateless).await.0.unwrap();
    assert!(response.checkpoint.is_none());
    assert!(!fake.last().has_arg("--resume"));

    // A fork is not supported (Cursor has none), refused before spawning.
    let calls = fake.invocations().len();
    let fork = request("four", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        .with_session(SessionContext::fork(state));
    assert!(matches!(
        run(&driver, fork).await.0,
        Err(DriverError::Unsupported(_))
    ));
    assert_eq!(fake.invocations().len(), calls);
}

#[tokio::test]
async fn model_force_trust_instructions_and_a_request_model() {
    let fake = fake_cursor(cursor_like(), &[]);
    let ws = fake.workspace.to_str().unwrap().to_owned();
    let driver = fake.driver(
        fake.options()
            .with_model("gpt-5")
            .with_trust_workspace(false),
    );
    // Everything allowed is `--force`; another policy is refused before anything runs.
    let writes = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_permissions(driver_spi::PermissionPolicy::default().allow(driver_spi::Action::Write));
    assert!(matches!(
        run(&driver, writes).await.0,
        Err(driver_spi::DriverError::Unsupported(
            driver_spi::Unsupported::Permission { .. }
        ))
    ));
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_instructions("Be brief.")
        .with_permissions(driver_spi::PermissionPolicy::allow_all());
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert_eq!(
        call.argv,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--workspace",
            &ws,
            "--model",
            "gpt-5",
            "--approve-mcps",
            "--force"
        ]
    );
    assert_eq!(
        call.stdin,
        "<instructions>\nBe brief.\n</instructions>\n\nhi"
    );
    let req =
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake).with_model("sonnet-4");
    run(&driver, req).await.0.unwrap();
    assert_eq!(fake.last().arg_after("--model"), Some("sonnet-4"));
    // A model that would read as a flag is refused before spawning.
    let calls = fake.invocations().len();
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake).with_model("--force");
    assert!(matches!(
        run(&driver, req).await.0,
        Err(DriverError::InvalidConfig(_))
    ));
    assert_eq!(fake.invocations().len(), calls);
}

/// Walks `dir` and returns every regular file's bytes.
fn files_under(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            files_under(&path, out);
        } else if meta.is_file() {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
}

#[tokio::test]
async fn secrets_reach_the_child_only_as_environment_variables() {
    let fake = fake_cursor(cursor_like(), &["UI_TOKEN_A", "FILES_TOKEN"]);
    let driver = fake.driver(fake.options());
    let stdio = McpServer::stdio("files", "/usr/bin/files-mcp").with_args(["--root", "/srv"]);
    let files = ServiceRef::new("files", "Files")
        .with_mcp(stdio.clone())
        .with_secret_env(EnvBinding::new("FILES_TOKEN", STDIO_SECRET));
    let mut req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let mut services = req.runtime.services.clone();
    services.push(files);
    let http = req.mcp[0].clone();
    req = req
        .with_runtime(RuntimePayload::from_services(services))
        .with_mcp([http, stdio]);
    run(&driver, req).await.0.unwrap();
    let call = fake.last();
    assert_eq!(call.env["FILES_TOKEN"], STDIO_SECRET);
    assert_eq!(
        fake.seen_mcp_json(&call)["mcpServers"]["files"],
        json!({"command": "/usr/bin/files-mcp", "args": ["--root", "/srv"],
               "env": {"FILES_TOKEN": "${env:FILES_TOKEN}"}})
    );
    // No secret in argv, in any file the fake saw, or in any file of the namespace.
    for secret in [SECRET, STDIO_SECRET, HOST_CREDENTIAL] {
        assert!(!call.argv.iter().any(|a| a.contains(secret)));
        assert!(!call.files.values().any(|f| f.contents.contains(secret)));
        let mut written = Vec::new();
        files_under(&fake.path().join("rt"), &mut written);
        for (path, bytes) in &written {
            assert!(
                !String::from_utf8_lossy(bytes).contains(secret),
                "{path} holds a secret"
            );
        }
    }
}

#[tokio::test]
async fn an_unknown_chat_is_rejected() {
    // Cursor fails before `system/init` with a message on stderr (assumed wording).
    let scenario = Scenario::new().rule(
        Rule::when(["--resume"])
            .stderr(fixtures::unknown_chat_stderr())
            .exit(1),
    );
    let fake = fake_cursor(scenario, &[]);
    let driver = fake.driver(fake.options());
    let state = stored("1f9c3813-6aa8-448e-8c61-b9a6080c42ad", &fake);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    let (result, events) = run(&driver, req).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());
    assert!(!fake.mcp_json().exists());

    // Cursor silently starts another chat: its `system/init` names a different id.
    let fake = fake_cursor(
        Scenario::new().rule(crate::support::text_turn(
            Rule::any(),
            fixtures::NEW_CHAT,
            "new",
        )),
        &[],
    );
    let driver = fake.driver(fake.options());
    let state = stored("1f9c3813-6aa8-448e-8c61-b9a6080c42ad", &fake);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(state.clone()));
    let (result, events) = run(&driver, req).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());

    // A guard mismatch and a malformed id are rejected before spawning.
    let calls = fake.invocations().len();
    let mut other = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(state));
    other.profile = profile("exact-a", "session-OTHER");
    assert_eq!(
        run(&driver, other).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::GuardMismatch)
    );
    let name = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(stored("my-chat", &fake)));
    assert_eq!(
        run(&driver, name).await.0.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::InvalidState)
    );
    assert_eq!(fake.invocations().len(), calls);
}

#[tokio::test]
async fn create_chat_gives_an_id_the_first_turn_resumes() {
    let fake = fake_cursor(cursor_like(), &[]);
    let driver = fake.driver(fake.options());
    let chat = create_chat(&driver).await.unwrap();
    assert!(driver_cli::is_uuid(&chat));
    assert_eq!(fake.last().argv, ["create-chat"]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_session(SessionContext::continue_only(stored(&chat, &fake)));
    let response = run(&driver, req).await.0.unwrap();
    assert_eq!(checkpoint(&response).resume_id, chat);
    assert_eq!(fake.last().arg_after("--resume"), Some(chat.as_str()));

    let silent = fake_cursor(Scenario::new().rule(Rule::any().stdout("created")), &[]);
    assert!(matches!(
        create_chat(&silent.driver(silent.options())).await,
        Err(CreateChatError::NoChatId)
    ));
    let failing = fake_cursor(
        Scenario::new().rule(Rule::any().stderr("nope").exit(3)),
        &[],
    );
    assert!(matches!(
        create_chat(&failing.driver(failing.options())).await,
        Err(CreateChatError::Failed { .. })
    ));
}

#[tokio::test]
async fn tool_calls_are_reported_under_the_declared_server_name() {
    let chat = fixtures::NEW_CHAT;
    let fake = fake_cursor(
        Scenario::new().rule(
            Rule::any()
                .stdout(fixtures::init(chat))
                .stdout(fixtures::read_started(chat, "call-read-1"))
                .stdout(fixtures::read_completed(chat, "call-read-1"))
                .stdout(fixtures::mcp_started(
                    chat,
                    "call-mcp-1",
                    "agent-ui",
                    "ping",
                ))
                .stdout(fixtures::mcp_completed(
                    chat,
                    "call-mcp-1",
                    "agent-ui",
                    "ping",
                ))
                .stdout(fixtures::assistant(chat, "done"))
                .stdout(fixtures::result(chat, "done")),
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
    for want in [
        DriverEvent::tool_call_started("call-read-1", "read"),
        DriverEvent::tool_call_arguments("call-read-1", r#"{"path":"sales.csv"}"#),
        DriverEvent::tool_call_started("call-mcp-1", "mcp__agent-ui__ping"),
        DriverEvent::tool_call_arguments("call-mcp-1", r#"{"text":"one"}"#),
        DriverEvent::tool_call_result("call-mcp-1", "pong", false),
    ] {
        assert!(events.contains(&want), "{want:?} missing from {events:?}");
    }
}

fn started() -> Rule {
    Rule::any().stdout(fixtures::init(fixtures::NEW_CHAT))
}

async fn failing(
    scenario: Scenario,
    limits: Limits,
) -> (Result<driver_spi::Response, DriverError>, Vec<DriverEvent>) {
    let fake = fake_cursor(scenario, &[]);
    let driver = fake.driver(fake.options().with_limits(limits));
    let out = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert!(
        !fake.mcp_json().exists(),
        "mcp.json restored after a failure"
    );
    out
}

#[tokio::test]
async fn broken_output_crashes_hangs_and_errors_fail_the_run() {
    let d = Limits::default();
    let (result, events) = failing(Scenario::new().rule(started().stdout("{not json")), d).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));

    let (result, events) = failing(Scenario::new().rule(started().kill_self()), d).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Process));
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(result.unwrap().persistable_checkpoint().is_none());

    let idle = d.with_idle_timeout(Duration::from_millis(300));
    let (result, events) = failing(Scenario::new().rule(started().hang()), idle).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert_eq!(check_sequence(&events), Ok(()));

    let error = fixtures::error_result(fixtures::NEW_CHAT, "model overloaded");
    let (result, events) = failing(Scenario::new().rule(started().stdout(error).exit(1)), d).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::ModelProvider));
    assert_eq!(check_sequence(&events), Ok(()));

    // Cursor's documented failure: non-zero exit, message on stderr, no events.
    let auth = Scenario::new().rule(
        Rule::any()
            .stderr(
                "Error: Authentication required. Please run 'agent login' or set CURSOR_API_KEY",
            )
            .exit(1),
    );
    let (result, events) = failing(auth, d).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Authentication));
    assert!(matches!(result, Err(DriverError::Failed(_))) && events.is_empty());

    // A clean exit without a result is a protocol failure.
    let (result, events) = failing(Scenario::new().rule(started()), d).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Protocol));
    assert_eq!(check_sequence(&events), Ok(()));
}

#[tokio::test]
async fn cancelling_the_run_ends_the_process_group_and_restores_mcp_json() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let scenario = Scenario::new()
        .capture_dir_from_env("CURSOR_CONFIG_DIR")
        .rule(started().spawn_grandchild(&pid_file).hang());
    let fake = fake_cursor(scenario, &[]);
    let driver = fake.driver(
        fake.options()
            .with_limits(Limits::default().with_kill_grace(Duration::from_millis(500))),
    );
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let (call, _) = fake.cancel_mid_turn(&driver, req, &pid_file).await;
    let installed = fake.mcp_json();
    assert!(
        call.files.contains_key(installed.to_str().unwrap()),
        "installed during the turn"
    );
    assert!(
        !fake.mcp_json().exists(),
        "mcp.json restored on cancellation"
    );
}

#[tokio::test]
async fn a_missing_binary_is_a_typed_error() {
    let fake = fake_cursor(cursor_like(), &[]);
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    let driver = fake.assert_missing_binary_fails(fake.options(), req).await;
    assert!(matches!(
        create_chat(&driver).await,
        Err(CreateChatError::Cli(
            driver_process::error::ProcessError::NotFound { .. }
        ))
    ));
    assert!(!fake.mcp_json().exists());
}

/// With `PromptTransport::Argument` (for builds that ignore stdin) the prompt is argv's last
/// element and stdin is empty; a prompt the CLI would read as a flag is refused before
/// anything is spawned.
#[tokio::test]
async fn the_prompt_can_travel_as_the_last_argument() {
    use driver_cursor::PromptTransport;

    let fake = fake_cursor(cursor_like(), &[]);
    let options = fake
        .options()
        .with_prompt_transport(PromptTransport::Argument);
    let driver = fake.driver(options);
    let (result, events) = run(
        &driver,
        request("say one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    let call = fake.last();
    assert_eq!(call.argv.last().map(String::as_str), Some("say one"));
    assert_eq!(call.stdin, "");
    let calls_before = fake.invocations().len();

    let (result, _) = run(
        &driver,
        request(
            "--force rm",
            "http://127.0.0.1:4101/mcp",
            "UI_TOKEN_A",
            &fake,
        ),
    )
    .await;
    assert!(
        matches!(result, Err(DriverError::InvalidConfig(_))),
        "{result:?}"
    );
    assert_eq!(
        fake.invocations().len(),
        calls_before,
        "nothing was spawned"
    );
}

/// The config fingerprint is in every stored Thread: it must stay the one the driver has
/// always computed (driver type, model, `trust_workspace`, `force`, namespace, isolation
/// level, in that order), and the binary and prompt transport are not part of it.
#[test]
fn the_config_fingerprint_is_unchanged() {
    use driver_cursor::PromptTransport;
    use driver_spi::ConfigFingerprintBuilder;

    let fake = fake_cursor(cursor_like(), &[]);
    let expected = |model: Option<&str>, trust: bool, force: bool| {
        ConfigFingerprintBuilder::new("cursor")
            .opt_str("model", model)
            .bool("trust_workspace", trust)
            .bool("force", force)
            .str("namespace", fake.env.namespace().as_str())
            .str("isolation_level", fake.env.level().name())
            .finish()
    };
    let of = |options| {
        let driver = fake.driver(options);
        driver.config_fingerprinter().unwrap().config_fingerprint()
    };
    assert_eq!(of(fake.options()), expected(None, true, false));
    let tuned = fake
        .options()
        .with_model("gpt-5")
        .with_trust_workspace(false)
        .with_prompt_transport(PromptTransport::Argument);
    assert_eq!(of(tuned), expected(Some("gpt-5"), false, false));
}
