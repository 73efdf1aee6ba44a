//! A `cursor-agent` stand-in: the workspace's scripted fake CLI, printing the lines of
//! [`fixtures`](super::fixtures) (Cursor's documented stream-json shapes).

use std::path::PathBuf;

use super::fixtures::{self, NEW_CHAT, RESUMED_CHAT};
use cli_test_kit::FakeCli;
pub(crate) use cli_test_kit::{checkpoint, failed_kind, run};
use compat_fingerprint::{Fingerprint, Kind};
use driver_cursor::CursorOptions;
use driver_spi::{ProfilePayload, Request, RuntimePayload, SessionGuard, SessionState};
use fake_cli::{Rule, Scenario};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

/// The credential variables the host environment carries; the child must never see them.
pub(crate) const HOST_CREDENTIALS: &[&str] = &["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"];

/// The events of a clean text turn on chat `chat` (a template).
pub(crate) fn text_turn(rule: Rule, chat: &str, text: &str) -> Rule {
    rule.stdout(fixtures::init(chat))
        .stdout(fixtures::user(chat))
        .stdout(fixtures::assistant(chat, text))
        .stdout(fixtures::result(chat, text))
}

/// The default script: `create-chat`, new chats and resumes answer like Cursor; every
/// invocation records the files of its `CURSOR_CONFIG_DIR` (`mcp.json`).
pub(crate) fn cursor_like() -> Scenario {
    Scenario::new()
        .capture_dir_from_env("CURSOR_CONFIG_DIR")
        .rule(Rule::when(["create-chat"]).stdout(fixtures::created_chat()))
        .rule(text_turn(
            Rule::when(["--resume"]),
            RESUMED_CHAT,
            "resumed: ${STDIN}",
        ))
        .rule(text_turn(Rule::any(), NEW_CHAT, "started: ${STDIN}"))
}

/// The fake CLI of these tests: [`FakeCli`] over [`CursorOptions`].
pub(crate) type FakeCursor = FakeCli<CursorOptions>;

/// A fake that follows `scenario`, recording the values of `record_env`; the host
/// environment carries this CLI's credential variables.
pub(crate) fn fake_cursor(scenario: Scenario, record_env: &[&str]) -> FakeCursor {
    FakeCli::new(scenario, fixtures::VERSION, record_env, HOST_CREDENTIALS)
}

/// What these tests read of the fake's namespace beyond [`FakeCli`]'s own.
pub(crate) trait CursorFake {
    /// The namespace's `mcp.json`.
    fn mcp_json(&self) -> PathBuf;

    /// The `mcp.json` an invocation saw, parsed.
    fn seen_mcp_json(&self, call: &fake_cli::Invocation) -> serde_json::Value;
}

impl CursorFake for FakeCursor {
    fn mcp_json(&self) -> PathBuf {
        self.state_dir().join("mcp.json")
    }

    fn seen_mcp_json(&self, call: &fake_cli::Invocation) -> serde_json::Value {
        let file = &call.files[self.mcp_json().to_str().expect("UTF-8 path")];
        assert_eq!(file.mode, "600", "mcp.json must be private");
        serde_json::from_str(&file.contents).expect("mcp.json is JSON")
    }
}

const K: Kind = Kind::new("driver-cursor tests 2026-11-30 profile v1");
pub(crate) const SECRET: &str = "mcp-canary-secret-5c1d9e";
pub(crate) const STDIO_SECRET: &str = "stdio-canary-secret-0a7b33";

pub(crate) fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str(exact)),
        Fingerprint::of(K, |e| e.str(session)),
    )
}

pub(crate) fn request(prompt: &str, url: &str, var: &str, fake: &FakeCursor) -> Request {
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

/// A stored state for `chat` that a request with session profile `session-s` accepts.
pub(crate) fn stored(chat: &str, fake: &FakeCursor) -> SessionState {
    let mut state = SessionState::new(chat);
    SessionGuard::new(
        profile("any", "session-s").session_compatibility,
        fake.workspace.to_str(),
    )
    .write_to(&mut state);
    state
}
