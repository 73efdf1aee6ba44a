//! Readers of JSON request bodies that more than one wire module needs.

use serde_json::Value;

use crate::record::FunctionCallOutput;

/// The array under `key`, empty when it is missing or not an array: clients omit empty lists.
pub(crate) fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string under `key`, empty when it is missing or not a string (a `type` or `role` to
/// compare against).
pub(crate) fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The model a request asked for, echoed in replies (a placeholder when it named none).
pub(crate) fn echoed_model(request: &Value) -> &str {
    request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("test-kit-model")
}

/// True when a request asked for a streamed (SSE) answer with `"stream": true`.
pub(crate) fn streamed(request: &Value) -> bool {
    request.get("stream").and_then(Value::as_bool) == Some(true)
}

/// The `text` of a content part, if it has one.
pub(crate) fn part_text(part: &Value) -> Option<&str> {
    part.get("text").and_then(Value::as_str)
}

/// The text of a message's `content` (a string, or parts with `text`), parts concatenated.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(part_text).collect(),
        _ => String::new(),
    }
}

/// The text of a tool output's content: text parts joined with `\n` (one line per part, unlike
/// message text), else as [`content_text`].
pub(crate) fn tool_output_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(part_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => content_text(other),
        None => String::new(),
    }
}

/// A tool output sent as a content carrier (an Anthropic `tool_result` block, a Chat `role: tool`
/// message): the call id under `id_key`, the text from its `content`.
pub(crate) fn tool_output(carrier: &Value, id_key: &str) -> FunctionCallOutput {
    FunctionCallOutput {
        call_id: str_field(carrier, id_key).to_owned(),
        output: tool_output_text(carrier.get("content")),
    }
}

/// True for a text that is one whole `<system-reminder …>…</system-reminder>` element (context
/// that Claude Code and CodeBuddy Code add to user messages).
pub(crate) fn is_system_reminder(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("<system-reminder") && text.ends_with("</system-reminder>")
}
