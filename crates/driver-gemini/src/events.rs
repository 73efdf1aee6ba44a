//! `gemini --output-format stream-json` events, translated into driver-spi events.
//!
//! The translator is a pure state machine over parsed JSONL values: no I/O, so every mapping
//! is unit-tested without a process. Unknown event types are ignored (newer Gemini releases
//! add them); a known event whose required fields are missing or mistyped is a
//! [`MalformedEvent`], and translating it changes nothing.

use driver_cli::TurnEvents;
use driver_spi::{DriverEvent, Redactor, Usage};
use serde_json::Value;

use crate::names::ToolNames;

/// A known Gemini event whose shape is not the documented one (a missing `type`, an `init`
/// without `session_id`, a `tool_use` without `tool_id`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed gemini event")]
#[non_exhaustive]
pub struct MalformedEvent;

/// The `result` event: how Gemini judged the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnResult {
    /// `status == "success"`.
    pub success: bool,
    /// `error.type` (for example `FatalTurnLimitedError`), empty when absent.
    pub error_type: String,
    /// `error.message`, redacted; empty when absent.
    pub message: String,
    /// Token usage from `stats`.
    pub usage: Option<Usage>,
}

/// Translates one run's stream-json events into driver events, and keeps what the response
/// needs: the session id, the final assistant message, the `result` and the last `error`.
///
/// Tool names are reported as `mcp__<declared server>__<tool>`: Gemini calls an MCP tool
/// `mcp_<server>_<tool>` (see [`ToolNames`](crate::ToolNames)). Text and tool output are the
/// model's and the tools' own; error messages pass through the redactor.
///
/// ```
/// use driver_gemini::{EventTranslator, ToolNames};
/// use driver_spi::{DriverEvent, Redactor};
///
/// let mut t = EventTranslator::new(Redactor::default(), ToolNames::new(["agent-tools"]));
/// let mut events = Vec::new();
/// for line in [
///     r#"{"type":"init","session_id":"0199a213-81c0-7800-8aa1-bbab2a035a53","model":"m"}"#,
///     r#"{"type":"tool_use","tool_name":"mcp_agent-tools_ping","tool_id":"t1","parameters":{"text":"one"}}"#,
///     r#"{"type":"tool_result","tool_id":"t1","status":"success","output":"pong"}"#,
///     r#"{"type":"message","role":"assistant","content":"Done","delta":true}"#,
///     r#"{"type":"result","status":"success","stats":{"input_tokens":20,"output_tokens":10,"cached":0}}"#,
/// ] {
///     events.extend(t.translate(&serde_json::from_str(line)?)?);
/// }
/// assert_eq!(events[1], DriverEvent::tool_call_started("t1", "mcp__agent-tools__ping"));
/// assert_eq!(events.last(), Some(&DriverEvent::text("Done")));
/// assert_eq!(t.output(), "Done");
/// assert!(t.result().is_some_and(|r| r.success));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct EventTranslator {
    redactor: Redactor,
    names: ToolNames,
    /// `RunStarted` and the tool-call lifecycle, by `tool_id`.
    turn: TurnEvents,
    session_id: Option<String>,
    /// The assistant text since the last tool call: the run's output.
    message: String,
    result: Option<TurnResult>,
    last_error: Option<String>,
}

fn str_field<'v>(event: &'v Value, key: &str) -> Result<&'v str, MalformedEvent> {
    event.get(key).and_then(Value::as_str).ok_or(MalformedEvent)
}

fn opt_str<'v>(event: &'v Value, key: &str) -> Option<&'v str> {
    event.get(key).and_then(Value::as_str)
}

/// `stats` of a `result` event: `input_tokens` (cached ones included), `output_tokens` and
/// `cached`.
fn usage(stats: &Value) -> Option<Usage> {
    let n = |k: &str| stats.get(k).and_then(Value::as_u64);
    let (input, output) = (n("input_tokens"), n("output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(
        Usage::new(input.unwrap_or(0), output.unwrap_or(0))
            .with_cached_input_tokens(n("cached").unwrap_or(0)),
    )
}

impl EventTranslator {
    /// A translator that redacts error text with `redactor` and reports MCP tools of the
    /// servers in `names`.
    pub fn new(redactor: Redactor, names: ToolNames) -> Self {
        Self {
            redactor,
            names,
            ..Self::default()
        }
    }

    /// Whether `RunStarted` was emitted.
    pub fn started(&self) -> bool {
        self.turn.started()
    }

    /// The session id from `init`.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The assistant text after the last tool call: the run's output.
    pub fn output(&self) -> &str {
        &self.message
    }

    /// The `result` event, if it arrived.
    pub fn result(&self) -> Option<&TurnResult> {
        self.result.as_ref()
    }

    /// The message of the last `error` event, redacted.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Translates one event.
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event with a malformed shape (nothing is emitted and
    /// the translator's state is unchanged); unknown event types are ignored.
    pub fn translate(&mut self, event: &Value) -> Result<Vec<DriverEvent>, MalformedEvent> {
        // Every arm validates before it changes anything; the mark keeps that true should an
        // arm ever fail after opening or closing a call.
        let mark = self.turn.mark();
        self.translate_event(event)
            .inspect_err(|_| self.turn.undo(mark))
    }

    fn translate_event(&mut self, event: &Value) -> Result<Vec<DriverEvent>, MalformedEvent> {
        let mut out = Vec::new();
        let kind = str_field(event, "type")?;
        match kind {
            "init" => {
                let id = str_field(event, "session_id")?;
                self.session_id = Some(id.to_owned());
                self.turn.start(&mut out);
            }
            "message" => {
                let role = str_field(event, "role")?;
                let content = str_field(event, "content")?;
                if role == "assistant" {
                    // Streamed chunks carry `delta: true`; anything else is a whole message.
                    if event.get("delta").and_then(Value::as_bool) != Some(true) {
                        self.message.clear();
                    }
                    self.message.push_str(content);
                    if !content.is_empty() {
                        self.turn.start(&mut out);
                        out.push(DriverEvent::text(content));
                    }
                }
            }
            "tool_use" => {
                let id = str_field(event, "tool_id")?;
                let name = str_field(event, "tool_name")?;
                let arguments = driver_cli::json_text(event.get("parameters"));
                self.turn.start(&mut out);
                self.message.clear();
                self.turn
                    .open_call(id, &self.names.report(name), &arguments, &mut out);
            }
            "tool_result" => {
                let id = str_field(event, "tool_id")?;
                let failed = opt_str(event, "status") != Some("success");
                let output = opt_str(event, "output").filter(|o| !o.is_empty());
                let error = event.pointer("/error/message").and_then(Value::as_str);
                let text = match (failed, output, error) {
                    (true, _, Some(error)) => self.redactor.redact(error).into_owned(),
                    (_, Some(output), _) => output.to_owned(),
                    _ => String::new(),
                };
                self.turn.close_call(id, text, failed, &mut out);
            }
            "error" => {
                let message = str_field(event, "message")?;
                self.last_error = Some(self.redactor.redact(message).into_owned());
            }
            "result" => {
                let status = str_field(event, "status")?;
                let text = |pointer: &str| {
                    event
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                };
                let message = self.redactor.redact(text("/error/message")).into_owned();
                self.result = Some(TurnResult {
                    success: status == "success",
                    error_type: text("/error/type").to_owned(),
                    message,
                    usage: event.get("stats").and_then(usage),
                });
                self.turn.start(&mut out);
            }
            _ => {}
        }
        Ok(out)
    }

    /// Closes every tool call still open (a clean run must not finish with one open), as an
    /// error result.
    pub fn close_open_calls(&mut self) -> Vec<DriverEvent> {
        self.turn.close_open_calls()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use secrecy::SecretString;
    use serde_json::json;

    fn run(lines: &[Value]) -> (EventTranslator, Vec<DriverEvent>) {
        let mut t = EventTranslator::new(Redactor::default(), ToolNames::new(["agent-tools"]));
        let mut events = Vec::new();
        for line in lines {
            events.extend(t.translate(line).unwrap());
        }
        (t, events)
    }

    /// Verbatim from gemini 0.61.0 against the loopback mock (timestamps dropped).
    #[test]
    fn a_recorded_tool_turn() {
        let id = "mcp_agent-tools_ping__mcp_agent-tools_ping_1796087179315_0";
        let (t, events) = run(&[
            json!({"type":"init","session_id":"11111111-2222-4333-8444-555555555555","model":"mock-model"}),
            json!({"type":"message","role":"user","content":"say hi"}),
            json!({"type":"tool_use","tool_name":"mcp_agent-tools_ping","tool_id":id,"parameters":{"text":"one"}}),
            json!({"type":"tool_result","tool_id":id,"status":"success","output":"pong {\"text\": \"one\"}"}),
            json!({"type":"message","role":"assistant","content":"Hello from mock 2","delta":true}),
            json!({"type":"result","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10,"cached":0,"input":20,"duration_ms":94,"tool_calls":1}}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started(id, "mcp__agent-tools__ping"),
                DriverEvent::tool_call_arguments(id, r#"{"text":"one"}"#),
                DriverEvent::tool_call_result(id, r#"pong {"text": "one"}"#, false),
                DriverEvent::text("Hello from mock 2"),
            ]
        );
        assert_eq!(t.session_id(), Some("11111111-2222-4333-8444-555555555555"));
        assert_eq!(t.output(), "Hello from mock 2");
        let result = t.result().unwrap();
        assert!(result.success);
        assert_eq!(result.usage, Some(Usage::new(20, 10)));
    }

    #[test]
    fn output_is_the_text_after_the_last_tool_call() {
        let (t, events) = run(&[
            json!({"type":"init","session_id":"s"}),
            json!({"type":"message","role":"assistant","content":"Let me look","delta":true}),
            json!({"type":"tool_use","tool_name":"read_file","tool_id":"r1","parameters":{"path":"a"}}),
            json!({"type":"message","role":"assistant","content":"","delta":true}),
            json!({"type":"message","role":"assistant","content":"Fi","delta":true}),
            json!({"type":"message","role":"assistant","content":"ne","delta":true}),
        ]);
        assert_eq!(t.output(), "Fine");
        assert!(events.contains(&DriverEvent::tool_call_started("r1", "read_file")));
        assert!(!events.contains(&DriverEvent::text("")));
    }

    #[test]
    fn failed_tools_errors_and_results_are_redacted() {
        let secret = "AIza-canary-0123456789";
        let redactor = Redactor::from_iter([SecretString::from(secret)]);
        let mut t = EventTranslator::new(redactor, ToolNames::default());
        t.translate(&json!({"type":"tool_use","tool_name":"x","tool_id":"a"}))
            .unwrap();
        let events = t
            .translate(&json!({"type":"tool_result","tool_id":"a","status":"error","error":{"type":"TOOL_EXECUTION_ERROR","message":format!("bad key {secret}")}}))
            .unwrap();
        assert_eq!(
            events,
            [DriverEvent::tool_call_result(
                "a",
                "bad key [REDACTED]",
                true
            )]
        );
        t.translate(&json!({"type":"error","severity":"error","message":format!("e {secret}")}))
            .unwrap();
        assert!(!t.last_error().unwrap().contains(secret));
        t.translate(&json!({"type":"result","status":"error","error":{"type":"unknown","message":format!("[API Error: 401 {secret}]")}}))
            .unwrap();
        let result = t.result().unwrap();
        assert!(!result.success && !result.message.contains(secret));
        assert_eq!(result.error_type, "unknown");
        assert_eq!(result.usage, None);
    }

    #[test]
    fn unknown_events_are_ignored_and_malformed_known_ones_change_nothing() {
        let mut t = EventTranslator::default();
        assert_eq!(t.translate(&json!({"type":"thought","x":1})), Ok(vec![]));
        for bad in [
            json!({"no_type": true}),
            json!({"type": "init"}),
            json!({"type": "init", "session_id": 7}),
            json!({"type": "message", "role": "assistant"}),
            json!({"type": "tool_use", "tool_name": "x"}),
            json!({"type": "tool_result"}),
            json!({"type": "result"}),
            json!({"type": "error"}),
        ] {
            assert_eq!(t.translate(&bad), Err(MalformedEvent), "{bad}");
        }
        assert!(!t.started() && t.session_id().is_none() && t.result().is_none());
        // A result for a call that never started opens nothing.
        assert_eq!(
            t.translate(&json!({"type":"tool_result","tool_id":"z","status":"success"})),
            Ok(vec![])
        );
    }

    #[test]
    fn calls_open_once_and_open_calls_close_as_errors() {
        let (mut t, events) = run(&[
            json!({"type":"tool_use","tool_name":"x","tool_id":"c","parameters":null}),
            json!({"type":"tool_use","tool_name":"x","tool_id":"c"}),
            json!({"type":"tool_use","tool_name":"x","tool_id":""}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("c", "x")
            ]
        );
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
