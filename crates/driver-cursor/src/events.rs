//! `cursor-agent -p --output-format stream-json` events, translated into driver-spi events.
//!
//! The documented events (<https://cursor.com/docs/cli/reference/output-format.md>) are
//! `system` (subtype `init`), `user` (the prompt echoed), `assistant` (one line per complete
//! assistant message), `tool_call` (subtypes `started` and `completed`) and the terminal
//! `result`. Real builds print more (`thinking`, `interaction_query`, `retry`, …); unknown
//! types and subtypes are ignored so newer releases keep working. A known event with a broken
//! shape is a [`MalformedEvent`]. The translator is pure: no I/O, so every mapping is
//! unit-tested and fuzzed without a process.

use driver_cli::{CliEvent, MalformedEvent, ToolNames, Translator, TurnEvents, message_content};
use driver_spi::{DriverEvent, FailureKind, Redactor, RunFailure, Usage};
use serde_json::Value;

mod tools;

/// The terminal `result` event.
#[derive(Debug)]
struct CursorResult {
    /// Subtype `success` (the only documented one) and not `is_error`.
    success: bool,
    /// The complete assistant text (redacted).
    text: String,
}

/// Translates one run's Cursor stream-json events into driver events, and keeps what the
/// judgement needs: the chat id (`session_id`), the assistant text and the `result`.
///
/// `pub` only because the dialect's `Translator` type must be a public type (a crate-private
/// type cannot be one); its module is private, so nothing outside the crate can name or build
/// it.
#[derive(Debug, Default)]
pub struct EventTranslator {
    redactor: Redactor,
    names: ToolNames,
    /// The session id, `RunStarted` and the tool-call lifecycle, by `call_id`.
    text: String,
    result: Option<CursorResult>,
}

impl EventTranslator {
    /// A translator that redacts Cursor's text (the answer, tool arguments and results, the
    /// result) with the turn's `redactor` and reports MCP tools of the declared `servers` as
    /// `mcp__<server>__<tool>`.
    pub(crate) fn new<'a>(redactor: Redactor, servers: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            redactor,
            names: ToolNames::new(servers),
            ..Self::default()
        }
    }

    fn tool_call(
        &mut self,
        turn: &mut TurnEvents,
        event: &Value,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let subtype = event.get("subtype").and_then(Value::as_str);
        if !matches!(subtype, Some("started" | "completed")) {
            return Ok(());
        }
        let id = event
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or(MalformedEvent)?;
        let payload = event.get("tool_call").ok_or(MalformedEvent)?;
        let call = tools::parse(payload, &self.names)?;
        turn.note_session(event);
        turn.start(out);
        // A `completed` without its `started` still opens the call first; a closed call
        // stays closed.
        turn.open_call(id, &call.name, &self.redactor.redact(&call.arguments), out);
        if subtype == Some("completed") {
            let (output, is_error) = tools::outcome(call.result);
            turn.close_call(
                id,
                self.redactor.redact(&output).into_owned(),
                is_error,
                out,
            );
        }
        Ok(())
    }
}

impl Translator for EventTranslator {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, event, turn, out) = event.into_parts();
        match kind {
            "system" => {
                turn.note_session(event);
                if event.get("subtype").and_then(Value::as_str) == Some("init") {
                    turn.start(out);
                }
            }
            // The prompt echoed back: nothing new, but it names the chat.
            "user" => turn.note_session(event),
            "assistant" => {
                let blocks = message_content(event)?;
                turn.note_session(event);
                turn.start(out);
                let mut message = String::new();
                for block in blocks {
                    if block.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(text) = block.get("text").and_then(Value::as_str)
                        && !text.is_empty()
                    {
                        out.push(DriverEvent::text(self.redactor.redact(text)));
                        message.push_str(text);
                    }
                }
                // Kept redacted whole: a secret split across blocks is hidden here too.
                self.text.push_str(&self.redactor.redact(&message));
            }
            "tool_call" => self.tool_call(turn, event, out)?,
            "result" => {
                // No `RunStarted` here: a lone `result` does not prove the run started.
                turn.note_session(event);
                let text = event.get("result").and_then(Value::as_str).unwrap_or("");
                let is_error = event.get("is_error").and_then(Value::as_bool) == Some(true);
                self.result = Some(CursorResult {
                    success: event.get("subtype").and_then(Value::as_str) == Some("success")
                        && !is_error,
                    text: self.redactor.redact(text).into_owned(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The `result` text, else the assistant messages joined.
    fn output(&self) -> &str {
        match &self.result {
            Some(result) if !result.text.is_empty() => &result.text,
            _ => &self.text,
        }
    }

    fn succeeded(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.success)
    }

    /// A failed `result`, classified by its text ([`crate::dialect::classify`]).
    fn reported_failure(&self) -> Option<RunFailure> {
        let result = self.result.as_ref().filter(|r| !r.success)?;
        let kind = crate::dialect::classify(&result.text, FailureKind::ModelProvider);
        Some(RunFailure::new(kind, result.text.clone()))
    }

    /// Cursor reports no usage.
    fn usage(&self) -> Option<Usage> {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use driver_cli::Tracked;
    use run_service::EnvBinding;
    use serde_json::json;

    fn run(lines: &[Value]) -> (Tracked<EventTranslator>, Vec<DriverEvent>) {
        cli_test_kit::translate_all(
            EventTranslator::new(Redactor::default(), ["agent-ui"]),
            lines,
        )
    }

    #[test]
    fn text_turn() {
        let (t, events) = run(&[
            json!({"type":"system","subtype":"init","apiKeySource":"env","cwd":"/w","session_id":"c-1","model":"Auto","permissionMode":"default"}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"session_id":"c-1"}),
            json!({"type":"thinking","subtype":"delta","text":"hm","session_id":"c-1"}),
            json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hel"},{"type":"text","text":""},{"type":"text","text":"lo"}]},"session_id":"c-1"}),
            json!({"type":"result","subtype":"success","is_error":false,"duration_ms":12,"duration_api_ms":12,"result":"Hello","session_id":"c-1","request_id":"r-1"}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::text("Hel"),
                DriverEvent::text("lo")
            ]
        );
        assert_eq!(t.session_id(), Some("c-1"));
        assert_eq!(t.output(), "Hello");
        assert!(t.succeeded() && t.reported_failure().is_none());
    }

    #[test]
    fn mcp_tool_turn() {
        let (t, events) = run(&[
            json!({"type":"system","subtype":"init","apiKeySource":"env","cwd":"/w","session_id":"c-1","model":"Auto","permissionMode":"default"}),
            json!({"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"mcpToolCall":{"args":{"providerIdentifier":"agent-ui","toolName":"ping","args":{"n":1}}}},"session_id":"c-1"}),
            json!({"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"mcpToolCall":{"args":{"providerIdentifier":"agent-ui","toolName":"ping","args":{"n":1}},"result":{"success":{"content":[{"text":{"text":"pong"}}],"isError":false}}}},"session_id":"c-1"}),
            json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]},"session_id":"c-1"}),
            json!({"type":"result","subtype":"success","is_error":false,"duration_ms":5,"duration_api_ms":5,"result":"Done.","session_id":"c-1","request_id":"r"}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("t1", "mcp__agent-ui__ping"),
                DriverEvent::tool_call_arguments("t1", r#"{"n":1}"#),
                DriverEvent::tool_call_result("t1", "pong", false),
                DriverEvent::text("Done."),
            ]
        );
        assert_eq!(t.session_id(), Some("c-1"));
        assert!(t.succeeded());
    }

    #[test]
    fn tool_call_lifecycle_opens_once_and_closes() {
        let started = json!({"type":"tool_call","subtype":"started","call_id":"c1","tool_call":{"readToolCall":{"args":{"path":"a.txt"}}},"session_id":"s"});
        let done = json!({"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{"readToolCall":{"args":{"path":"a.txt"},"result":{"success":{"content":"x"}}}},"session_id":"s"});
        let (_, events) = run(&[started.clone(), started, done.clone(), done]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("c1", "read"),
                DriverEvent::tool_call_arguments("c1", r#"{"path":"a.txt"}"#),
                DriverEvent::tool_call_result("c1", r#"{"content":"x"}"#, false),
            ]
        );
    }

    #[test]
    fn a_completion_without_its_start_opens_and_closes() {
        let (_, events) = run(&[
            json!({"type":"tool_call","subtype":"completed","call_id":"c2","tool_call":{"shellToolCall":{"result":{"rejected":{"command":"rm","reason":"denied"}}}}}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("c2", "shell"),
                DriverEvent::tool_call_result("c2", "denied", true),
            ]
        );
    }

    /// The model's text and a tool's arguments and output pass the turn's redactor; the text
    /// kept as the output is redacted whole, so a key split across blocks is hidden there.
    #[test]
    fn text_and_tool_calls_are_redacted() {
        let secret = "opaque-key-5e1b";
        let (t, events) = cli_test_kit::translate_all(
            EventTranslator::new(
                Redactor::from_iter([EnvBinding::new("K", secret.to_owned()).value().clone()]),
                [],
            ),
            &[
                json!({"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{"shellToolCall":{"args":{"command":format!("echo {secret}")},"result":{"success":{"stdout":secret,"exitCode":0}}}},"session_id":"s"}),
                json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"key opaque-"},{"type":"text","text":"key-5e1b"}]},"session_id":"s"}),
            ],
        );
        assert!(!format!("{events:?}").contains(secret), "{events:?}");
        assert!(events.contains(&DriverEvent::tool_call_arguments(
            "c1",
            r#"{"command":"echo [REDACTED]"}"#
        )));
        assert_eq!(t.output(), "key [REDACTED]");
    }

    #[test]
    fn the_result_is_redacted_and_a_lone_result_does_not_start() {
        let secret = "sk-canary-0123456789";
        let mut t = Tracked::new(EventTranslator::new(
            Redactor::from_iter([EnvBinding::new("K", secret.to_owned()).value().clone()]),
            [],
        ));
        let out = t
            .translate(&json!({"type":"result","subtype":"error","is_error":true,"result":format!("bad api key {secret}"),"session_id":"s"}))
            .unwrap();
        assert!(out.is_empty() && !t.started());
        assert!(!t.succeeded());
        let failure = t.reported_failure().unwrap();
        assert!(!failure.message.contains(secret) && !t.output().contains(secret));
        // "api key" in the text: an authentication failure.
        assert_eq!(failure.kind, FailureKind::Authentication);
    }

    #[test]
    fn a_failed_result_is_a_provider_failure_unless_its_text_says_more() {
        let mut t = Tracked::new(EventTranslator::default());
        t.translate(
            &json!({"type":"result","subtype":"error","is_error":true,"result":"model overloaded"}),
        )
        .unwrap();
        let failure = t.reported_failure().unwrap();
        assert_eq!(
            (failure.kind, failure.message.as_str()),
            (FailureKind::ModelProvider, "model overloaded")
        );
        let mut t = Tracked::new(EventTranslator::default());
        t.translate(&json!({"type":"result","subtype":"success","is_error":true,"result":"429 Too Many Requests"}))
            .unwrap();
        assert_eq!(t.reported_failure().unwrap().kind, FailureKind::RateLimited);
    }

    #[test]
    fn malformed_known_events_are_errors_and_unknown_ones_ignored() {
        let mut t = Tracked::new(EventTranslator::default());
        for bad in [
            json!({"no":"type"}),
            json!({"type":"assistant","message":{"content":{"not":"a list"}}}),
            json!({"type":"tool_call","subtype":"started","tool_call":{"readToolCall":{}}}),
            json!({"type":"tool_call","subtype":"started","call_id":"c"}),
            json!({"type":"tool_call","subtype":"completed","call_id":"c","tool_call":[]}),
        ] {
            assert_eq!(t.translate(&bad), Err(MalformedEvent), "{bad}");
        }
        assert!(!t.started());
        for ignored in [
            json!({"type":"interaction_query","subtype":"request"}),
            json!({"type":"tool_call","subtype":"delta","call_id":"c"}),
            json!({"type":"system","subtype":"task_notification"}),
        ] {
            assert_eq!(t.translate(&ignored), Ok(vec![]), "{ignored}");
        }
    }

    /// A started call stays open until it completes (the driver closes what is left open:
    /// `driver_cli::TurnEvents` and its tests).
    #[test]
    fn a_started_function_call_opens() {
        let (_, events) = run(&[
            json!({"type":"tool_call","subtype":"started","call_id":"c3","tool_call":{"function":{"name":"grep","arguments":"{}"}}}),
        ]);
        assert_eq!(
            events,
            [
                DriverEvent::RunStarted,
                DriverEvent::tool_call_started("c3", "grep"),
                DriverEvent::tool_call_arguments("c3", "{}"),
            ]
        );
    }
}
