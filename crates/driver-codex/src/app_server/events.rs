//! `codex app-server` notifications, translated into driver-spi events
//! ([`AppServerTranslator`]): the resident counterpart of the exec translator
//! ([`crate::events::EventTranslator`]).
//!
//! The driver hands each server notification over as a [`CliEvent`] whose `kind` is the
//! notification's `method` and whose `value` is its `params`. Like the exec translator this is
//! a pure state machine: unknown methods and item types are ignored (the server sends many,
//! see `docs/codex-app-server.md`, "Surprises"), and a known notification with a broken shape
//! is [`MalformedEvent`] and changes nothing.
//!
//! **Usage.** `thread/tokenUsage/updated` reports the thread's running totals, as
//! `turn.completed` does in exec mode. They are kept under the same checkpoint key
//! ([`TOTAL_KEY`](crate::events::TOTAL_KEY)) in the same encoding, so a thread can move between the two modes, and each
//! turn's usage is the difference from the totals of the state it continued.
//!
//! **Redaction.** Provider text (agent messages, tool arguments and results, error messages)
//! passes the request's redactor before it is emitted or kept.

use std::collections::BTreeSet;

use driver_cli::{CliEvent, MalformedEvent, TurnEvents, str_field};
use driver_spi::{DriverEvent, FailureKind, RunFailure, Usage};
use serde_json::Value;

use crate::events::{CodexEvents, Mode, SHELL_TOOL, classify, mcp_result_text};

/// The failure message of a turn that ended `interrupted`.
const INTERRUPTED: &str = "the turn was interrupted";

/// The failure message of a turn that ended `failed` without an error message.
const FAILED: &str = "the turn failed";

/// Translates one turn's `codex app-server` notifications. Unlike exec it redacts the agent
/// message it keeps, and ends the turn at `turn/completed`.
pub(crate) type AppServerTranslator = CodexEvents<AppServer>;

/// `codex app-server`: a resident process, whose `turn/completed` ends the turn.
#[derive(Debug, Default)]
pub struct AppServer {
    /// Agent-message items that streamed text deltas: their completed text is not emitted
    /// again.
    streamed: BTreeSet<String>,
}

impl Mode for AppServer {
    const RESIDENT: bool = true;

    fn translate(codex: &mut CodexEvents<Self>, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (method, params, turn, out) = event.into_parts();
        match method {
            "turn/started" => {
                if !params.is_object() {
                    return Err(MalformedEvent);
                }
                turn.start(out);
            }
            "item/agentMessage/delta" => {
                let id = str_field(params, "itemId")?;
                let delta = str_field(params, "delta")?;
                turn.start(out);
                if !delta.is_empty() {
                    // Redacted piece by piece: a secret split across two deltas passes here
                    // (the output, the item's whole text, is redacted whole). The core's sink
                    // redacts the joined deltas as one stream and catches it there.
                    out.push(DriverEvent::text(codex.redact(delta)));
                    codex.mode.streamed.insert(id.to_owned());
                }
            }
            "item/started" | "item/completed" => {
                let item = params.get("item").ok_or(MalformedEvent)?;
                codex.item(turn, item, method == "item/completed", out)?;
            }
            "thread/tokenUsage/updated" => {
                let total = params.pointer("/tokenUsage/total").ok_or(MalformedEvent)?;
                codex.total = Some(totals(total)?);
            }
            "turn/completed" => {
                let outcome = codex.outcome(params.get("turn").ok_or(MalformedEvent)?)?;
                // A turn that ended did start (as in exec mode), so a failure can follow.
                turn.start(out);
                codex.ended = true;
                codex.failure = outcome;
            }
            "error" => {
                let message = params
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                // Kept even when `willRetry`: the last one explains a failure, as in exec.
                codex.last_error = Some(codex.redact(message));
            }
            _ => {}
        }
        // Last: a malformed notification names no thread.
        codex.note_thread(params);
        Ok(())
    }
}

impl CodexEvents<AppServer> {
    /// Translates the item of an `item/started` (`completed` false) or `item/completed`.
    fn item(
        &mut self,
        turn: &mut TurnEvents,
        item: &Value,
        completed: bool,
        out: &mut Vec<DriverEvent>,
    ) -> Result<(), MalformedEvent> {
        let id = str_field(item, "id")?;
        let kind = str_field(item, "type")?;
        // An item means the turn runs, even if `turn/started` was missed.
        turn.start(out);
        match kind {
            "agentMessage" if completed => {
                let text = self.redact(str_field(item, "text")?);
                // Streamed text went out as deltas; the item's text is the whole answer.
                if !text.is_empty() && !self.mode.streamed.contains(id) {
                    out.push(DriverEvent::text(text.clone()));
                }
                self.last_message = Some(text);
            }
            "mcpToolCall" => {
                let server = str_field(item, "server")?;
                let tool = str_field(item, "tool")?;
                let name = format!("mcp__{server}__{tool}");
                let arguments = self.redact(&driver_cli::json_text(item.get("arguments")));
                // Opened on completion too, in case `item/started` was missed.
                turn.open_call(id, &name, &arguments, out);
                if completed {
                    let error = item.get("error").filter(|e| !e.is_null());
                    let failed = error.is_some()
                        || item.get("status").and_then(Value::as_str) == Some("failed");
                    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str);
                    let output = match message {
                        Some(message) if failed => message.to_owned(),
                        _ => mcp_output(item.get("result")),
                    };
                    turn.close_call(id, self.redact(&output), failed, out);
                }
            }
            "commandExecution" => {
                let command = item.get("command").and_then(Value::as_str).unwrap_or("");
                turn.open_call(id, SHELL_TOOL, &self.redact(command), out);
                if completed {
                    let output = item
                        .get("aggregatedOutput")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let exit = item.get("exitCode").and_then(Value::as_i64);
                    let status = item.get("status").and_then(Value::as_str);
                    let failed = matches!(status, Some("failed" | "declined"))
                        || exit.is_some_and(|c| c != 0);
                    turn.close_call(id, self.redact(output), failed, out);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The outcome of a `turn/completed`'s `turn`: `None` for a completed turn, else its
    /// failure. A status that does not end a turn is malformed.
    fn outcome(&self, turn: &Value) -> Result<Option<RunFailure>, MalformedEvent> {
        match str_field(turn, "status")? {
            "completed" => Ok(None),
            "failed" => {
                let message = turn
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(|m| self.redact(m))
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| FAILED.to_owned());
                Ok(Some(RunFailure::new(classify_failure(&message), message)))
            }
            // driver_spi has no `Cancelled` kind.
            "interrupted" => Ok(Some(RunFailure::new(FailureKind::Other, INTERRUPTED))),
            _ => Err(MalformedEvent),
        }
    }

    /// Notes the first non-empty `threadId` of a notification's params.
    fn note_thread(&mut self, params: &Value) {
        if self.thread_id.is_none()
            && let Some(id) = params.get("threadId").and_then(Value::as_str)
            && !id.is_empty()
        {
            self.thread_id = Some(id.to_owned());
        }
    }
}

/// The thread's totals from a `tokenUsage.total` breakdown. Input and output are required;
/// cached input counts as none when missing.
fn totals(total: &Value) -> Result<Usage, MalformedEvent> {
    let count = |key: &str| match total.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or(MalformedEvent),
    };
    let (Some(input), Some(output)) = (count("inputTokens")?, count("outputTokens")?) else {
        return Err(MalformedEvent);
    };
    let cached = count("cachedInputTokens")?.unwrap_or(0);
    Ok(Usage::new(input, output).with_cached_input_tokens(cached))
}

/// The text of an app-server MCP result: as exec's, but its structured content is camel-cased
/// (`structuredContent`).
fn mcp_output(result: Option<&Value>) -> String {
    let text = mcp_result_text(result);
    if !text.is_empty() {
        return text;
    }
    match result.and_then(|r| r.get("structuredContent")) {
        Some(v) if !v.is_null() => v.to_string(),
        _ => String::new(),
    }
}

/// The failure class of a failed turn's message: the CLI-wide classes
/// ([`driver_cli::classify_text`]), and for a provider error Codex's own limit messages, so a
/// failure is classed as in exec mode.
fn classify_failure(message: &str) -> FailureKind {
    match driver_cli::classify_text(message) {
        FailureKind::Provider => classify(message),
        kind => kind,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests;
