//! A scripted fake ACP agent: the workspace's fake CLI in serve mode, answering the shapes
//! `gemini --acp` and `codebuddy --acp` were observed to send (`docs/acp-agents-observed.md`),
//! registered at run time as an agent of its own (`fake_acp`) by its command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use driver_acp::{
    AcpAgentBuilder, AcpCapabilities, AcpDriver, AcpOptions, CommonOptions, Limits, PoolLimits,
    ProcessMode,
};
use driver_cli::Runtime;
use driver_spi::{ProfilePayload, Request, RuntimePayload, SessionContext, SessionState};
use fake_cli::{Harness, LineRule, Scenario, read_served_lines};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

pub(crate) const INITIALIZE: &str = r#""method":"initialize""#;
pub(crate) const NEW: &str = r#""method":"session/new""#;
pub(crate) const LOAD: &str = r#""method":"session/load""#;
pub(crate) const PROMPT: &str = r#""method":"session/prompt""#;
pub(crate) const CANCEL: &str = r#""method":"session/cancel""#;

/// The option ids the fake's permission requests offer (picked by kind, never by id).
pub(crate) const ALLOW_ONCE: &str = r#""optionId":"opt-allow-once""#;
pub(crate) const ALLOW_ALWAYS: &str = r#""optionId":"opt-allow-always""#;
pub(crate) const REJECT_ONCE: &str = r#""optionId":"opt-reject-once""#;
pub(crate) const CANCELLED: &str = r#"{"outcome":{"outcome":"cancelled"}}"#;

/// Text every replayed message carries: never the turn's.
pub(crate) const REPLAYED: &str = "REPLAYED";

/// The key variable of the fake agents.
pub(crate) const KEY_VAR: &str = "FAKE_ACP_API_KEY";

/// `fake_acp`: an agent registered by its command, which loads sessions and takes HTTP and
/// SSE MCP servers.
pub(crate) fn agent() -> &'static Runtime {
    builder("fake_acp")
        .register()
        .expect("the fake agent registers")
}

/// `fake_acp_empty`: like [`agent`], but a load that replays nothing means an unknown session.
pub(crate) fn empty_load_agent() -> &'static Runtime {
    builder("fake_acp_empty")
        .empty_load_is_unknown(true)
        .register()
        .expect("the fake agent registers")
}

/// `fake_acp_stdio`: an agent that takes stdio MCP servers only.
pub(crate) fn stdio_only_agent() -> &'static Runtime {
    AcpAgentBuilder::new("fake_acp_stdio", "fake-acp")
        .arg("--acp")
        .key_var(KEY_VAR)
        .state("FAKE_ACP_HOME", ".fake-acp")
        .capabilities(AcpCapabilities::BASELINE.with_load_session(true))
        .register()
        .expect("the fake agent registers")
}

fn builder(name: &str) -> AcpAgentBuilder {
    AcpAgentBuilder::new(name, "fake-acp")
        .arg("--acp")
        .key_var(KEY_VAR)
        .state("FAKE_ACP_HOME", ".fake-acp")
        .var("FAKE_ACP_TELEMETRY", "0")
        .capabilities(
            AcpCapabilities::BASELINE
                .with_load_session(true)
                .with_mcp(true, true),
        )
}

/// A `session/update` notification of the received line's session carrying `update` (JSON).
pub(crate) fn update(update: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"${{PARAM:sessionId}}","update":{update}}}}}"#
    )
}

/// An `agent_message_chunk` update of `text` (a template).
pub(crate) fn message(text: &str) -> String {
    update(&format!(
        r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}"#
    ))
}

/// A `user_message_chunk` update of `text`.
pub(crate) fn user_message(text: &str) -> String {
    update(&format!(
        r#"{{"sessionUpdate":"user_message_chunk","content":{{"type":"text","text":"{text}"}}}}"#
    ))
}

/// The answer to the received request (the prompt) with `stop`.
pub(crate) fn stop(stop: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":${{ID}},"result":{{"stopReason":"{stop}"}}}}"#)
}

/// Answers `initialize` like the observed agents (capabilities, auth methods).
pub(crate) fn initialize() -> LineRule {
    LineRule::when([INITIALIZE]).stdout(
        r#"{"jsonrpc":"2.0","id":${ID},"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true}},"authMethods":[{"id":"fake-key","name":"Key","description":null}]}}"#,
    )
}

/// A new session gets the process's own id (`${SESSION}`), after a notification that comes
/// before the answer (CodeBuddy's `config_option_update`).
pub(crate) fn new_session() -> LineRule {
    LineRule::when([NEW])
        .stdout(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${SESSION}","update":{"sessionUpdate":"config_option_update","configOptions":[]}}}"#)
        .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"sessionId":"${SESSION}","modes":{"availableModes":[{"id":"default","name":"Default"}],"currentModeId":"default"}}}"#)
}

/// A load replays the session like Gemini: one message before the answer, the rest after it.
pub(crate) fn load_session() -> LineRule {
    LineRule::when([LOAD])
        .stdout(user_message("REPLAYED context"))
        .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{}}"#)
        .stdout(user_message("REPLAYED user turn"))
        .stdout(update(
            r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"REPLAYED thought"}}"#,
        ))
        .stdout(message("REPLAYED answer"))
        .stdout(update(
            r#"{"sessionUpdate":"tool_call","toolCallId":"replayed-call","title":"REPLAYED tool","kind":"read","status":"completed"}"#,
        ))
        .stdout(update(
            r#"{"sessionUpdate":"available_commands_update","availableCommands":[]}"#,
        ))
}

/// A clean turn whose answer names the process: `pid N: <prompt>`.
pub(crate) fn turn() -> LineRule {
    LineRule::when([PROMPT])
        .stdout(update(
            r#"{"sessionUpdate":"available_commands_update","availableCommands":[]}"#,
        ))
        .stdout(message("pid ${PID}: "))
        .stdout(message("${PARAM:prompt.0.text}"))
        .stdout(stop("end_turn"))
}

/// A permission request for running `command` (kind `execute`), offering `options`
/// (`allow_once`, `allow_always`, `reject_once`, `reject_always`), with the prompt's id (ids
/// are per direction), after the pending `tool_call` CodeBuddy sends first.
pub(crate) fn ask_permission(rule: LineRule, command: &str, options: &[&str]) -> LineRule {
    let command = serde_json::to_string(command).unwrap();
    let options: Vec<String> = options
        .iter()
        .map(|kind| {
            let id = format!("opt-{}", kind.replace('_', "-"));
            format!(r#"{{"optionId":"{id}","name":"{kind}","kind":"{kind}"}}"#)
        })
        .collect();
    let options = options.join(",");
    rule.stdout(update(&format!(
        r#"{{"sessionUpdate":"tool_call","toolCallId":"call-1","title":{command},"kind":"execute","status":"pending","rawInput":{{"command":{command}}}}}"#
    )))
    .stdout(format!(
        r#"{{"jsonrpc":"2.0","id":${{ID}},"method":"session/request_permission","params":{{"sessionId":"${{PARAM:sessionId}}","options":[{options}],"toolCall":{{"toolCallId":"call-1","title":{command},"kind":"execute","status":"pending","rawInput":{{"command":{command}}}}}}}}}"#
    ))
}

/// The answers to a permission request (the prompt's id): an allowing one completes the
/// tool and the turn, a rejecting one ends the turn without running it (Gemini), a cancelled
/// one ends it `cancelled`.
pub(crate) fn permission_answers() -> [LineRule; 4] {
    let done = |rule: LineRule, output: &str| {
        rule.stdout(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":"#
                .to_owned()
                + &format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"call-1","status":"completed","rawOutput":"{output}"}}}}}}"#
                ),
        )
        .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"end_turn"}}"#)
    };
    [
        done(LineRule::when([ALLOW_ONCE]), "ran once"),
        done(LineRule::when([ALLOW_ALWAYS]), "ran always"),
        LineRule::when([REJECT_ONCE])
            .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"end_turn"}}"#),
        LineRule::when([CANCELLED])
            .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"cancelled"}}"#),
    ]
}

/// The usual agent after `rules` (the first unspent matching rule answers a line).
pub(crate) fn script(rules: impl IntoIterator<Item = LineRule>) -> Scenario {
    let mut scenario = Scenario::new();
    for rule in rules {
        scenario = scenario.serve(rule);
    }
    scenario = scenario
        .serve(initialize())
        .serve(new_session())
        .serve(load_session());
    for rule in permission_answers() {
        scenario = scenario.serve(rule);
    }
    scenario.serve(turn())
}

/// The fake agent of `entry`, the record of every line it was sent, and drivers of it.
pub(crate) struct Fake {
    pub(crate) harness: Harness,
    pub(crate) entry: &'static Runtime,
    pub(crate) served: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fake {
    /// The `fake_acp` agent following [`script`] after `rules`.
    pub(crate) fn new(rules: impl IntoIterator<Item = LineRule>) -> Self {
        Self::of(agent(), script(rules))
    }

    /// The agent of `entry` following `scenario`.
    pub(crate) fn of(entry: &'static Runtime, scenario: Scenario) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let served = dir.path().join("served.jsonl");
        let harness = Harness::new(
            &entry.descriptor,
            scenario.serve_record(&served),
            // Past every built-in agent's minimum version, so their entries run it too.
            "fake-acp 99.0.0",
            // The kit's bearer variables (CUR-01 reads their values in the environment).
            &[KEY_VAR, "KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"],
            &[KEY_VAR],
        );
        Self {
            harness,
            entry,
            served,
            _dir: dir,
        }
    }

    /// Per-turn options (the default mode) running the fake binary; a turn that is not
    /// answered fails within seconds.
    pub(crate) fn per_turn(&self) -> AcpOptions {
        AcpOptions::new(self.entry)
            .with_binary(fake_cli::binary_path())
            .with_limits(Limits::default().with_idle_timeout(Duration::from_secs(10)))
    }

    /// Resident options.
    pub(crate) fn resident(&self) -> AcpOptions {
        self.per_turn()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default()))
    }

    pub(crate) fn driver(&self, options: AcpOptions) -> AcpDriver {
        AcpDriver::new(self.harness.env.clone(), options)
    }

    /// Every line the fake processes were sent, in order.
    pub(crate) fn served(&self) -> Vec<String> {
        if !self.served.exists() {
            return Vec::new();
        }
        read_served_lines(&self.served).unwrap()
    }

    /// The served lines containing every one of `needles`.
    pub(crate) fn lines(&self, needles: &[&str]) -> Vec<String> {
        self.served()
            .into_iter()
            .filter(|l| needles.iter().all(|n| l.contains(n)))
            .collect()
    }

    pub(crate) fn count(&self, needle: &str) -> usize {
        self.lines(&[needle]).len()
    }

    pub(crate) fn request(&self, prompt: &str) -> Request {
        request(prompt, &self.harness.workspace)
    }
}

pub(crate) fn request(prompt: &str, workspace: &Path) -> Request {
    let fp = |what: &str| {
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("driver-acp fake tests v1"),
            |e| {
                e.str(what);
            },
        )
    };
    Request::new(
        RunId::new("run-1"),
        prompt,
        ProfilePayload::new(fp("exact"), fp("session")),
    )
    .with_workspace(workspace.to_str().unwrap())
}

pub(crate) const MCP_URL: &str = "http://127.0.0.1:4101/mcp/slot";

/// The request with one HTTP MCP server whose bearer (`token`) travels in `UI_TOKEN`.
pub(crate) fn with_token(request: Request, token: &str) -> Request {
    let mcp = McpServer::streamable_http("agent-ui", MCP_URL).with_bearer_token_env("UI_TOKEN");
    let service = ServiceRef::new("agent-ui", "Agent UI")
        .with_url(MCP_URL)
        .with_mcp(mcp.clone())
        .with_secret_env(EnvBinding::new("UI_TOKEN", token.to_owned()));
    request
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp([mcp])
}

pub(crate) fn resume(request: Request, state: &SessionState) -> Request {
    request.with_session(SessionContext::continue_only(state.clone()))
}

/// The pid a turn's answer names.
pub(crate) fn pid_of(output: &str) -> u32 {
    let rest = output
        .strip_prefix("pid ")
        .unwrap_or_else(|| panic!("an answer naming its pid: {output}"));
    rest[..rest.find(':').unwrap()].parse().unwrap()
}

/// Waits up to `within` for `done`.
pub(crate) async fn eventually(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}
