//! A mock of the Gemini API (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`), as
//! used by the Gemini CLI.
//!
//! # What it serves
//! - `POST …/models/<model>:streamGenerateContent` (any query, such as `?alt=sse`): a model
//!   request. It consumes one [`Script`](crate::Script) step and is answered `200
//!   text/event-stream` with one `data: <GenerateContentResponse>` event (no `event:` line,
//!   as Google sends them). Errors are Google error bodies.
//! - `POST …/models/<model>:generateContent`: a non-streamed *side request* (the `auto`
//!   model's router, for example). It consumes no step and is recorded with
//!   [`RecordedRequest::is_model_request`](crate::RecordedRequest::is_model_request) false;
//!   the answer is one JSON response whose text is `{}` when the request asked for JSON
//!   (`generationConfig.responseMimeType`), else `test-kit`.
//! - `POST …/models/<model>:countTokens`: `200 {"totalTokens": 100}`.
//! - `GET …/models` (and `GET …/models/<id>`): an empty model list (or a model object).
//! - Anything else: `404` with a Google error body. Every request is recorded either way.
//!
//! # How replies are rendered
//! - [`Reply::text`](crate::Reply::text): one `text` part, `finishReason: "STOP"`.
//! - [`Reply::tool_call`](crate::Reply::tool_call): one `functionCall` part whose `name` is
//!   the function the CLI declared for that tool in the request's
//!   `tools[].functionDeclarations` (Gemini CLI's [`mcp_tool_name`] when it declared that
//!   one), with the arguments as `args` and the call id (`call_<n>`) as `id`.
//! - [`Reply::error`](crate::Reply::error): the status with
//!   `{"error":{"code","message","status"}}`, `status` being Google's name for the HTTP status
//!   (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`,
//!   `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, else `INTERNAL`). Note that
//!   the Gemini CLI retries 429 and 5xx answers with back-off for minutes.
//! - Usage (`usageMetadata`): `promptTokenCount` is [`Usage::input_tokens`],
//!   `cachedContentTokenCount` its cached part, `candidatesTokenCount` the output without
//!   reasoning and `thoughtsTokenCount` the reasoning part.
//!
//! # Pointing the Gemini CLI at it
//! ```text
//! env -i PATH=… HOME=<tmp> GEMINI_CLI_HOME=<tmp> TMPDIR=<tmp>/tmp \
//!   GOOGLE_GEMINI_BASE_URL=<base_url()> GEMINI_API_KEY=<anything> \
//!   gemini -p "<prompt>" -m <model> --output-format stream-json --skip-trust
//! ```
//! with `$GEMINI_CLI_HOME/.gemini/settings.json` selecting the key
//! (`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`). The key arrives in the
//! `x-goog-api-key` header ([`RecordedRequest::bearer`](crate::RecordedRequest::bearer) reads
//! it); the model is in the path ([`RecordedRequest::model`](crate::RecordedRequest::model)).

use serde_json::{Value, json};

use crate::body::{array, part_text};
use crate::record::{FunctionCallOutput, WireApi};
use crate::script::Usage;
use crate::server::{HttpAnswer, Route, Turn, Wire, no_route, route_path};

crate::server::mock_server! {
    /// A scripted Gemini API server on `127.0.0.1:<ephemeral port>`.
    ///
    /// It runs on its own thread and Tokio runtime, so it works from synchronous tests and from
    /// any async runtime. It stops on [`MockGemini::shutdown`] or when dropped; the recorded
    /// requests stay readable after that.
    pub struct MockGemini serves GeminiWire;
    /// The base URL to configure as `GOOGLE_GEMINI_BASE_URL`: `http://127.0.0.1:<port>` (the
    /// client adds `/v1beta/models/<model>:streamGenerateContent`).
    base_url = |addr| format!("http://{addr}");
}

/// The longest function name Gemini CLI declares; longer MCP names are cut around `...`.
const MAX_NAME: usize = 63;

/// The name under which the Gemini CLI (0.61.0) offers tool `tool` of the MCP server
/// configured under `server`: `mcp_<server>_<tool>`, with every character outside
/// `[A-Za-z0-9_.:-]` replaced by `_`; a name longer than 63 characters keeps its first and
/// last 30 around `...` (`agent-tools`, `ping` → `mcp_agent-tools_ping`).
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let joined = format!("{server}_{tool}");
    let prefixed = if joined.starts_with("mcp_") {
        joined
    } else {
        format!("mcp_{joined}")
    };
    let name = crate::names::mangle(&prefixed, &['_', '-', '.', ':']);
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= MAX_NAME {
        return name;
    }
    let head: String = chars[..30].iter().collect();
    let tail: String = chars[chars.len() - 30..].iter().collect();
    format!("{head}...{tail}")
}

/// The Gemini `generateContent` wire, for [`MockGemini`].
struct GeminiWire;

/// Google's status name for an HTTP status.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// The model named in a `…/models/<model>:<method>` path.
pub(crate) fn path_model(path: &str) -> Option<&str> {
    let path = route_path(path);
    let (_, rest) = path.rsplit_once("/models/")?;
    let model = rest.split_once(':').map_or(rest, |(model, _)| model);
    (!model.is_empty()).then_some(model)
}

impl Wire for GeminiWire {
    const API: WireApi = WireApi::GeminiGenerateContent;

    fn route(method: &str, path: &str, body: &Value) -> Route {
        let path = route_path(path);
        match method {
            "POST" if path.ends_with(":streamGenerateContent") => Route::Model,
            "POST" if path.ends_with(":generateContent") => {
                let json_asked = body
                    .pointer("/generationConfig/responseMimeType")
                    .and_then(Value::as_str)
                    == Some("application/json");
                let text = if json_asked { "{}" } else { "test-kit" };
                Route::Fixed(HttpAnswer::json(
                    200,
                    &response(json!({"text": text}), &Usage::new(1, 1)),
                ))
            }
            "POST" if path.ends_with(":countTokens") => {
                Route::json(200, &json!({"totalTokens": 100}))
            }
            "GET" if path.ends_with("/models") => Route::json(200, &json!({"models": []})),
            "GET" if path.contains("/models/") => {
                let id = path.rsplit('/').next().unwrap_or_default();
                Route::json(
                    200,
                    &json!({"name": format!("models/{id}"), "displayName": id,
                        "supportedGenerationMethods": ["generateContent", "streamGenerateContent"]}),
                )
            }
            _ => Route::json(404, &Self::error_body(404, &no_route(method, path))),
        }
    }

    fn error_body(status: u16, message: &str) -> Value {
        json!({"error": {"code": status, "message": message, "status": status_name(status)}})
    }

    fn render_turn(
        turn: &Turn<'_>,
        usage: &Usage,
        _sequence: usize,
        request: &Value,
    ) -> HttpAnswer {
        let part = match turn {
            Turn::Text(text) => json!({"text": text}),
            Turn::ToolCall(call) => json!({"functionCall": {
                "id": call.call_id,
                "name": call.name(|server, tool| declared_name(request, server, tool)),
                "args": call.arguments,
            }}),
        };
        let event = response(part, usage);
        HttpAnswer::event_stream(format!("data: {event}\n\n"))
    }
}

/// A whole `GenerateContentResponse` with one part.
fn response(part: Value, usage: &Usage) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [part]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "cachedContentTokenCount": usage.cached_input_tokens,
            "candidatesTokenCount": usage.output_tokens.saturating_sub(usage.reasoning_output_tokens),
            "thoughtsTokenCount": usage.reasoning_output_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
        },
        "modelVersion": "test-kit-model",
    })
}

/// The function the request declared for `tool` of `server`: [`mcp_tool_name`] when declared,
/// else a declared function that differs from it only in which punctuation became `_` (a CLI
/// release that mangles differently), else [`mcp_tool_name`] anyway.
fn declared_name(request: &Value, server: &str, tool: &str) -> String {
    let want = mcp_tool_name(server, tool);
    let declared = tool_names(request);
    if declared.contains(&want) {
        return want;
    }
    let loose = |name: &str| crate::names::mangle(name, &[]);
    declared
        .into_iter()
        .find(|name| loose(name) == loose(&want))
        .unwrap_or(want)
}

/// True for a text that is one whole `<session_context>…</session_context>` element (the
/// context the Gemini CLI puts before the first prompt).
fn is_session_context(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("<session_context>") && text.ends_with("</session_context>")
}

/// The text of one `Content`: its text parts that are not thoughts or the CLI's session
/// context, concatenated; `None` when there are none.
fn content_text(content: &Value) -> Option<String> {
    let texts: Vec<&str> = array(content, "parts")
        .iter()
        .filter(|part| part.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(part_text)
        .filter(|text| !is_session_context(text))
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

/// (role, text) of `systemInstruction` (as `system`) and of every content that carries text
/// (`model` reported as `assistant`). Contents made only of function calls or responses are
/// skipped.
pub(crate) fn input_messages(body: &Value) -> Vec<(String, String)> {
    let system = body
        .get("systemInstruction")
        .and_then(content_text)
        .map(|text| ("system".to_owned(), text));
    let contents = array(body, "contents").iter().filter_map(|content| {
        let role = match content.get("role").and_then(Value::as_str)? {
            "model" => "assistant",
            role => role,
        };
        Some((role.to_owned(), content_text(content)?))
    });
    system.into_iter().chain(contents).collect()
}

/// The `functionResponse` parts of every content, for
/// [`RecordedRequest::function_call_outputs`](crate::RecordedRequest::function_call_outputs):
/// the call id is the response's `id` (its `name` when there is none), the output its
/// `response.output` text (the Gemini CLI wraps MCP output in `<untrusted_context>`), else
/// `response.error`, else the whole `response` as JSON.
pub(crate) fn function_call_outputs(body: &Value) -> Vec<FunctionCallOutput> {
    array(body, "contents")
        .iter()
        .flat_map(|content| array(content, "parts"))
        .filter_map(|part| part.get("functionResponse"))
        .map(|call| {
            let text = |key: &str| call.get(key).and_then(Value::as_str);
            let response = call.get("response").unwrap_or(&Value::Null);
            let output = ["output", "error"]
                .iter()
                .find_map(|key| response.get(key).and_then(Value::as_str))
                .map_or_else(|| response.to_string(), str::to_owned);
            FunctionCallOutput {
                call_id: text("id").or(text("name")).unwrap_or_default().to_owned(),
                output,
            }
        })
        .collect()
}

/// True when the last content holds a `functionResponse` part.
pub(crate) fn last_input_is_tool_output(body: &Value) -> bool {
    array(body, "contents").last().is_some_and(|content| {
        array(content, "parts")
            .iter()
            .any(|part| part.get("functionResponse").is_some())
    })
}

/// `tools[].functionDeclarations[].name`; a tool entry without declarations (such as
/// `googleSearch`) by its key.
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    array(body, "tools")
        .iter()
        .flat_map(|tool| match tool.get("functionDeclarations") {
            Some(declarations) => declarations
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|d| d.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect::<Vec<_>>(),
            None => tool
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().cloned())
                .collect(),
        })
        .collect()
}
