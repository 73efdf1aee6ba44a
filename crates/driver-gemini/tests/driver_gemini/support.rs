//! A `gemini` stand-in: the workspace's scripted fake CLI, answering with Gemini's own
//! stream-json event shapes (copied from runs of the pinned `gemini` 0.61.0).

use std::path::PathBuf;

use cli_test_kit::FakeCli;
pub(crate) use cli_test_kit::{checkpoint, failed_kind, run};
use compat_fingerprint::{Fingerprint, Kind};
use driver_gemini::{CommonOptions, GeminiOptions};
use driver_spi::{ProfilePayload, Request, RuntimePayload};
use fake_cli::{CapturedFile, Harness, Invocation, Rule, Scenario};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
use secrecy::SecretString;

/// `--version` of the pinned release.
pub(crate) const VERSION: &str = "0.61.0";

/// The `init` event of session `session_id` (a template).
pub(crate) fn init(session_id: &str) -> String {
    format!(
        r#"{{"type":"init","timestamp":"2026-12-01T01:06:19.295Z","session_id":"{session_id}","model":"gemini-test"}}"#
    )
}

/// A successful `result` event.
pub(crate) const RESULT: &str = r#"{"type":"result","timestamp":"2026-12-01T01:06:19.388Z","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10,"cached":3,"input":17,"duration_ms":94,"tool_calls":0}}"#;

/// The events of a clean text turn on session `session_id` (a template).
pub(crate) fn text_turn(rule: Rule, session_id: &str, text: &str) -> Rule {
    rule.stdout(init(session_id))
        .stdout(r#"{"type":"message","timestamp":"2026-12-01T01:06:19.297Z","role":"user","content":"${STDIN}"}"#)
        .stdout(format!(
            r#"{{"type":"message","timestamp":"2026-12-01T01:06:19.387Z","role":"assistant","content":"{text}","delta":true}}"#
        ))
        .stdout(RESULT)
}

/// The default script: start, resume, fork and stateless turns answer like Gemini. Every
/// file under `GEMINI_CLI_HOME` is recorded with each invocation.
pub(crate) fn gemini_like() -> Scenario {
    Scenario::new()
        .capture_dir_from_env("GEMINI_CLI_HOME")
        .rule(text_turn(
            Rule::when(["--session-file"]),
            "${NEW_UUID}",
            "forked: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::when(["--resume"]),
            "${ARG_AFTER:--resume}",
            "resumed: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::when(["--session-id"]),
            "${ARG_AFTER:--session-id}",
            "started: ${STDIN}",
        ))
        .rule(text_turn(Rule::any(), "${NEW_UUID}", "stateless: ${STDIN}"))
}

/// The fake CLI of these tests: [`FakeCli`] over [`GeminiOptions`].
pub(crate) type FakeGemini = FakeCli<GeminiOptions>;

/// A fake that follows `scenario`, recording the values of `record_env`; the host
/// environment carries this CLI's credential variables.
pub(crate) fn fake_gemini(scenario: Scenario, record_env: &[&str]) -> FakeGemini {
    FakeCli::new(
        scenario,
        VERSION,
        record_env,
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    )
}

/// What these tests read of the fake's namespace beyond [`FakeCli`]'s own.
pub(crate) trait GeminiFake {
    /// Writes a recording of session `id` where Gemini keeps them, as the real CLI does when
    /// a session runs (the fake records nothing); returns its path.
    fn record_session(&self, id: &str) -> PathBuf;

    /// Options with a model, an endpoint and the [`API_KEY`].
    fn keyed_options(&self) -> GeminiOptions;

    /// The `settings.json` an invocation saw, parsed.
    fn settings_json(&self, call: &Invocation) -> serde_json::Value;

    /// The `settings.json` an invocation saw.
    fn settings<'i>(&self, call: &'i Invocation) -> &'i CapturedFile;
}

impl GeminiFake for FakeGemini {
    fn record_session(&self, id: &str) -> PathBuf {
        record_session(self, id)
    }

    fn keyed_options(&self) -> GeminiOptions {
        self.options()
            .with_model("gemini-test")
            .with_base_url("http://127.0.0.1:9")
            .with_api_key(SecretString::from(API_KEY))
    }

    fn settings_json(&self, call: &Invocation) -> serde_json::Value {
        serde_json::from_str(&self.settings(call).contents).expect("JSON settings")
    }

    fn settings<'i>(&self, call: &'i Invocation) -> &'i CapturedFile {
        let path = self.state_dir().join(".gemini/settings.json");
        call.files
            .get(path.to_str().expect("a UTF-8 path"))
            .expect("settings.json was there")
    }
}

// ---------------------------------------------------------------------------------------
// Requests and runs
// ---------------------------------------------------------------------------------------

const K: Kind = Kind::new("driver-gemini tests 2026-11-30 profile v1");
pub(crate) const SECRET: &str = "mcp-canary-secret-5e1f02";
pub(crate) const API_KEY: &str = "AIza-api-key-canary-9c3d7b";

pub(crate) fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str(exact)),
        Fingerprint::of(K, |e| e.str(session)),
    )
}

pub(crate) fn request(prompt: &str, url: &str, var: &str, fake: &FakeGemini) -> Request {
    let mcp = McpServer::streamable_http("agent-tools", url)
        .with_bearer_token_env(var)
        .required(true);
    let service = ServiceRef::new("agent-tools", "Agent tools")
        .with_url(url)
        .with_mcp(mcp.clone())
        .with_secret_env(EnvBinding::new(var, SECRET));
    Request::new(RunId::new("run-1"), prompt, profile("exact-a", "session-s"))
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp([mcp])
        .with_workspace(fake.workspace.to_str().unwrap())
}

/// Writes a recording of session `id` under the harness's `GEMINI_CLI_HOME`, as the real CLI
/// does when a session runs; returns its path.
pub(crate) fn record_session(harness: &Harness, id: &str) -> PathBuf {
    let chats = harness
        .env
        .state_dir(&driver_gemini::RUNTIME.descriptor)
        .expect("the harness serves gemini")
        .join(".gemini/tmp/workspace/chats");
    std::fs::create_dir_all(&chats).expect("chats dir");
    let short = id.get(..8).expect("a UUID");
    let path = chats.join(format!("session-2026-12-01T01-06-{short}.jsonl"));
    let meta = format!(r#"{{"sessionId":"{id}","kind":"main"}}"#);
    std::fs::write(&path, format!("{meta}\n")).expect("recording written");
    path
}
