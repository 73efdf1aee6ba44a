//! `gemini --output-format stream-json` events, translated into driver-spi events.
//!
//! The translator is a pure state machine over parsed JSONL values: no I/O, so every mapping
//! is unit-tested without a process. Unknown event types are ignored (newer Gemini releases
//! add them); a known event whose required fields are missing or mistyped is a
//! [`MalformedEvent`], and translating it changes nothing.

use driver_cli::{CliEvent, MalformedEvent, ToolNames, Translator, str_field};
use driver_spi::{DriverEvent, FailureKind, Redactor, RunFailure, Usage};
use serde_json::Value;
use std::sync::OnceLock;

/// The `result` event: how Gemini judged the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TurnResult {
    /// `status == "success"`.
    success: bool,
    /// `error.type` (for example `FatalTurnLimitedError`), empty when absent.
    error_type: String,
    /// `error.message`, redacted; empty when absent.
    message: String,
    /// Token usage from `stats`.
    usage: Option<Usage>,
}

/// Translates one run's stream-json events into driver events, and keeps what the judgement
/// needs: the session id, the final assistant message, the `result` and the last `error`.
///
/// Tool names are reported as `mcp__<declared server>__<tool>`: Gemini calls an MCP tool
/// `mcp_<server>_<tool>` (see [`ToolNames`]). Provider text passes the turn's redactor: each
/// streamed piece of the answer, a tool's parameters and output, error messages; the answer
/// kept as the output is redacted whole, so a secret split across pieces is hidden there.
///
/// `pub` only because it is the [`Dialect::Translator`](driver_cli::Dialect::Translator) of a
/// public type (a crate-private type cannot be one); its module is private, so nothing
/// outside the crate can name or build it.
#[derive(Debug, Default)]
pub struct EventTranslator {
    redactor: Redactor,
    names: ToolNames,
    /// `RunStarted` and the tool-call lifecycle, by `tool_id`.
    session_id: Option<String>,
    /// The assistant text since the last tool call, as Gemini sent it.
    message: String,
    /// `message` redacted whole (the run's output), made when first asked for after a change.
    output: OnceLock<String>,
    result: Option<TurnResult>,
    last_error: Option<String>,
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

/// The failure class of a failed `result` event from its `error.type` and message (or the
/// last `error` event's, when the result has none). The exit status refines it
/// ([`crate::dialect`]).
pub(crate) fn classify(error_type: &str, message: &str) -> FailureKind {
    if error_type.contains("TurnLimited") {
        return FailureKind::Limit;
    }
    if error_type.contains("Authentication") {
        return FailureKind::Authentication;
    }
    let text = message.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if any(&[
        "401",
        "403",
        "unauthenticated",
        "permission_denied",
        "api key",
    ]) {
        FailureKind::Authentication
    } else if any(&["429", "resource_exhausted", "quota", "rate limit"]) {
        FailureKind::RateLimited
    } else {
        FailureKind::ModelProvider
    }
}

impl EventTranslator {
    /// A translator that redacts error text with `redactor` and reports MCP tools of the
    /// servers in `names`.
    pub(crate) fn new(redactor: Redactor, names: ToolNames) -> Self {
        Self {
            redactor,
            names,
            ..Self::default()
        }
    }
}

impl Translator for EventTranslator {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, event, turn, out) = event.into_parts();
        match kind {
            "init" => {
                let id = str_field(event, "session_id")?;
                self.session_id = Some(id.to_owned());
                turn.start(out);
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
                    self.output = OnceLock::new();
                    if !content.is_empty() {
                        turn.start(out);
                        out.push(DriverEvent::text(self.redactor.redact(content)));
                    }
                }
            }
            "tool_use" => {
                let id = str_field(event, "tool_id")?;
                let name = str_field(event, "tool_name")?;
                let arguments = driver_cli::json_text(event.get("parameters"));
                turn.start(out);
                self.message.clear();
                self.output = OnceLock::new();
                let arguments = self.redactor.redact(&arguments);
                turn.open_call(id, &self.names.report(name), &arguments, out);
            }
            "tool_result" => {
                let id = str_field(event, "tool_id")?;
                let failed = opt_str(event, "status") != Some("success");
                let output = opt_str(event, "output").filter(|o| !o.is_empty());
                let error = event.pointer("/error/message").and_then(Value::as_str);
                let text = match (failed, output, error) {
                    (true, _, Some(error)) => self.redactor.redact(error).into_owned(),
                    (_, Some(output), _) => self.redactor.redact(output).into_owned(),
                    _ => String::new(),
                };
                turn.close_call(id, text, failed, out);
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
                turn.start(out);
            }
            _ => {}
        }
        Ok(())
    }

    /// The session id from `init`.
    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The assistant text after the last tool call, redacted whole.
    fn output(&self) -> &str {
        self.output
            .get_or_init(|| self.redactor.redact(&self.message).into_owned())
    }

    /// A `result` with `status: "success"`.
    fn succeeded(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.success)
    }

    /// A `result` that is not a success, classified by its error type and text.
    fn reported_failure(&self) -> Option<RunFailure> {
        let result = self.result.as_ref().filter(|r| !r.success)?;
        let message = if result.message.is_empty() {
            self.last_error().unwrap_or("gemini reported an error")
        } else {
            &result.message
        };
        Some(RunFailure::new(
            classify(&result.error_type, message),
            message,
        ))
    }

    fn usage(&self) -> Option<Usage> {
        self.result.as_ref().and_then(|r| r.usage)
    }

    /// The message of the last `error` event, redacted.
    fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }
}

/// The request's MCP servers, for tool names as Gemini reports them.
///
/// Gemini 0.61.0 names an MCP tool `mcp_<server>_<tool>`, with every character outside
/// `[A-Za-z0-9_.:-]` replaced by `_` (and names over 63 characters cut to their first and
/// last 30 around `...`). Server names this driver accepts are `[A-Za-z0-9_-]`, so they
/// appear unchanged; since `_` is also the separator, the longest declared server name that
/// fits wins.
pub(crate) fn tool_names<'a>(servers: impl IntoIterator<Item = &'a str>) -> ToolNames {
    ToolNames::new(servers).with_wire_form("mcp_", "_")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use driver_cli::Tracked;
    use secrecy::SecretString;
    use serde_json::json;

    fn run(lines: &[Value]) -> (Tracked<EventTranslator>, Vec<DriverEvent>) {
        cli_test_kit::translate_all(
            EventTranslator::new(Redactor::default(), tool_names(["agent-tools"])),
            lines,
        )
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
        assert!(t.succeeded() && t.reported_failure().is_none());
        assert_eq!(t.usage(), Some(Usage::new(20, 10)));
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

    /// The model's text, a tool's parameters and its output pass the turn's redactor; the
    /// output, redacted whole, hides a key split across streamed pieces too.
    #[test]
    fn text_tool_parameters_and_output_are_redacted() {
        let secret = "opaque-key-5e1b";
        let redactor = Redactor::from_iter([SecretString::from(secret)]);
        let (t, events) = cli_test_kit::translate_all(
            EventTranslator::new(redactor, tool_names([])),
            &[
                json!({"type":"init","session_id":"s"}),
                json!({"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":format!("echo {secret}")}}),
                json!({"type":"tool_result","tool_id":"t1","status":"success","output":secret}),
                json!({"type":"message","role":"assistant","content":format!("the key is {secret}"),"delta":true}),
                json!({"type":"message","role":"assistant","content":" and opaque-","delta":true}),
                json!({"type":"message","role":"assistant","content":"key-5e1b again","delta":true}),
            ],
        );
        assert!(!format!("{events:?}").contains(secret), "{events:?}");
        assert!(events.contains(&DriverEvent::tool_call_result("t1", "[REDACTED]", false)));
        assert_eq!(t.output(), "the key is [REDACTED] and [REDACTED] again");
    }

    #[test]
    fn failed_tools_errors_and_results_are_redacted() {
        let secret = "AIza-canary-0123456789";
        let redactor = Redactor::from_iter([SecretString::from(secret)]);
        let mut t = Tracked::new(EventTranslator::new(redactor, tool_names([])));
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
        assert!(!t.succeeded());
        let failure = t.reported_failure().unwrap();
        assert!(!failure.message.contains(secret), "{failure:?}");
        assert_eq!(failure.kind, FailureKind::Authentication);
        assert_eq!(t.usage(), None);
        // A failed result without a message reports the last error event's.
        t.translate(
            &json!({"type":"result","status":"error","error":{"type":"FatalTurnLimitedError"}}),
        )
        .unwrap();
        let failure = t.reported_failure().unwrap();
        assert_eq!(
            (failure.kind, failure.message.as_str()),
            (FailureKind::Limit, "e [REDACTED]")
        );
    }

    #[test]
    fn unknown_events_are_ignored_and_malformed_known_ones_change_nothing() {
        let mut t = Tracked::new(EventTranslator::default());
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
        assert!(!t.started() && t.session_id().is_none() && !t.succeeded());
        assert!(t.reported_failure().is_none() && t.usage().is_none());
        // A result for a call that never started opens nothing.
        assert_eq!(
            t.translate(&json!({"type":"tool_result","tool_id":"z","status":"success"})),
            Ok(vec![])
        );
    }

    /// A call opens once, and one without an id not at all (the driver closes what is left
    /// open: `driver_cli::TurnEvents` and its tests).
    #[test]
    fn calls_open_once() {
        let (_, events) = run(&[
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
    }

    #[test]
    fn results_are_classified_by_type_and_text() {
        // Verbatim `error.message`s of gemini 0.61.0 against the loopback mock.
        let unauthenticated = r#"[API Error: {"error":{"code":401,"message":"mock failure 401","status":"UNAUTHENTICATED"}}]"#;
        assert_eq!(
            classify("unknown", unauthenticated),
            FailureKind::Authentication
        );
        let quota = "[API Error: mock failure 429]\nPlease wait and try again later. To increase \
                     your limits, request a quota increase through AI Studio";
        assert_eq!(classify("unknown", quota), FailureKind::RateLimited);
        assert_eq!(
            classify("FatalTurnLimitedError", "Reached max"),
            FailureKind::Limit
        );
        assert_eq!(
            classify("FatalAuthenticationError", "x"),
            FailureKind::Authentication
        );
        assert_eq!(
            classify("unknown", "[API Error: boom]"),
            FailureKind::ModelProvider
        );
    }

    #[test]
    fn longest_declared_server_wins_and_others_pass() {
        let names = tool_names(["a", "a_b", "x-y"]);
        assert_eq!(names.report("mcp_a_b_ping"), "mcp__a_b__ping");
        assert_eq!(names.report("mcp_a_ping"), "mcp__a__ping");
        assert_eq!(names.report("mcp_x-y_do.it"), "mcp__x-y__do.it");
        assert_eq!(names.report("mcp_a_"), "mcp_a_");
        assert_eq!(names.report("mcp_"), "mcp_");
        assert_eq!(names.report("glob"), "glob");
        assert_eq!(tool_names([]).report("mcp_a_b"), "mcp_a_b");
    }
}
