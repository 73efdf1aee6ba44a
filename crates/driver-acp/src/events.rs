//! [`Updates`]: a turn's `session/update` notifications and the `session/prompt` answer as
//! driver events, read with the protocol crate's types.
//!
//! | ACP | driver event |
//! |---|---|
//! | `agent_message_chunk` (text) | `TextDelta` (the answer) |
//! | `agent_thought_chunk` (text) | `ReasoningDelta` |
//! | `tool_call` | `ToolCallStarted` (its title), `ToolCallArguments` (its raw input) |
//! | `tool_call_update` with status `completed` / `failed` | `ToolCallResult` (raw output, else its text content), after a `ToolCallStarted` (its title, else its id) for a call no `tool_call` announced |
//! | `plan` | `Plan` (the whole list, each time) |
//! | `user_message_chunk`, `available_commands_update`, `current_mode_update`, `config_option_update`, `session_info_update`, `usage_update`, others | nothing |
//! | the `session/prompt` answer | the end of the turn: `end_turn` succeeds; `max_tokens` and `max_turn_requests` fail as `Limit`, `refusal` as `ModelProvider`, `cancelled` as `Other` |
//!
//! Every text passes the turn's redactor before it is emitted or kept.

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Plan, PlanEntryPriority, PlanEntryStatus, PromptResponse,
    StopReason, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
};
use driver_cli::{CliEvent, MalformedEvent, Translator};
use driver_spi::{
    DriverEvent, FailureKind, PlanEntry, PlanPriority, PlanStatus, Redactor, Request, RunFailure,
    Usage,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::protocol::SESSION_PROMPT;

/// One turn's translator.
#[derive(Debug)]
pub struct Updates {
    redactor: Redactor,
    text: String,
    stop: Option<StopReason>,
    usage: Option<Usage>,
}

impl Updates {
    pub(crate) fn new(_request: &Request, redactor: Redactor) -> Self {
        Self {
            redactor,
            text: String::new(),
            stop: None,
            usage: None,
        }
    }

    fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }
}

/// `value` as `T`, or malformed.
fn parse<T: DeserializeOwned>(value: &Value) -> Result<T, MalformedEvent> {
    serde_json::from_value(value.clone()).map_err(|_| MalformedEvent)
}

/// The text of a content block; nothing for images, audio and resources.
fn block_text(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    }
}

/// The text a tool call's content shows: its text blocks, and the paths its diffs change.
fn content_text(content: &[ToolCallContent]) -> String {
    let mut parts = Vec::new();
    for item in content {
        match item {
            ToolCallContent::Content(content) => {
                if let Some(text) = block_text(&content.content) {
                    parts.push(text.to_owned());
                }
            }
            ToolCallContent::Diff(diff) => parts.push(format!("diff {}", diff.path.display())),
            _ => {}
        }
    }
    parts.join("\n")
}

impl Translator for Updates {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        let (kind, value, turn, out) = event.into_parts();
        match kind {
            "session/update" => {
                let Some(update) = value.get("update") else {
                    return Err(MalformedEvent);
                };
                let Some(which) = update.get("sessionUpdate").and_then(Value::as_str) else {
                    return Err(MalformedEvent);
                };
                match which {
                    "agent_message_chunk" => {
                        let chunk: ContentChunk = parse(update)?;
                        if let Some(text) = block_text(&chunk.content) {
                            turn.start(out);
                            let text = self.redact(text);
                            self.text.push_str(&text);
                            out.push(DriverEvent::text(text));
                        }
                    }
                    "agent_thought_chunk" => {
                        let chunk: ContentChunk = parse(update)?;
                        if let Some(text) = block_text(&chunk.content) {
                            turn.start(out);
                            out.push(DriverEvent::reasoning(self.redact(text)));
                        }
                    }
                    "tool_call" => {
                        let call: ToolCall = parse(update)?;
                        turn.start(out);
                        let id = call.tool_call_id.0.to_string();
                        let arguments = call
                            .raw_input
                            .as_ref()
                            .map(|v| self.redact(&v.to_string()))
                            .unwrap_or_default();
                        turn.open_call(&id, &self.redact(&call.title), &arguments, out);
                        if matches!(
                            call.status,
                            ToolCallStatus::Completed | ToolCallStatus::Failed
                        ) {
                            let output = self.result(call.raw_output.as_ref(), &call.content);
                            let failed = call.status == ToolCallStatus::Failed;
                            turn.close_call(&id, output, failed, out);
                        }
                    }
                    "tool_call_update" => {
                        let update: ToolCallUpdate = parse(update)?;
                        let fields = &update.fields;
                        if let Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) =
                            fields.status
                        {
                            turn.start(out);
                            let content = fields.content.as_deref().unwrap_or_default();
                            let output = self.result(fields.raw_output.as_ref(), content);
                            let id = update.tool_call_id.0.to_string();
                            // A call announced by no `tool_call` (gemini 0.61.0 sends none for
                            // a call it asked permission for) starts here, named by its title,
                            // else by its id; a known call is not started again.
                            let name = fields.title.as_deref().unwrap_or(&id).to_owned();
                            let arguments = fields
                                .raw_input
                                .as_ref()
                                .map(|v| self.redact(&v.to_string()))
                                .unwrap_or_default();
                            turn.open_call(&id, &self.redact(&name), &arguments, out);
                            turn.close_call(&id, output, status == ToolCallStatus::Failed, out);
                        }
                    }
                    "plan" => {
                        let plan: Plan = parse(update)?;
                        turn.start(out);
                        let entries: Vec<PlanEntry> = plan
                            .entries
                            .iter()
                            .map(|e| {
                                PlanEntry::new(
                                    self.redact(&e.content),
                                    plan_status(&e.status),
                                    plan_priority(&e.priority),
                                )
                            })
                            .collect();
                        out.push(DriverEvent::plan(entries));
                    }
                    // History (a replay), commands, modes, titles, context size: not the
                    // turn's events.
                    _ => {}
                }
            }
            // The prompt's answer: the turn's last word.
            SESSION_PROMPT => {
                let answer: PromptResponse = parse(value)?;
                turn.start(out);
                self.stop = Some(answer.stop_reason);
                self.usage = usage(value);
            }
            _ => {}
        }
        Ok(())
    }

    fn output(&self) -> &str {
        &self.text
    }

    fn succeeded(&self) -> bool {
        self.stop == Some(StopReason::EndTurn)
    }

    fn reported_failure(&self) -> Option<RunFailure> {
        let (kind, message) = match self.stop? {
            StopReason::EndTurn => return None,
            StopReason::MaxTokens => (FailureKind::Limit, "the agent reached its token limit"),
            StopReason::MaxTurnRequests => (
                FailureKind::Limit,
                "the agent reached its model-request limit",
            ),
            StopReason::Refusal => (FailureKind::ModelProvider, "the agent refused the turn"),
            StopReason::Cancelled => (FailureKind::Other, "the agent cancelled the turn"),
            _ => (FailureKind::Other, "the agent stopped the turn early"),
        };
        Some(RunFailure::new(kind, message))
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }

    fn turn_ended(&self) -> bool {
        self.stop.is_some()
    }
}

impl Updates {
    /// A finished tool call's result: its raw output, else its content's text; redacted.
    fn result(&self, raw: Option<&Value>, content: &[ToolCallContent]) -> String {
        let text = match raw {
            Some(Value::String(text)) => text.clone(),
            Some(raw) => raw.to_string(),
            None => content_text(content),
        };
        self.redact(&text)
    }
}

/// The token counts of the prompt's answer, where the agent reports them: `usage` (an
/// unstable part of the protocol), else Gemini's `_meta.quota.token_count`.
fn usage(answer: &Value) -> Option<Usage> {
    if let Some(usage) = answer.get("usage") {
        let count = |key| usage.get(key).and_then(Value::as_u64);
        let mut out = Usage::new(count("inputTokens")?, count("outputTokens")?);
        if let Some(cached) = count("cachedReadTokens") {
            out = out.with_cached_input_tokens(cached);
        }
        return Some(out);
    }
    let quota = answer.pointer("/_meta/quota/token_count")?;
    let count = |key| quota.get(key).and_then(Value::as_u64);
    Some(Usage::new(count("input_tokens")?, count("output_tokens")?))
}

fn plan_status(status: &PlanEntryStatus) -> PlanStatus {
    match status {
        PlanEntryStatus::InProgress => PlanStatus::InProgress,
        PlanEntryStatus::Completed => PlanStatus::Completed,
        _ => PlanStatus::Pending,
    }
}

fn plan_priority(priority: &PlanEntryPriority) -> PlanPriority {
    match priority {
        PlanEntryPriority::High => PlanPriority::High,
        PlanEntryPriority::Low => PlanPriority::Low,
        _ => PlanPriority::Medium,
    }
}
