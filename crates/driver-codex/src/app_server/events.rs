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

use driver_cli::{CliEvent, MalformedEvent, str_field};
use driver_spi::{DriverEvent, FailureKind, RunFailure, Usage};
use serde_json::Value;

use crate::events::{CodexEvents, ItemSpelling, Mode, classify};

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
    const ITEMS: ItemSpelling = ItemSpelling {
        agent_message: "agentMessage",
        mcp_tool_call: "mcpToolCall",
        command_execution: "commandExecution",
        structured_content: "structuredContent",
        aggregated_output: "aggregatedOutput",
        exit_code: "exitCode",
    };

    fn streamed(&self, id: &str) -> bool {
        self.streamed.contains(id)
    }

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

/// The failure class of a failed turn's message: the CLI-wide classes
/// ([`driver_cli::classify_text`]), and for a provider error Codex's own limit messages, so a
/// failure is classed as in exec mode.
fn classify_failure(message: &str) -> FailureKind {
    match driver_cli::classify_text(message) {
        FailureKind::ModelProvider => classify(message),
        kind => kind,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests;
