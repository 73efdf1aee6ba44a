//! A mock of the Anthropic Messages API (`POST /v1/messages`, server-sent events), as used by
//! the Claude Code CLI.
//!
//! # What it serves
//! - `POST …/v1/messages` (any query, such as `?beta=true`): a model request. It consumes one
//!   [`Script`](crate::Script) step. A request with `"stream": true` is answered `200 text/event-stream` with
//!   `message_start`, then per content block `content_block_start` / `content_block_delta` /
//!   `content_block_stop`, then `message_delta` (with `stop_reason` and output usage) and
//!   `message_stop`, each as `event: <type>\ndata: <json>\n\n`. A request without it gets the
//!   same message as one JSON object. Errors are Anthropic error bodies.
//!   A *structured-output side request* (one with `output_config.format` of type
//!   `json_schema`, which Claude Code sends to title a session started with `--session-id`) is
//!   not a model request: it gets a text block with JSON that fills the schema's required
//!   properties (`{"title":"test-kit"}`), consumes no step and is recorded with
//!   [`RecordedRequest::is_model_request`](crate::RecordedRequest::is_model_request) false.
//! - `POST …/v1/messages/count_tokens`: `200 {"input_tokens": <body length / 4>}`, without
//!   touching the script.
//! - `GET …/v1/models` (and `GET …/v1/models/<id>`): an empty model list (or a model object).
//! - `HEAD` / `GET` of any other path: `200 {}`, so reachability probes succeed.
//! - Anything else: `404` with an Anthropic error body. Every request is recorded either way.
//!
//! # How replies are rendered
//! - [`Reply::text`]: one `text` block (`stop_reason: "end_turn"`).
//! - [`Reply::tool_call`]: one `tool_use` block named [`mcp_tool_name`]`(server, tool)` (Claude
//!   Code's `mcp__<server>__<tool>`), its input streamed as a single `input_json_delta`, with id
//!   `call_<n>` (`stop_reason: "tool_use"`).
//! - [`Reply::error`]: the status with `{"type":"error","error":{"type":<by status>,"message"}}`
//!   (`invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`,
//!   `rate_limit_error`, `overloaded_error` for 529, else `api_error`).
//! - Usage: `input_tokens` is [`Usage::input_tokens`] minus the cached part, which is reported
//!   as `cache_read_input_tokens` (Anthropic counts them apart); `output_tokens` as is.
//!
//! The message id is `msg_<n>`, `n` being the zero-based index of the model request; the model
//! is echoed from the request.
//!
//! # Pointing Claude Code at it
//! ```text
//! env -i PATH=… HOME=<tmp> CLAUDE_CONFIG_DIR=<tmp>/claude ANTHROPIC_BASE_URL=<base_url()> \
//!   ANTHROPIC_API_KEY=<anything> CLAUDE_CODE_MAX_RETRIES=0 \
//!   claude -p --output-format stream-json --verbose < prompt
//! ```
//! The key arrives in the `x-api-key` header ([`RecordedRequest::bearer`](crate::RecordedRequest::bearer) reads it).

use serde_json::{Value, json};

use crate::body::{
    array, echoed_model, is_system_reminder, part_text, str_field, streamed, tool_output,
};
use crate::record::{FunctionCallOutput, WireApi};
use crate::script::{Reply, Usage};
use crate::server::{HttpAnswer, Route, Turn, Wire, no_route, render, route_path, sse};

crate::server::mock_server! {
    /// A scripted Anthropic Messages API server on `127.0.0.1:<ephemeral port>`.
    ///
    /// It runs on its own thread and Tokio runtime, so it works from synchronous tests and from
    /// any async runtime. It stops on [`MockAnthropic::shutdown`] or when dropped; the recorded
    /// requests stay readable after that.
    pub struct MockAnthropic serves AnthropicWire;
    /// The base URL to configure as `ANTHROPIC_BASE_URL`: `http://127.0.0.1:<port>` (the client
    /// adds `/v1/messages`).
    base_url = |addr| format!("http://{addr}");
}

/// The name under which Claude Code offers tool `tool` of the MCP server configured under
/// `server`: `mcp__<server>__<tool>`, each part with every character outside
/// `[A-Za-z0-9_-]` replaced by `_` (`agent-tools`, `ping` → `mcp__agent-tools__ping`).
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    crate::names::mcp_tool_name(server, tool, &['_', '-'])
}

/// The Anthropic Messages wire, for [`MockAnthropic`].
struct AnthropicWire;

/// The Anthropic error `type` for an HTTP status.
fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

impl Wire for AnthropicWire {
    const API: WireApi = WireApi::AnthropicMessages;

    fn route(method: &str, path: &str, body: &Value) -> Route {
        let path = route_path(path);
        match method {
            "POST" if path.ends_with("/messages") => match structured_output_schema(body) {
                Some(schema) => Route::Fixed(auxiliary_answer(body, schema)),
                None => Route::Model,
            },
            // The body is not visible here; a fixed estimate is enough for a test double.
            "POST" if path.ends_with("/messages/count_tokens") => {
                Route::json(200, &json!({"input_tokens": 100}))
            }
            "GET" if path.ends_with("/models") => Route::json(
                200,
                &json!({"data": [], "has_more": false, "first_id": null, "last_id": null}),
            ),
            "GET" if path.contains("/models/") => {
                let id = path.rsplit('/').next().unwrap_or_default();
                Route::json(
                    200,
                    &json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}),
                )
            }
            "HEAD" | "GET" => Route::json(200, &json!({})),
            _ => Route::json(404, &Self::error_body(404, &no_route(method, path))),
        }
    }

    fn error_body(status: u16, message: &str) -> Value {
        json!({"type": "error", "error": {"type": error_type(status), "message": message}})
    }

    fn render_turn(turn: &Turn<'_>, usage: &Usage, sequence: usize, request: &Value) -> HttpAnswer {
        let model = echoed_model(request);
        let (block, stop_reason) = match turn {
            Turn::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
            Turn::ToolCall(call) => (
                json!({
                    "type": "tool_use",
                    "id": call.call_id,
                    "name": call.name(mcp_tool_name),
                    "input": call.arguments,
                }),
                "tool_use",
            ),
        };
        let id = format!("msg_{sequence}");
        let output_tokens = usage.output_tokens;
        let usage = usage_json(usage);
        if !streamed(request) {
            return HttpAnswer::json(
                200,
                &json!({
                    "id": id, "type": "message", "role": "assistant", "model": model,
                    "content": [block], "stop_reason": stop_reason, "stop_sequence": null,
                    "usage": usage,
                }),
            );
        }
        let (start_block, delta) = match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        let mut start_usage = usage.clone();
        start_usage["output_tokens"] = json!(1);
        let events = [
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": start_usage,
            }}),
            json!({"type": "content_block_start", "index": 0, "content_block": start_block}),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
            json!({"type": "message_stop"}),
        ];
        HttpAnswer::event_stream(sse(&events))
    }
}

/// The JSON schema of a structured-output request (`output_config.format` of type
/// `json_schema`): what Claude Code uses for side requests such as session titles.
fn structured_output_schema(body: &Value) -> Option<&Value> {
    let format = body.pointer("/output_config/format")?;
    (format.get("type").and_then(Value::as_str) == Some("json_schema"))
        .then(|| format.get("schema").unwrap_or(&Value::Null))
}

/// A value that satisfies the simple schemas Claude Code asks for: every required property
/// filled by type (`"test-kit"`, `0`, `false`, `[]`, `{}`).
fn placeholder(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut object = serde_json::Map::new();
            let properties = schema.get("properties");
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(Value::as_str)
            {
                let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                object.insert(name.to_owned(), placeholder(property));
            }
            Value::Object(object)
        }
        Some("array") => json!([]),
        Some("boolean") => json!(false),
        Some("integer" | "number") => json!(0),
        Some("null") => Value::Null,
        _ => json!("test-kit"),
    }
}

/// The answer to a structured-output side request: a text block holding [`placeholder`] JSON.
fn auxiliary_answer(body: &Value, schema: &Value) -> HttpAnswer {
    let reply = Reply::text(placeholder(schema).to_string()).with_usage(Usage::new(1, 1));
    render::<AnthropicWire>(&reply, 0, body)
}

/// Anthropic usage: cached input is reported apart from `input_tokens`, not as a part of it.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens.saturating_sub(usage.cached_input_tokens),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
    })
}

/// (role, text) of every message that carries text (a string content, or `text` blocks; blocks
/// that are only a `<system-reminder>` are left out). Messages made only of tool blocks are
/// skipped.
pub(crate) fn input_messages(body: &Value) -> Vec<(String, String)> {
    array(body, "messages")
        .iter()
        .filter_map(|message| {
            let role = message.get("role").and_then(Value::as_str)?;
            let text = match message.get("content")? {
                Value::String(text) => text.clone(),
                Value::Array(parts) => {
                    let texts: Vec<&str> = parts
                        .iter()
                        .filter(|part| str_field(part, "type") == "text")
                        .filter_map(part_text)
                        .filter(|text| !is_system_reminder(text))
                        .collect();
                    if texts.is_empty() {
                        return None;
                    }
                    texts.concat()
                }
                _ => return None,
            };
            Some((role.to_owned(), text))
        })
        .collect()
}

/// The `tool_result` blocks of every message, for [`RecordedRequest::function_call_outputs`].
///
/// [`RecordedRequest::function_call_outputs`]: crate::RecordedRequest::function_call_outputs
pub(crate) fn function_call_outputs(body: &Value) -> Vec<FunctionCallOutput> {
    array(body, "messages")
        .iter()
        .flat_map(|message| array(message, "content"))
        .filter(|block| str_field(block, "type") == "tool_result")
        .map(|block| tool_output(block, "tool_use_id"))
        .collect()
}

/// True when the last message is a user message holding a `tool_result` block.
pub(crate) fn last_input_is_tool_output(body: &Value) -> bool {
    array(body, "messages").last().is_some_and(|message| {
        str_field(message, "role") == "user"
            && array(message, "content")
                .iter()
                .any(|block| str_field(block, "type") == "tool_result")
    })
}

/// `tools[].name` (a server tool without one by its type).
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    array(body, "tools")
        .iter()
        .map(|tool| {
            tool.get("name")
                .and_then(Value::as_str)
                .unwrap_or_else(|| str_field(tool, "type"))
                .to_owned()
        })
        .collect()
}
