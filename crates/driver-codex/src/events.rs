//! `codex exec --json` events, translated into driver-spi events.
//!
//! The translator is a pure state machine over parsed JSONL values: no I/O, so every mapping
//! is unit-tested without a process. Unknown event and item types are ignored (newer Codex
//! releases add them); a known event with a malformed shape is a protocol error.

use driver_cli::TurnEvents;
use driver_spi::{DriverEvent, FailureKind, Redactor, Usage};
use serde_json::Value;

/// The tool name reported for Codex's built-in shell.
pub(crate) const SHELL_TOOL: &str = "shell";

/// A failure Codex reported in its stream (`turn.failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamFailure {
    /// The failure class.
    pub kind: FailureKind,
    /// Redacted provider text, for [`driver_spi::RunFailure::message`].
    pub message: String,
}

/// A known Codex event whose shape is not the documented one (a missing `type`,
/// `thread_id`, `item` or item `id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed codex event")]
#[non_exhaustive]
pub struct MalformedEvent;

/// Translates one run's `codex exec --json` events into driver events, and keeps what the
/// response needs: the thread id, the last agent message, usage and the stream's failure.
///
/// The driver feeds it every line; it is public so that hosts can replay stored Codex
/// transcripts the same way (and for the overhead benchmark).
///
/// ```
/// use driver_codex::EventTranslator;
/// use driver_spi::{DriverEvent, Redactor};
///
/// let mut t = EventTranslator::new(Redactor::default());
/// let mut events = Vec::new();
/// for line in [
///     r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#,
///     r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hi"}}"#,
///     r#"{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}"#,
/// ] {
///     events.extend(t.translate(&serde_json::from_str(line)?)?);
/// }
/// assert_eq!(events, [DriverEvent::RunStarted, DriverEvent::text("Hi")]);
/// assert_eq!(t.output(), "Hi");
/// assert!(t.turn_completed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct EventTranslator {
    redactor: Redactor,
    /// `RunStarted` and the tool-call lifecycle, by item id.
    turn: TurnEvents,
    thread_id: Option<String>,
    last_message: Option<String>,
    usage: Option<Usage>,
    turn_completed: bool,
    failure: Option<StreamFailure>,
    /// The last `error` event, which Codex also emits for retried stream errors.
    last_error: Option<String>,
}

impl EventTranslator {
    /// A translator that redacts provider text with `redactor`.
    pub fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            ..Self::default()
        }
    }

    /// Whether `RunStarted` was emitted.
    pub fn started(&self) -> bool {
        self.turn.started()
    }

    /// The thread id from `thread.started`.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The last agent message: the run's output.
    pub fn output(&self) -> &str {
        self.last_message.as_deref().unwrap_or_default()
    }

    /// Usage from `turn.completed`.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Whether `turn.completed` arrived.
    pub fn turn_completed(&self) -> bool {
        self.turn_completed
    }

    /// The failure reported by `turn.failed`, if any.
    pub fn failure(&self) -> Option<&StreamFailure> {
        self.failure.as_ref()
    }

    /// The last `error` event's redacted message.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Translates one event.
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event with a malformed shape; unknown event and item
    /// types are ignored.
    pub fn translate(&mut self, event: &Value) -> Result<Vec<DriverEvent>, MalformedEvent> {
        // A malformed event emits nothing, so it must not mark the run started (or a call
        // opened or closed) either: the events it would have produced are dropped with it.
        let mark = self.turn.mark();
        self.translate_event(event)
            .inspect_err(|_| self.turn.undo(mark))
    }

    fn translate_event(&mut self, event: &Value) -> Result<Vec<DriverEvent>, MalformedEvent> {
        let mut out = Vec::new();
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .ok_or(MalformedEvent)?;
        match kind {
            "thread.started" => {
                let id = event
                    .get("thread_id")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                self.thread_id = Some(id.to_owned());
                self.turn.start(&mut out);
            }
            "turn.started" => self.turn.start(&mut out),
            "turn.completed" => {
                self.turn.start(&mut out);
                self.turn_completed = true;
                if let Some(usage) = event.get("usage") {
                    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                    self.usage = Some(
                        Usage::new(n("input_tokens"), n("output_tokens"))
                            .with_cached_input_tokens(n("cached_input_tokens")),
                    );
                }
            }
            "turn.failed" => {
                self.turn.start(&mut out);
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.failure = Some(StreamFailure {
                    kind: classify(message),
                    message: self.redactor.redact(message).into_owned(),
                });
            }
            "error" => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.last_error = Some(self.redactor.redact(message).into_owned());
            }
            "item.started" | "item.updated" | "item.completed" => {
                let item = event.get("item").ok_or(MalformedEvent)?;
                self.turn.start(&mut out);
                self.item(item, kind == "item.completed", &mut out)?;
            }
            _ => {}
        }
        Ok(out)
    }

    fn item(
        &mut self,
        item: &Value,
        completed: bool,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .ok_or(MalformedEvent)?;
        let Some(kind) = item.get("type").and_then(Value::as_str) else {
            return Err(MalformedEvent);
        };
        match kind {
            "agent_message" if completed => {
                let text = item
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                if !text.is_empty() {
                    out.push(DriverEvent::text(text));
                }
                self.last_message = Some(text.to_owned());
            }
            "mcp_tool_call" => {
                let server = item
                    .get("server")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                let tool = item
                    .get("tool")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                let name = format!("mcp__{server}__{tool}");
                let arguments = driver_cli::json_text(item.get("arguments"));
                self.turn.open_call(id, &name, &arguments, out);
                if completed {
                    let failed = item.get("status").and_then(Value::as_str) == Some("failed")
                        || item.get("error").is_some_and(|e| !e.is_null());
                    let output = if failed {
                        item.pointer("/error/message")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| mcp_result_text(item.get("result")))
                    } else {
                        mcp_result_text(item.get("result"))
                    };
                    self.turn.close_call(id, output, failed, out);
                }
            }
            "command_execution" => {
                let command = item.get("command").and_then(Value::as_str).unwrap_or("");
                self.turn.open_call(id, SHELL_TOOL, command, out);
                if completed {
                    let output = item
                        .get("aggregated_output")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let exit = item.get("exit_code").and_then(Value::as_i64);
                    let failed = item.get("status").and_then(Value::as_str) == Some("failed")
                        || exit.is_some_and(|c| c != 0);
                    self.turn.close_call(id, output, failed, out);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Closes every tool call still open (a clean run must not finish with one open), as an
    /// error result.
    pub fn close_open_calls(&mut self) -> Vec<DriverEvent> {
        self.turn.close_open_calls()
    }
}

/// The text of an MCP result: its text content blocks joined, else its structured content.
fn mcp_result_text(result: Option<&Value>) -> String {
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
    match result.get("structured_content") {
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
        FailureKind::Provider
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use run_service::EnvBinding;
    use serde_json::json;

    fn run(lines: &[Value]) -> (EventTranslator, Vec<DriverEvent>) {
        let mut t = EventTranslator::new(Redactor::default());
        let mut events = Vec::new();
        for line in lines {
            events.extend(t.translate(line).unwrap());
        }
        (t, events)
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
        assert_eq!(t.thread_id(), Some("t-1"));
        assert_eq!(t.output(), "Hello");
        assert!(t.turn_completed());
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

    #[test]
    fn turn_failed_is_classified_and_redacted() {
        let secret = "sk-canary-0123456789";
        let mut t = EventTranslator::new(Redactor::from_iter(
            ([&EnvBinding::new("K", secret.to_owned())])
                .into_iter()
                .map(|b| b.value().clone()),
        ));
        t.translate(&json!({"type":"turn.failed","error":{"message":format!("401 Unauthorized for key {secret}")}}))
            .unwrap();
        let failure = t.failure().unwrap();
        assert_eq!(failure.kind, FailureKind::Authentication);
        assert!(!failure.message.contains(secret));
    }

    #[test]
    fn unknown_events_are_ignored_and_malformed_known_ones_rejected() {
        let mut t = EventTranslator::default();
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

    #[test]
    fn open_calls_are_closed_as_errors() {
        let (mut t, _) = run(&[
            json!({"type":"item.started","item":{"id":"c","type":"command_execution","command":"sleep 9"}}),
        ]);
        assert_eq!(
            t.close_open_calls(),
            [DriverEvent::tool_call_result(
                "c",
                "the tool call did not complete",
                true
            )]
        );
        assert!(t.close_open_calls().is_empty());
    }
}
