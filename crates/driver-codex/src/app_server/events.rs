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
//! ([`TOTAL_KEY`]) in the same encoding, so a thread can move between the two modes, and each
//! turn's usage is the difference from the totals of the state it continued.
//!
//! **Redaction.** Provider text (agent messages, tool arguments and results, error messages)
//! passes the request's redactor before it is emitted or kept.

use std::collections::BTreeSet;

use driver_cli::{CliEvent, MalformedEvent, Translator, TurnEvents, str_field};
use driver_spi::{DriverEvent, FailureKind, Redactor, RunFailure, SessionState, Usage};
use serde_json::Value;

use crate::events::{SHELL_TOOL, TOTAL_KEY, classify, decode, encode, mcp_result_text, this_turn};

/// The failure message of a turn that ended `interrupted`.
const INTERRUPTED: &str = "the turn was interrupted";

/// The failure message of a turn that ended `failed` without an error message.
const FAILED: &str = "the turn failed";

/// Translates one turn's `codex app-server` notifications into driver events, and keeps what
/// the judgement needs: the thread id, the last agent message, usage and the turn's outcome.
#[derive(Debug, Default)]
pub struct AppServerTranslator {
    /// Redacts provider text before it is emitted or kept.
    redactor: Redactor,
    /// The first non-empty `threadId` a well-formed notification carried.
    thread_id: Option<String>,
    /// Agent-message items that streamed text deltas: their completed text is not emitted
    /// again.
    streamed: BTreeSet<String>,
    /// The last completed agent message, redacted.
    last_message: Option<String>,
    /// The thread's totals from the latest `thread/tokenUsage/updated`.
    total: Option<Usage>,
    /// The totals the continued state kept, if any.
    previous: Option<Usage>,
    /// `turn/completed` arrived.
    ended: bool,
    /// The failure of a turn that ended `failed` or `interrupted`.
    failure: Option<RunFailure>,
    /// The last `error` notification's redacted message (retried errors included).
    last_error: Option<String>,
}

impl AppServerTranslator {
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

    /// Whether `turn/completed` was translated: the turn is over, whatever its status.
    pub(crate) fn turn_ended(&self) -> bool {
        self.ended
    }

    /// `text`, redacted.
    fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

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
                if !text.is_empty() && !self.streamed.contains(id) {
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

impl Translator for AppServerTranslator {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
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
                    out.push(DriverEvent::text(self.redact(delta)));
                    self.streamed.insert(id.to_owned());
                }
            }
            "item/started" | "item/completed" => {
                let item = params.get("item").ok_or(MalformedEvent)?;
                self.item(turn, item, method == "item/completed", out)?;
            }
            "thread/tokenUsage/updated" => {
                let total = params.pointer("/tokenUsage/total").ok_or(MalformedEvent)?;
                self.total = Some(totals(total)?);
            }
            "turn/completed" => {
                let outcome = self.outcome(params.get("turn").ok_or(MalformedEvent)?)?;
                // A turn that ended did start (as in exec mode), so a failure can follow.
                turn.start(out);
                self.ended = true;
                self.failure = outcome;
            }
            "error" => {
                let message = params
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .ok_or(MalformedEvent)?;
                // Kept even when `willRetry`: the last one explains a failure, as in exec.
                self.last_error = Some(self.redact(message));
            }
            _ => {}
        }
        // Last: a malformed notification names no thread.
        self.note_thread(params);
        Ok(())
    }

    /// The first non-empty `threadId` a notification carried.
    fn session_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The last agent message.
    fn output(&self) -> &str {
        self.last_message.as_deref().unwrap_or_default()
    }

    /// `turn/completed` arrived with status `completed`.
    fn succeeded(&self) -> bool {
        self.ended && self.failure.is_none()
    }

    /// The failure of a turn that ended `failed` (classified from its message) or
    /// `interrupted`.
    fn reported_failure(&self) -> Option<RunFailure> {
        self.failure.clone()
    }

    /// The thread's totals minus the totals of the continued state.
    fn usage(&self) -> Option<Usage> {
        self.total.map(|total| this_turn(total, self.previous))
    }

    /// The last `error` notification's redacted message.
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
