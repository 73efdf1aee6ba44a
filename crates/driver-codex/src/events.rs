//! `codex exec --json` events, translated into driver-spi events ([`EventTranslator`]); what
//! both Codex modes keep about a turn and answer the judgement ([`CodexEvents`]), and how
//! both read their items, each in its own spelling ([`ItemSpelling`]); and each turn's usage
//! from the thread totals Codex reports.
//!
//! The translator is a pure state machine over parsed JSONL values: no I/O, so every mapping
//! is unit-tested without a process and fuzzed by the shared harness
//! (`cli_test_kit`). Unknown event and item types are ignored (newer Codex releases
//! add them); a known event with a malformed shape is [`MalformedEvent`].
//!
//! **Usage.** `turn.completed.usage` is the running total of the whole thread, earlier
//! processes and (for a fork) the source thread included. The totals are kept in the
//! checkpoint's data under [`TOTAL_KEY`], and each turn's usage is the difference from the
//! totals of the state it continued.

use std::fmt;

use driver_cli::{CliEvent, MalformedEvent, Translator, TurnEvents, str_field};
use driver_spi::{DriverEvent, FailureKind, Redactor, RunFailure, SessionState, Usage};
use serde_json::Value;

/// The tool name reported for Codex's built-in shell.
pub(crate) const SHELL_TOOL: &str = "shell";

/// The session data key of the thread's usage totals: `input,cached_input,output`.
pub(crate) const TOTAL_KEY: &str = "codex.usage_total";

/// Translates one turn's `codex exec --json` events.
pub(crate) type EventTranslator = CodexEvents<Exec>;

/// How one Codex mode reads its events ([`Exec`], or the app-server's notifications) into
/// the [`CodexEvents`] both modes keep alike.
pub trait Mode: fmt::Debug + Default + Send + Sized {
    /// Whether the mode's process outlives its turn, so that its events, not the end of
    /// output, end the turn.
    const RESIDENT: bool;

    /// How the mode spells its items.
    const ITEMS: ItemSpelling;

    /// Whether agent message `id` already went out as text deltas, so its completed text is
    /// not emitted again.
    fn streamed(&self, _id: &str) -> bool {
        false
    }

    /// Translates one event, as [`Translator::translate`].
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event whose shape is broken.
    fn translate(codex: &mut CodexEvents<Self>, event: CliEvent<'_>) -> Result<(), MalformedEvent>;
}

/// The item types and fields both Codex modes have, as one mode spells them: exec in
/// snake_case, the app-server in camelCase.
#[derive(Debug)]
pub struct ItemSpelling {
    /// The agent message type.
    pub(crate) agent_message: &'static str,
    /// The MCP tool call type.
    pub(crate) mcp_tool_call: &'static str,
    /// The shell command type.
    pub(crate) command_execution: &'static str,
    /// An MCP result's structured content.
    pub(crate) structured_content: &'static str,
    /// A command's output.
    pub(crate) aggregated_output: &'static str,
    /// A command's exit code.
    pub(crate) exit_code: &'static str,
}

/// Translates one turn's Codex events into driver events, and keeps what the judgement needs:
/// the thread id, the last agent message, usage and the turn's outcome. Both modes keep these
/// the same way (their usage is the thread's totals under the same checkpoint key, so a thread
/// can move between them); `M` reads its mode's events.
#[derive(Debug, Default)]
pub struct CodexEvents<M> {
    /// Redacts provider text.
    pub(crate) redactor: Redactor,
    /// The thread id the events named.
    pub(crate) thread_id: Option<String>,
    /// The last completed agent message.
    pub(crate) last_message: Option<String>,
    /// The thread's totals, as last reported.
    pub(crate) total: Option<Usage>,
    /// The totals the continued state kept, if any.
    previous: Option<Usage>,
    /// The turn completed (whatever its outcome).
    pub(crate) ended: bool,
    /// The failure the events reported for the turn.
    pub(crate) failure: Option<RunFailure>,
    /// The last `error` event's redacted message (Codex also emits them for retried errors).
    pub(crate) last_error: Option<String>,
    /// The mode's own state.
    pub(crate) mode: M,
}

impl<M: Mode> CodexEvents<M> {
    /// A translator that redacts provider text with `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            ..Self::default()
        }
    }

    /// Measures this turn's usage from the totals kept in `previous`, the state the turn
    /// continues (resumed or forked, in either mode). Without one, or with unreadable totals,
    /// the turn's usage is the thread's total.
    pub(crate) fn with_previous_totals(mut self, previous: Option<&SessionState>) -> Self {
        self.previous = previous
            .and_then(|s| s.data.get(TOTAL_KEY))
            .and_then(|t| decode(t));
        self
    }

    /// `text`, redacted.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// Translates the item of an item event: `completed` for the event that ends the item.
    pub(crate) fn item(
        &mut self,
        turn: &mut TurnEvents,
        item: &Value,
        completed: bool,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let id = str_field(item, "id")?;
        let kind = str_field(item, "type")?;
        let names = &M::ITEMS;
        // An item means the turn runs, even if the turn's start was missed.
        turn.start(out);
        if kind == names.agent_message && completed {
            let text = self.redact(str_field(item, "text")?);
            // Streamed text went out as deltas; the item's text is the whole answer.
            if !text.is_empty() && !self.mode.streamed(id) {
                out.push(DriverEvent::text(text.clone()));
            }
            self.last_message = Some(text);
        } else if kind == names.mcp_tool_call {
            let server = str_field(item, "server")?;
            let tool = str_field(item, "tool")?;
            let name = format!("mcp__{server}__{tool}");
            let arguments = self.redact(&driver_cli::json_text(item.get("arguments")));
            // Opened on completion too, in case the item's start was missed.
            turn.open_call(id, &name, &arguments, out);
            if completed {
                let error = item.get("error").filter(|e| !e.is_null());
                let failed =
                    error.is_some() || item.get("status").and_then(Value::as_str) == Some("failed");
                let output = match error.and_then(|e| e.get("message")).and_then(Value::as_str) {
                    Some(message) => message.to_owned(),
                    None => mcp_result_text(item.get("result"), names.structured_content),
                };
                turn.close_call(id, self.redact(&output), failed, out);
            }
        } else if kind == names.command_execution {
            let command = item.get("command").and_then(Value::as_str).unwrap_or("");
            turn.open_call(id, SHELL_TOOL, &self.redact(command), out);
            if completed {
                let output = item
                    .get(names.aggregated_output)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let exit = item.get(names.exit_code).and_then(Value::as_i64);
                let status = item.get("status").and_then(Value::as_str);
                // `declined`: the app-server's refused approval.
                let failed =
                    matches!(status, Some("failed" | "declined")) || exit.is_some_and(|c| c != 0);
                turn.close_call(id, self.redact(output), failed, out);
            }
        }
        Ok(())
    }
}

impl<M: Mode> Translator for CodexEvents<M> {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        M::translate(self, event)
    }

    /// The thread id the events named.
    fn session_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The last agent message.
    fn output(&self) -> &str {
        self.last_message.as_deref().unwrap_or_default()
    }

    /// The turn completed, and reported no failure.
    fn succeeded(&self) -> bool {
        self.ended && self.failure.is_none()
    }

    /// The failure the events reported, classified from its message.
    fn reported_failure(&self) -> Option<RunFailure> {
        self.failure.clone()
    }

    /// The thread's totals minus the totals of the continued state.
    fn usage(&self) -> Option<Usage> {
        self.total.map(|total| this_turn(total, self.previous))
    }

    /// The last `error` event's redacted message.
    fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// The thread's totals, for the next turn's usage (in either mode).
    fn checkpoint_data(&self) -> Vec<(String, String)> {
        self.total
            .map(|total| (TOTAL_KEY.to_owned(), encode(total)))
            .into_iter()
            .collect()
    }

    /// In a resident mode, whether the turn completed, whatever its outcome.
    fn turn_ended(&self) -> bool {
        M::RESIDENT && self.ended
    }
}

/// `codex exec --json`: one process per turn, whose end of output ends the turn.
#[derive(Debug, Default)]
pub struct Exec;

impl Mode for Exec {
    const RESIDENT: bool = false;
    const ITEMS: ItemSpelling = ItemSpelling {
        agent_message: "agent_message",
        mcp_tool_call: "mcp_tool_call",
        command_execution: "command_execution",
        structured_content: "structured_content",
        aggregated_output: "aggregated_output",
        exit_code: "exit_code",
    };

    fn translate(codex: &mut CodexEvents<Self>, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, event, turn, out) = event.into_parts();
        match kind {
            "thread.started" => {
                let id = str_field(event, "thread_id")?;
                codex.thread_id = Some(id.to_owned());
                turn.start(out);
            }
            "turn.started" => turn.start(out),
            "turn.completed" => {
                turn.start(out);
                codex.ended = true;
                if let Some(usage) = event.get("usage") {
                    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                    codex.total = Some(
                        Usage::new(n("input_tokens"), n("output_tokens"))
                            .with_cached_input_tokens(n("cached_input_tokens")),
                    );
                }
            }
            "turn.failed" => {
                turn.start(out);
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                codex.failure = Some(RunFailure::new(classify(message), codex.redact(message)));
            }
            "error" => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                codex.last_error = Some(codex.redact(message));
            }
            "item.started" | "item.updated" | "item.completed" => {
                let item = event.get("item").ok_or(MalformedEvent)?;
                codex.item(turn, item, kind == "item.completed", out)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// The text of an MCP result: its text content blocks joined, else its structured content
/// (under `structured_content`, as the mode spells it).
fn mcp_result_text(result: Option<&Value>, structured_content: &str) -> String {
    let Some(result) = result else {
        return String::new();
    };
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    match result.get(structured_content) {
        Some(v) if !v.is_null() => v.to_string(),
        _ => String::new(),
    }
}

/// The failure class of a Codex error message.
pub(crate) fn classify(message: &str) -> FailureKind {
    let lower = message.to_ascii_lowercase();
    if lower.contains("401") || lower.contains("unauthorized") || lower.contains("api key") {
        FailureKind::Authentication
    } else if lower.contains("429") || lower.contains("rate limit") {
        FailureKind::RateLimited
    } else if lower.contains("usage limit") || lower.contains("context window") {
        FailureKind::Limit
    } else {
        FailureKind::ModelProvider
    }
}

/// The checkpoint encoding of a thread's totals: `input,cached_input,output`.
pub(crate) fn encode(total: Usage) -> String {
    format!(
        "{},{},{}",
        total.input_tokens, total.cached_input_tokens, total.output_tokens
    )
}

/// The totals [`encode`] wrote; `None` for anything else.
pub(crate) fn decode(text: &str) -> Option<Usage> {
    let mut parts = text.split(',').map(|p| p.parse::<u64>().ok());
    let (Some(Some(input)), Some(Some(cached)), Some(Some(output)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(Usage::new(input, output).with_cached_input_tokens(cached))
}

/// The usage of this turn: `total` minus the `previous` totals. When there are none, or the
/// totals went down (Codex compacted or rewrote the thread), the total is the best figure
/// there is.
pub(crate) fn this_turn(total: Usage, previous: Option<Usage>) -> Usage {
    let Some(before) = previous else {
        return total;
    };
    if total.input_tokens < before.input_tokens
        || total.cached_input_tokens < before.cached_input_tokens
        || total.output_tokens < before.output_tokens
    {
        return total;
    }
    Usage::new(
        total.input_tokens - before.input_tokens,
        total.output_tokens - before.output_tokens,
    )
    .with_cached_input_tokens(total.cached_input_tokens - before.cached_input_tokens)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use driver_cli::Tracked;
    use driver_spi::check_sequence;
    use run_service::EnvBinding;
    use serde_json::json;

    fn run(lines: &[Value]) -> (Tracked<EventTranslator>, Vec<DriverEvent>) {
        cli_test_kit::translate_all(EventTranslator::default(), lines)
    }

    #[test]
    fn text_turn() {
        let (t, events) = run(&[
            json!({"type":"thread.started","thread_id":"t-1"}),
            json!({"type":"turn.started"}),
            json!({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello"}}),
            json!({"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":3,"output_tokens":7}}),
        ]);
        assert_eq!(
            events,
            [DriverEvent::RunStarted, DriverEvent::text("Hello")]
        );
        assert_eq!(t.session_id(), Some("t-1"));
        assert_eq!(t.output(), "Hello");
        assert!(t.succeeded());
        assert_eq!(
            t.usage(),
            Some(Usage::new(11, 7).with_cached_input_tokens(3))
        );
    }

    #[test]
    fn mcp_tool_call_lifecycle() {
        let started = json!({"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"agent-tools","tool":"ping","arguments":{"n":1},"status":"in_progress"}});
        let done = json!({"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"agent-tools","tool":"ping","arguments":{"n":1},"result":{"content":[{"type":"text","text":"pong"}]},"status":"completed"}});
        let (_, events) = run(&[started, done.clone(), done]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("item_1", "mcp__agent-tools__ping"),
                DriverEvent::tool_call_arguments("item_1", r#"{"n":1}"#),
                DriverEvent::tool_call_result("item_1", "pong", false),
            ]
        );
    }

    #[test]
    fn failed_tool_call_and_shell_exit_codes_are_errors() {
        let (_, events) = run(&[
            json!({"type":"item.completed","item":{"id":"a","type":"mcp_tool_call","server":"s","tool":"t","status":"failed","error":{"message":"requires approval"}}}),
            json!({"type":"item.completed","item":{"id":"b","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}),
        ]);
        assert!(events.contains(&DriverEvent::tool_call_result(
            "a",
            "requires approval",
            true
        )));
        assert!(events.contains(&DriverEvent::tool_call_result("b", "", true)));
    }

    /// Provider text of items (message, tool arguments and output, commands) is redacted as
    /// in app-server mode: a known secret the model echoes reaches no event and no output.
    #[test]
    fn item_text_is_redacted() {
        let secret = "sk-canary-item-0123456789";
        let redactor =
            Redactor::from_iter([EnvBinding::new("K", secret.to_owned()).value().clone()]);
        let (t, events) = cli_test_kit::translate_all(
            EventTranslator::new(redactor),
            &[
                json!({"type":"item.completed","item":{"id":"c1","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"key":secret},"result":{"content":[{"type":"text","text":secret}]},"status":"completed"}}),
                json!({"type":"item.completed","item":{"id":"c2","type":"command_execution","command":format!("echo {secret}"),"aggregated_output":secret,"exit_code":0,"status":"completed"}}),
                json!({"type":"item.completed","item":{"id":"m1","type":"agent_message","text":format!("the key is {secret}")}}),
            ],
        );
        assert!(!format!("{events:?}").contains(secret), "{events:?}");
        assert!(!t.output().contains(secret));
        assert!(t.output().starts_with("the key is "));
    }

    #[test]
    fn turn_failed_is_classified_and_redacted() {
        let secret = "sk-canary-0123456789";
        let mut t = Tracked::new(EventTranslator::new(Redactor::from_iter(
            ([&EnvBinding::new("K", secret.to_owned())])
                .into_iter()
                .map(|b| b.value().clone()),
        )));
        t.translate(&json!({"type":"turn.failed","error":{"message":format!("401 Unauthorized for key {secret}")}}))
            .unwrap();
        let failure = t.reported_failure().unwrap();
        assert_eq!(failure.kind, FailureKind::Authentication);
        assert!(!failure.message.contains(secret));
        // A completed turn that also failed did not succeed.
        t.translate(&json!({"type":"turn.completed"})).unwrap();
        assert!(!t.succeeded());
    }

    #[test]
    fn failures_are_classified_from_codexs_messages() {
        for (message, kind) in [
            (
                "unexpected status 401 Unauthorized",
                FailureKind::Authentication,
            ),
            ("Incorrect API key provided", FailureKind::Authentication),
            ("429 Too Many Requests", FailureKind::RateLimited),
            ("You've hit your usage limit", FailureKind::Limit),
            ("exceeds the context window", FailureKind::Limit),
            (
                "stream disconnected before completion",
                FailureKind::ModelProvider,
            ),
        ] {
            assert_eq!(classify(message), kind, "{message}");
        }
    }

    #[test]
    fn unknown_events_are_ignored_and_malformed_known_ones_rejected() {
        let mut t = Tracked::new(EventTranslator::default());
        assert_eq!(
            t.translate(&json!({"type":"item.plan.delta","x":1})),
            Ok(vec![])
        );
        assert_eq!(t.translate(&json!({"no_type":true})), Err(MalformedEvent));
        assert_eq!(
            t.translate(&json!({"type":"thread.started"})),
            Err(MalformedEvent)
        );
        assert_eq!(
            t.translate(&json!({"type":"item.completed"})),
            Err(MalformedEvent)
        );
    }

    /// A started command opens its call, which stays open until it completes (the driver
    /// closes what is left open: `driver_cli::TurnEvents` and its tests).
    #[test]
    fn a_started_command_opens_its_call() {
        let (_, events) = run(&[
            json!({"type":"item.started","item":{"id":"c","type":"command_execution","command":"sleep 9"}}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("c", SHELL_TOOL),
                DriverEvent::tool_call_arguments("c", "sleep 9"),
            ]
        );
    }

    /// A fuzz counterexample: the first event is an `item.started` whose item is not an
    /// object with a string `id` and `type`. The run must not count as started, since its
    /// `RunStarted` was dropped with the malformed event.
    #[test]
    fn malformed_first_item_does_not_start_the_run_silently() {
        let mut t = Tracked::new(EventTranslator::default());
        let result = t.translate(&json!({"type": "item.started", "item": null}));
        assert!(result.is_err());
        assert!(
            !t.started(),
            "started() is true but no RunStarted was returned"
        );
    }

    /// An item with an empty id opens no tool call: the sequence checker refuses an empty
    /// call id (`BadToolCallId`).
    #[test]
    fn empty_item_id_opens_no_tool_call() {
        let (mut t, mut out) = run(&[json!({
            "type": "item.started",
            "item": {"id": "", "type": "command_execution", "command": "ls"}
        })]);
        out.extend(t.close_open_calls());
        out.push(DriverEvent::RunFinished);
        assert_eq!(check_sequence(&out), Ok(()), "{out:?}");
    }

    #[test]
    fn turns_are_differences_of_totals() {
        let first = Usage::new(11, 7).with_cached_input_tokens(3);
        let second = Usage::new(27, 16).with_cached_input_tokens(6);
        let completed = |u: Usage| {
            json!({"type":"turn.completed","usage":{
                "input_tokens":u.input_tokens,
                "cached_input_tokens":u.cached_input_tokens,
                "output_tokens":u.output_tokens}})
        };
        let turn = |previous: Option<&SessionState>, total: Usage| {
            let mut t = Tracked::new(EventTranslator::default().with_previous_totals(previous));
            t.translate(&completed(total)).unwrap();
            t
        };
        assert_eq!(turn(None, first).usage(), Some(first));
        let state = SessionState::new("t").with_data(TOTAL_KEY, encode(first));
        let next = turn(Some(&state), second);
        assert_eq!(
            next.usage(),
            Some(Usage::new(16, 9).with_cached_input_tokens(3))
        );
        assert_eq!(
            next.checkpoint_data(),
            [(TOTAL_KEY.to_owned(), "27,6,16".to_owned())]
        );
        // Totals that went down, or garbage, fall back to the total.
        let smaller = Usage::new(5, 1);
        assert_eq!(turn(Some(&state), smaller).usage(), Some(smaller));
        for bad in ["", "1,2", "1,2,3,4", "a,b,c", "-1,2,3"] {
            let state = SessionState::new("t").with_data(TOTAL_KEY, bad);
            assert_eq!(turn(Some(&state), second).usage(), Some(second), "{bad}");
        }
        assert_eq!(decode(&encode(second)), Some(second));
        // No usage reported: none, and nothing to keep.
        let silent = EventTranslator::default().with_previous_totals(Some(&state));
        assert_eq!(silent.usage(), None);
        assert!(silent.checkpoint_data().is_empty());
    }
}
