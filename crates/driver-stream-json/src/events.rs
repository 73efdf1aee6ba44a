//! stream-json events, translated into driver-spi events.

use driver_cli::{
    CliEvent, MalformedEvent, McpStatus, ToolNames, Translator, TurnEvents, message_content,
    str_field,
};
use driver_spi::{DriverEvent, FailureKind, Redactor, Request, RunFailure, Usage};
use serde_json::Value;

/// The `result` event: how the CLI judged the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnResult {
    /// `success`, `error_during_execution`, `error_max_turns`, …
    pub subtype: String,
    /// Whether the CLI reports the turn as failed.
    pub is_error: bool,
    /// The final text (redacted).
    pub text: String,
    /// Token usage of this invocation.
    pub usage: Option<Usage>,
    /// The HTTP status of the model API error that ended the turn, when the CLI reports one
    /// (`api_error_status`).
    pub api_error_status: Option<u16>,
    /// The error messages of a failed turn (`errors`, redacted).
    pub errors: Vec<String>,
    /// The answer as data (`structured_output`, its strings redacted), for a turn run with
    /// `--json-schema` whose model called the `StructuredOutput` tool with valid input. Its
    /// absence after a success means the model never did: the CLI does not fail the turn.
    pub structured_output: Option<Value>,
}

impl TurnResult {
    /// The text that explains a failure: the result text, else the errors.
    pub fn failure_text(&self) -> String {
        if self.text.is_empty() {
            self.errors.join("\n")
        } else {
            self.text.clone()
        }
    }

    /// Whether the turn succeeded: subtype `success` and not `is_error`.
    pub fn is_success(&self) -> bool {
        self.subtype == "success" && !self.is_error
    }
}

/// Translates one run's stream-json events into driver events, and keeps what the judgement
/// needs: the session id, the MCP server statuses of `system/init`, the `result` event and a
/// top-level `error` event. A failed `result` is classified by the driver's own rule.
///
/// Unknown event types (`stream_event`, `rate_limit_event`, `file-history-snapshot`, …) and
/// unknown content blocks (`thinking`, …) are ignored, so newer CLI releases keep working.
#[derive(Debug)]
pub struct StreamJson {
    redactor: Redactor,
    names: ToolNames,
    classify: fn(&TurnResult) -> FailureKind,
    /// The session id, `RunStarted` and the tool-call lifecycle, by `tool_use` id.
    mcp_servers: Option<Vec<McpStatus>>,
    last_text: Option<String>,
    result: Option<TurnResult>,
    error: Option<String>,
    /// `result.usage` counts the whole resident process (CodeBuddy), not the turn.
    process_usage: bool,
    /// The process's counts after the previous turn, when `process_usage`.
    previous: Option<Usage>,
    /// Follow-ups written into the turn, and the `user` messages the CLI echoed as it took
    /// them (`isReplay`, under `--replay-user-messages`): the prompt's, then one per
    /// follow-up taken.
    steered: usize,
    echoed: usize,
    /// The last `result` came after the CLI took every follow-up: the turn ended there.
    result_ends: bool,
}

impl StreamJson {
    /// A translator for one turn of `request` that redacts with the turn's `redactor`
    /// ([`Dialect::translator`](driver_cli::Dialect::translator)), reports the tools of the
    /// request's MCP servers by their names, and judges a failed `result` with `classify`.
    pub fn new(
        request: &Request,
        redactor: Redactor,
        classify: fn(&TurnResult) -> FailureKind,
    ) -> Self {
        Self::with(
            redactor,
            ToolNames::new(request.mcp.iter().map(|s| s.name.as_str())),
            classify,
        )
    }

    pub(crate) fn with(
        redactor: Redactor,
        names: ToolNames,
        classify: fn(&TurnResult) -> FailureKind,
    ) -> Self {
        Self {
            redactor,
            names,
            classify,
            mcp_servers: None,
            last_text: None,
            result: None,
            error: None,
            process_usage: false,
            previous: None,
            steered: 0,
            echoed: 0,
            result_ends: false,
        }
    }

    /// Reads `result.usage` as the resident process's running count (CodeBuddy's, in
    /// resident mode): a turn's usage is the difference from the count the previous turn on
    /// the same process left ([`Translator::carried`](driver_cli::Translator::carried)).
    pub fn with_process_usage(mut self, process_usage: bool) -> Self {
        self.process_usage = process_usage;
        self
    }

    /// Whether the CLI said it does not know the session it was asked to resume: Claude Code
    /// on stderr (exit 1, with a lone `error_during_execution` result and no `system/init`),
    /// CodeBuddy in a lone `error` event (exit 0, before `system/init`), both as "No
    /// conversation found with session ID: …".
    pub fn unknown_session(&self, stderr: &str) -> bool {
        const PHRASE: &str = "no conversation found with session id";
        [stderr, self.error.as_deref().unwrap_or("")]
            .iter()
            .any(|text| text.to_ascii_lowercase().contains(PHRASE))
    }

    fn tool_use(
        &mut self,
        turn: &mut TurnEvents,
        block: &Value,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let id = str_field(block, "id")?;
        let name = str_field(block, "name")?;
        let arguments = driver_cli::json_text(block.get("input"));
        // A tool's input may carry a run secret (a token the model read): redacted, like text.
        let arguments = self.redactor.redact(&arguments);
        turn.open_call(id, &self.names.report(name), &arguments, out);
        Ok(())
    }

    fn tool_result(
        &mut self,
        turn: &mut TurnEvents,
        block: &Value,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let id = str_field(block, "tool_use_id")?;
        let output = match block.get("content") {
            Some(Value::String(s)) => unwrap_encoded_blocks(s),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .map(unwrap_encoded_blocks)
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let is_error = block
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let output = self.redactor.redact(&output).into_owned();
        turn.close_call(id, output, is_error, out);
        Ok(())
    }
}

impl Translator for StreamJson {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, event, turn, out) = event.into_parts();
        match kind {
            "system" => {
                turn.note_session(event);
                if event.get("subtype").and_then(Value::as_str) == Some("init") {
                    self.mcp_servers = Some(mcp_statuses(event.get("mcp_servers"))?);
                    turn.start(out);
                }
            }
            "assistant" => {
                turn.note_session(event);
                turn.start(out);
                let mut text = String::new();
                for block in message_content(event)? {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let piece = block.get("text").and_then(Value::as_str).unwrap_or("");
                            if !piece.is_empty() {
                                out.push(DriverEvent::text(self.redactor.redact(piece)));
                                text.push_str(piece);
                            }
                        }
                        Some("tool_use") => self.tool_use(turn, block, out)?,
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    // Redacted whole: a secret split across blocks is hidden here too.
                    self.last_text = Some(self.redactor.redact(&text).into_owned());
                }
            }
            "user" => {
                turn.note_session(event);
                for block in message_content(event)? {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        self.tool_result(turn, block, out)?;
                    }
                }
                if event.get("isReplay").and_then(Value::as_bool) == Some(true) {
                    self.echoed += 1;
                }
            }
            "result" => {
                // No `RunStarted` here: a CLI that refuses to start (an unknown session)
                // prints a lone `result` without `system/init`.
                turn.note_session(event);
                let text = event.get("result").and_then(Value::as_str).unwrap_or("");
                // A follow-up the CLI ran as a turn of its own adds that turn's usage
                // (Claude Code's `usage` is per CLI turn).
                let usage = match (
                    self.result.as_ref().and_then(|r| r.usage),
                    event.get("usage"),
                ) {
                    (Some(before), Some(now)) if !self.process_usage => {
                        Some(added(before, usage(now)))
                    }
                    (_, now) => now.map(usage),
                };
                self.result_ends = self.steered == 0 || self.echoed > self.steered;
                self.result = Some(TurnResult {
                    subtype: event
                        .get("subtype")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    is_error: event
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    text: self.redactor.redact(text).into_owned(),
                    usage,
                    api_error_status: event
                        .get("api_error_status")
                        .and_then(Value::as_u64)
                        .and_then(|s| u16::try_from(s).ok()),
                    errors: event
                        .get("errors")
                        .and_then(Value::as_array)
                        .map(|errors| {
                            errors
                                .iter()
                                .filter_map(Value::as_str)
                                .map(|e| self.redactor.redact(e).into_owned())
                                .collect()
                        })
                        .unwrap_or_default(),
                    structured_output: event
                        .get("structured_output")
                        .filter(|v| !v.is_null())
                        .map(|v| redact_strings(&self.redactor, v)),
                });
            }
            "error" => {
                let message = match event.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| other.to_string(), str::to_owned),
                    None => event
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                };
                self.error = Some(self.redactor.redact(&message).into_owned());
            }
            _ => {}
        }
        Ok(())
    }

    /// The `result` text, else the last assistant text.
    fn output(&self) -> &str {
        match &self.result {
            Some(result) if !result.text.is_empty() => &result.text,
            _ => self.last_text.as_deref().unwrap_or_default(),
        }
    }

    fn succeeded(&self) -> bool {
        self.result.as_ref().is_some_and(TurnResult::is_success)
    }

    fn structured_output(&self) -> Option<Value> {
        self.result.as_ref()?.structured_output.clone()
    }

    fn reported_failure(&self) -> Option<RunFailure> {
        match (&self.result, &self.error) {
            (Some(r), _) if !r.is_success() => {
                Some(RunFailure::new((self.classify)(r), r.failure_text()))
            }
            (_, Some(error)) => Some(RunFailure::new(FailureKind::ModelProvider, error.clone())),
            _ => None,
        }
    }

    fn usage(&self) -> Option<Usage> {
        let usage = self.result.as_ref().and_then(|r| r.usage)?;
        Some(match self.previous {
            Some(previous) if self.process_usage => Usage::new(
                usage.input_tokens.saturating_sub(previous.input_tokens),
                usage.output_tokens.saturating_sub(previous.output_tokens),
            )
            .with_cached_input_tokens(
                usage
                    .cached_input_tokens
                    .saturating_sub(previous.cached_input_tokens),
            ),
            _ => usage,
        })
    }

    /// The turn ends at `result`, or at a lone `error` before `system/init` (CodeBuddy's
    /// unknown session, after which a resident process waits for the next message). After a
    /// follow-up, only at a `result` that came once the CLI echoed every `user` message it
    /// was sent: one it had not taken yet runs as the next CLI turn, still this one's.
    fn turn_ended(&self) -> bool {
        (self.result.is_some() && self.result_ends)
            || (self.error.is_some() && self.mcp_servers.is_none())
    }

    fn steered(&mut self) {
        self.steered += 1;
        self.result_ends = false;
    }

    fn continue_from(&mut self, carried: Option<&Value>) {
        if self.process_usage {
            self.previous = carried.and_then(|v| serde_json::from_value(v.clone()).ok());
        }
    }

    fn carried(&self) -> Option<Value> {
        let usage = self.result.as_ref().and_then(|r| r.usage);
        match (self.process_usage, usage) {
            (true, Some(usage)) => serde_json::to_value(usage).ok(),
            _ => None,
        }
    }

    fn last_error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn mcp_servers(&self) -> Option<&[McpStatus]> {
        self.mcp_servers.as_deref()
    }
}

/// CodeBuddy reports an MCP result as one text block whose text is the JSON-encoded content
/// array (`[{"type":"text","text":"pong"}]`); such a text becomes the joined inner texts.
/// Any other text is kept as it is.
fn unwrap_encoded_blocks(text: &str) -> String {
    if !text.starts_with("[{") {
        return text.to_owned();
    }
    match serde_json::from_str::<Vec<Value>>(text) {
        Ok(blocks)
            if !blocks.is_empty()
                && blocks
                    .iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("text")) =>
        {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => text.to_owned(),
    }
}

/// `value` with every string in it redacted (object keys included).
fn redact_strings(redactor: &Redactor, value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redactor.redact(s).into_owned()),
        Value::Array(items) => items.iter().map(|v| redact_strings(redactor, v)).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (redactor.redact(k).into_owned(), redact_strings(redactor, v)))
            .collect(),
        other => other.clone(),
    }
}

fn mcp_statuses(servers: Option<&Value>) -> Result<Vec<McpStatus>, MalformedEvent> {
    let Some(servers) = servers else {
        return Ok(Vec::new());
    };
    let servers = servers.as_array().ok_or(MalformedEvent)?;
    servers
        .iter()
        .map(|s| {
            let name = str_field(s, "name")?;
            let status = s.get("status").and_then(Value::as_str).unwrap_or_default();
            Ok(McpStatus::new(name, status))
        })
        .collect()
}

/// Two usages added.
fn added(a: Usage, b: Usage) -> Usage {
    Usage::new(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
    )
    .with_cached_input_tokens(a.cached_input_tokens + b.cached_input_tokens)
}

/// Anthropic-style usage: input is `input_tokens` plus cache reads and writes; cached input is
/// the cache reads.
fn usage(value: &Value) -> Usage {
    let n = |k: &str| value.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cache_read_input_tokens");
    Usage::new(
        n("input_tokens") + cached + n("cache_creation_input_tokens"),
        n("output_tokens"),
    )
    .with_cached_input_tokens(cached)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests;
