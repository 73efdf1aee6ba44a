//! A test dialect shaped like the Agent Client Protocol: a CLI that speaks only a JSON-RPC
//! protocol (no per-turn form), whose session opens with `session/new` or `session/load`,
//! whose turn streams `session/update` notifications and ends with the answer to the
//! `session/prompt` request (its stop reason). Against the scripted fake CLI it shows that
//! - a turn ends on the prompt's answer, after every update sent before it;
//! - what a session replays while it opens is never the turn's;
//! - in per-turn mode each turn runs on a one-turn process of the protocol.
#![allow(
    unreachable_pub,
    reason = "dialect! declares a pub dialect, so its options and translator are pub too"
)]

use std::sync::Arc;
use std::time::Duration;

use cli_test_kit::{FakeCli, checkpoint, run};
use driver_cli::{
    Call, CliEvent, CliOptions, Dialect, Identity, KeyRoute, MalformedEvent, ModelAccess,
    NewSessionId, ProcessMode, Rejection, ResidentProtocol, Runtime, SessionPlan, Translator, Turn,
    WithEndpoint, cli_capabilities, str_field,
};
use driver_process::command::Limits;
use driver_process::pool::PoolLimits;
use driver_process::process::Finished;
use driver_process::version::Version;
use driver_spi::{
    Capabilities, ConfigFingerprintBuilder, DriverError, DriverEvent, FailureKind,
    ProcessLifecycle as _, ProfilePayload, Request, RunFailure, SessionContext, Usage,
    check_sequence,
};
use fake_cli::{LineRule, Scenario, is_running};
use run_service::RunId;
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor};
use serde_json::{Value, json};

/// The test CLI's options.
#[derive(Debug, Clone)]
pub struct PromptEndedOptions {
    cli: CliOptions,
}

impl Default for PromptEndedOptions {
    fn default() -> Self {
        Self {
            cli: CliOptions::new("prompt-ended", Version::new(1, 0, 0)),
        }
    }
}

driver_cli::dialect!(
    /// The test dialect.
    PromptEnded(PromptEndedOptions)
);

static RUNTIME: Runtime =
    Runtime::new::<PromptEnded>(DESCRIPTOR, "PROMPT_ENDED_BIN", "PROMPT_ENDED_API_KEY");

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "prompt_ended",
    program: "prompt-ended",
    state_var: "PROMPT_ENDED_HOME",
    state_subdir: ".prompt-ended",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[],
    credential_files: &[],
    api_key_vars: &["PROMPT_ENDED_API_KEY"],
    endpoint_vars: &[],
    keyring: KeyringUse::Never,
    mcp: McpMechanism::InRequest,
    supported_modes: &[IsolationMode::Subprocess],
};

impl ModelAccess for PromptEnded {
    type Options = PromptEndedOptions;
    const WITH_ENDPOINT: WithEndpoint<Self::Options> = |options, _, _| Ok(options);
    const KEY: KeyRoute<Self::Options> = KeyRoute::KeyVar;

    fn options(_: &'static Runtime) -> PromptEndedOptions {
        PromptEndedOptions::default()
    }
}

impl Dialect for PromptEnded {
    type Translator = Updates;
    fn runtime(&self) -> &'static Runtime {
        &RUNTIME
    }
    fn identity(&self) -> &Identity {
        &IDENTITY
    }

    fn capabilities(&self) -> Capabilities {
        cli_capabilities(false, &[])
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        builder
    }

    fn config(&self, _turn: &Turn<'_>) -> Result<driver_cli::ConfigFiles, DriverError> {
        Ok(driver_cli::ConfigFiles::None)
    }

    fn invocation(&self, _turn: &Turn<'_>) -> Result<driver_cli::Invocation, DriverError> {
        Ok(driver_cli::Invocation::new(vec!["serve".to_owned()]))
    }

    fn translator(&self, _request: &Request, _redactor: driver_spi::Redactor) -> Updates {
        Updates::default()
    }

    fn unknown_session(&self, _translator: &Updates, _finished: &Finished) -> bool {
        false
    }

    fn resident(&self) -> Option<&dyn ResidentProtocol> {
        Some(&Protocol)
    }
}

/// The protocol: ACP's shapes, reduced to what these tests need.
struct Protocol;

const UNKNOWN_SESSION: i64 = -32002;

impl ResidentProtocol for Protocol {
    fn handshake(&self) -> Vec<Call> {
        vec![Call::request("initialize", json!({"protocolVersion": 1}))]
    }

    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call> {
        match turn.plan {
            SessionPlan::Resume(id) if loaded == Some(id) => None,
            SessionPlan::Resume(id) => {
                Some(Call::request("session/load", json!({"sessionId": id})))
            }
            _ => Some(Call::request("session/new", json!({}))),
        }
    }

    /// `session/new` names the session; `session/load` answers without it.
    fn opened(&self, turn: &Turn<'_>, answer: &Value) -> Result<String, MalformedEvent> {
        if let SessionPlan::Resume(id) = turn.plan {
            return Ok(id.to_owned());
        }
        answer
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(MalformedEvent)
    }

    fn prompt(&self, turn: &Turn<'_>, session: Option<&str>) -> Call {
        Call::request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": turn.request.prompt}]}),
        )
    }

    fn interrupt(&self, session: Option<&str>, _turn_id: Option<&str>) -> Option<Call> {
        Some(Call::notification(
            "session/cancel",
            json!({"sessionId": session?}),
        ))
    }

    fn rejection(&self, _method: &str, code: i64, _message: &str) -> Rejection {
        if code == UNKNOWN_SESSION {
            Rejection::UnknownSession
        } else {
            Rejection::Failed(FailureKind::Protocol)
        }
    }

    fn answer(&self, _method: &str, _params: &Value) -> Option<Value> {
        None
    }

    fn per_turn_cli(&self) -> bool {
        false
    }
}

/// `session/update` text chunks, ended by the answer to `session/prompt`.
#[derive(Debug, Default)]
pub struct Updates {
    text: String,
    stop: Option<String>,
}

impl Translator for Updates {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, value, turn, out) = event.into_parts();
        match kind {
            "session/update" => {
                let chunk = value
                    .pointer("/update/content/text")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                turn.start(out);
                self.text.push_str(chunk);
                out.push(DriverEvent::text(chunk));
            }
            // The prompt's answer: the turn's last word.
            "session/prompt" => {
                let stop = str_field(value, "stopReason")?;
                turn.start(out);
                self.stop = Some(stop.to_owned());
            }
            _ => {}
        }
        Ok(())
    }

    fn output(&self) -> &str {
        &self.text
    }

    fn succeeded(&self) -> bool {
        self.stop.as_deref() == Some("end_turn")
    }

    fn reported_failure(&self) -> Option<RunFailure> {
        match self.stop.as_deref() {
            None | Some("end_turn") => None,
            Some(_) => Some(RunFailure::new(
                FailureKind::Other,
                "the turn stopped early",
            )),
        }
    }

    fn usage(&self) -> Option<Usage> {
        None
    }

    fn turn_ended(&self) -> bool {
        self.stop.is_some()
    }
}

const NEW: &str = r#""method":"session/new""#;
const LOAD: &str = r#""method":"session/load""#;
const PROMPT: &str = r#""method":"session/prompt""#;

/// An agent that answers like ACP: a session per process (`${SESSION}`), three updates per
/// turn naming the process, then the stop reason; a loaded session first replays history.
fn agent() -> Scenario {
    let update = |text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"${{PARAM:sessionId}}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}"#
        )
    };
    Scenario::new()
        .serve(
            LineRule::when([r#""method":"initialize""#])
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"protocolVersion":1}}"#),
        )
        .serve(
            LineRule::when([NEW])
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"sessionId":"${SESSION}"}}"#),
        )
        .serve(
            LineRule::when([LOAD])
                .stdout_repeated(update("REPLAYED "), 500)
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{}}"#),
        )
        .serve(
            LineRule::when([PROMPT])
                .stdout(update("pid ${PID}: "))
                .stdout(update("${PARAM:prompt.0.text}"))
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"end_turn"}}"#),
        )
}

fn fake() -> FakeCli<PromptEndedOptions> {
    FakeCli::new(
        agent(),
        "prompt-ended 1.0.0",
        &[],
        &["PROMPT_ENDED_API_KEY"],
    )
}

pub(crate) fn request(prompt: &str) -> Request {
    let fp = compat_fingerprint::Fingerprint::of(
        compat_fingerprint::Kind::new("driver-cli prompt-ended tests v1"),
        |e| e.str("profile"),
    );
    Request::new(RunId::new("run-1"), prompt, ProfilePayload::new(fp, fp))
}

/// Resident mode; a turn that never ends fails within seconds, not the default minutes.
pub(crate) fn resident() -> PromptEndedOptions {
    use driver_cli::CommonOptions as _;
    PromptEndedOptions::default()
        .with_process_mode(ProcessMode::Resident(PoolLimits::default()))
        .with_limits(Limits::default().with_idle_timeout(Duration::from_secs(10)))
}

fn pid_of(output: &str) -> u32 {
    let rest = output
        .strip_prefix("pid ")
        .expect("an answer naming its pid");
    rest[..rest.find(':').unwrap()].parse().unwrap()
}

#[tokio::test]
async fn a_turn_ends_on_the_prompts_answer_after_every_update_before_it() {
    let fake = fake();
    let driver = fake.driver(resident());
    let (first, events) = run(&driver, request("one")).await;
    let first = first.unwrap();
    assert!(first.is_clean(), "{:?}", first.failure);
    assert!(first.output.ends_with(": one"), "{}", first.output);
    assert_eq!(check_sequence(&events), Ok(()));
    let texts: Vec<&DriverEvent> = events
        .iter()
        .filter(|e| matches!(e, DriverEvent::TextDelta { .. }))
        .collect();
    assert_eq!(
        texts.len(),
        2,
        "both updates, none lost to the answer: {events:?}"
    );
    assert!(matches!(events.last(), Some(DriverEvent::RunFinished)));

    // The next turn of the session on the same process.
    let state = checkpoint(&first);
    let next = request("two").with_session(SessionContext::continue_only(state));
    let (second, _) = run(&driver, next).await;
    let second = second.unwrap();
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert_eq!(pid_of(&second.output), pid_of(&first.output));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn what_a_loaded_session_replays_is_never_the_turns() {
    let fake = fake();
    let driver = fake.driver(resident());
    let (first, _) = run(&driver, request("one")).await;
    let state = checkpoint(&first.unwrap());
    driver.close_processes().await.unwrap();
    // A new process loads the session: 500 replayed updates come before its answer.
    let next = request("two").with_session(SessionContext::continue_only(state));
    let (second, events) = run(&driver, next).await;
    let second = second.unwrap();
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert!(!second.output.contains("REPLAYED"), "{}", second.output);
    assert!(!format!("{events:?}").contains("REPLAYED"));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_protocol_only_cli_runs_each_per_turn_run_on_a_one_turn_process() {
    let fake = fake();
    // Per-turn mode (the default): no pool, yet the CLI has no per-turn form.
    let driver = Arc::new(fake.driver(PromptEndedOptions::default()));
    assert_eq!(driver.pool_stats(), None);
    let (first, _) = run(&*driver, request("one")).await;
    let first = first.unwrap();
    assert!(first.output.ends_with(": one"), "{}", first.output);
    let pid = pid_of(&first.output);
    assert!(!is_running(pid), "the one-turn process ended with its turn");
    let invocation = fake.last();
    assert_eq!(invocation.argv, ["serve"]);
    let state = checkpoint(&first);
    let next = request("two").with_session(SessionContext::continue_only(state));
    let (second, _) = run(&*driver, next).await;
    let second = second.unwrap();
    assert_ne!(pid_of(&second.output), pid, "a process of its own");
}

/// Who the driver is.
const IDENTITY: Identity = Identity::new(
    "prompt-ended-test",
    "Prompt-ended test CLI",
    "prompt-ended-test/v1",
    NewSessionId::Cli,
);

#[tokio::test]
async fn the_resident_pool_says_which_conversations_it_holds_and_when_one_ends() {
    use driver_spi::Driver as _;
    let fake = fake();
    let driver = fake.driver(resident());
    let lifecycle = driver.process_lifecycle().expect("a resident driver");
    let mut changes = lifecycle
        .changes()
        .expect("a resident pool announces endings");
    let (first, _) = run(&driver, request("one")).await;
    let state = checkpoint(&first.unwrap());
    // Checked in under the session's id when the turn returned: held, and nothing ended.
    assert!(lifecycle.holds_conversation(&state.resume_id));
    assert!(!lifecycle.holds_conversation("another-session"));
    assert!(!changes.has_changed().unwrap());
    driver.close_processes().await.unwrap();
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();
    assert!(!lifecycle.holds_conversation(&state.resume_id));
    // Per-turn mode has no pool: nothing is held, and no lifecycle to ask.
    let per_turn = fake.driver(PromptEndedOptions::default());
    assert!(per_turn.process_lifecycle().is_none());
}
