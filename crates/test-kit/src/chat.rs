//! A mock of the OpenAI Chat Completions API (`POST …/chat/completions`, server-sent events),
//! as used by the CodeBuddy Code CLI.
//!
//! # What it serves
//! - `POST …/chat/completions`: a model request. It consumes one [`Script`](crate::Script) step. A request
//!   with `"stream": true` is answered `200 text/event-stream` with `data: <chunk>\n\n` frames:
//!   one `chat.completion.chunk` whose `delta` carries the role and the text or tool calls, one
//!   with an empty `delta` and the `finish_reason`, a usage chunk (`choices: []`) when
//!   `stream_options.include_usage` is true, then `data: [DONE]`. A request without it gets one
//!   `chat.completion` object. Errors are OpenAI error bodies.
//! - `GET …/models`: `200 {"object":"list","data":[]}`.
//! - Anything else: `404` with a JSON error. Every request is recorded either way.
//!
//! # How replies are rendered
//! - [`Reply::text`]: `delta.content` (`finish_reason: "stop"`).
//! - [`Reply::tool_call`]: `delta.tool_calls: [{index: 0, id: "call_<n>", type: "function",
//!   function: {name, arguments}}]` with the name [`mcp_tool_name`]`(server, tool)` (CodeBuddy's
//!   `mcp__<server with - as _>__<tool>`) and the arguments as one JSON string
//!   (`finish_reason: "tool_calls"`).
//! - [`Reply::error`]: the status with `{"error":{"message","type":"test_kit_error","code":null}}`.
//! - Usage: `prompt_tokens` (with `prompt_tokens_details.cached_tokens`), `completion_tokens`
//!   (with `completion_tokens_details.reasoning_tokens`) and `total_tokens`.
//!
//! The completion id is `chatcmpl_<n>`, `n` being the zero-based index of the model request;
//! the model is echoed from the request.
//!
//! # Pointing CodeBuddy Code at it
//! ```text
//! env -i PATH=… HOME=<tmp> CODEBUDDY_CONFIG_DIR=<tmp>/codebuddy CODEBUDDY_BASE_URL=<base_url()> \
//!   CODEBUDDY_API_KEY=<anything> CODEBUDDY_SKIP_BUILTIN_MARKETPLACE=1 DISABLE_TELEMETRY=1 \
//!   codebuddy -p --output-format stream-json < prompt
//! ```
//! The key arrives as the bearer token (and as `x-api-key`).
//!
//! [`Reply::text`]: crate::Reply::text
//! [`Reply::tool_call`]: crate::Reply::tool_call
//! [`Reply::error`]: crate::Reply::error

use serde_json::{Value, json};

use crate::body::{
    array, content_text, echoed_model, is_system_reminder, part_text, str_field, streamed,
    tool_output,
};
use crate::record::{FunctionCallOutput, WireApi};
use crate::script::Usage;
use crate::server::{HttpAnswer, Route, Turn, Wire};

crate::server::mock_server! {
    /// A scripted OpenAI Chat Completions server on `127.0.0.1:<ephemeral port>`.
    ///
    /// It runs on its own thread and Tokio runtime, so it works from synchronous tests and from
    /// any async runtime. It stops on [`MockChat::shutdown`] or when dropped; the recorded requests
    /// stay readable after that.
    pub struct MockChat serves ChatWire;
    /// The base URL to configure (CodeBuddy: `CODEBUDDY_BASE_URL`): `http://127.0.0.1:<port>`.
    /// The client adds `/chat/completions`; the mock answers under any prefix, so
    /// `<base_url()>/v1` works as well for clients that expect one.
    base_url = |addr| format!("http://{addr}");
}

/// The function name under which CodeBuddy Code offers tool `tool` of the MCP server
/// configured under `server`: `mcp__<server>__<tool>`, each part with every character outside
/// `[A-Za-z0-9_]` replaced by `_` (`agent-tools`, `ping` → `mcp__agent_tools__ping`).
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    crate::names::mcp_tool_name(server, tool, &['_'])
}

/// The Chat Completions wire, for [`MockChat`].
struct ChatWire;

impl Wire for ChatWire {
    const API: WireApi = WireApi::OpenAiChat;

    fn route(method: &str, path: &str, _body: &Value) -> Route {
        crate::openai::route(
            method,
            path,
            "/chat/completions",
            &json!({"object": "list", "data": []}),
            |message| json!({"error": {"message": message, "type": "not_found", "code": null}}),
        )
    }

    fn error_body(_status: u16, message: &str) -> Value {
        crate::openai::error_body(message)
    }

    fn render_turn(turn: &Turn<'_>, usage: &Usage, sequence: usize, request: &Value) -> HttpAnswer {
        let model = echoed_model(request);
        let (message, finish_reason) = match turn {
            Turn::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
            Turn::ToolCall(call) => (
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "index": 0,
                    "id": call.call_id,
                    "type": "function",
                    "function": {
                        "name": call.name(mcp_tool_name),
                        "arguments": call.arguments.to_string(),
                    },
                }]}),
                "tool_calls",
            ),
        };
        let id = format!("chatcmpl_{sequence}");
        let usage = usage_json(usage);
        if !streamed(request) {
            let mut message = message;
            if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for call in calls {
                    if let Some(call) = call.as_object_mut() {
                        call.remove("index");
                    }
                }
            }
            return HttpAnswer::json(
                200,
                &json!({
                    "id": id, "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                    "usage": usage,
                }),
            );
        }
        let chunk = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": choices});
        let mut frames = vec![
            chunk(json!([{"index": 0, "delta": message, "finish_reason": null}])),
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}])),
        ];
        let include_usage = request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        if include_usage {
            let mut last = chunk(json!([]));
            last["usage"] = usage;
            frames.push(last);
        }
        let mut body = String::new();
        for frame in frames {
            body.push_str("data: ");
            body.push_str(&frame.to_string());
            body.push_str("\n\n");
        }
        body.push_str("data: [DONE]\n\n");
        HttpAnswer::event_stream(body)
    }
}

/// Chat Completions usage, with the cached and reasoning parts as details.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_output_tokens},
    })
}

/// (role, text) of every message, any role; the text of a message with parts is its text parts
/// concatenated, leaving out parts that are a whole `<system-reminder>`. An assistant message
/// with tool calls and no text is skipped.
pub(crate) fn input_messages(body: &Value) -> Vec<(String, String)> {
    array(body, "messages")
        .iter()
        .filter_map(|message| {
            let text = match message.get("content") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(part_text)
                    .filter(|text| !is_system_reminder(text))
                    .collect(),
                Some(other) => content_text(other),
                None => String::new(),
            };
            if text.is_empty() && message.get("tool_calls").is_some() {
                return None;
            }
            Some((str_field(message, "role").to_owned(), text))
        })
        .collect()
}

/// The `role: tool` messages, for [`RecordedRequest::function_call_outputs`].
///
/// [`RecordedRequest::function_call_outputs`]: crate::RecordedRequest::function_call_outputs
pub(crate) fn function_call_outputs(body: &Value) -> Vec<FunctionCallOutput> {
    array(body, "messages")
        .iter()
        .filter(|message| str_field(message, "role") == "tool")
        .map(|message| tool_output(message, "tool_call_id"))
        .collect()
}

/// True when the last message has `role: tool`.
pub(crate) fn last_input_is_tool_output(body: &Value) -> bool {
    array(body, "messages")
        .last()
        .is_some_and(|message| str_field(message, "role") == "tool")
}

/// `tools[].function.name` (else `name`, else `type`).
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    array(body, "tools")
        .iter()
        .map(|tool| {
            tool.pointer("/function/name")
                .or_else(|| tool.get("name"))
                .or_else(|| tool.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}
