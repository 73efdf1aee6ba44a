//! A mock of the OpenAI Responses API (`POST /v1/responses`, server-sent events), as used by the
//! Codex CLI.
//!
//! # What it serves
//! - `POST …/responses`: a model request. It consumes one [`Script`](crate::Script) step and answers
//!   `200 text/event-stream` with the frames `response.created`, `response.output_item.done`
//!   (one item) and `response.completed` (with usage), each as `event: <type>\ndata: <json>\n\n`
//!   — the minimal stream Codex 0.169.0 accepts. Errors are plain JSON error bodies.
//! - `GET …/models`: `200 {"object":"list","data":[],"models":[]}` (both the OpenAI and the
//!   Codex model-list shapes, empty), so a client that lists models at start-up keeps working.
//! - Anything else: `404` with a JSON error. Every request is recorded either way.
//!
//! # Strict structured output, as OpenAI checks it
//! A model request whose `text.format` is a strict `json_schema` (what Codex sends for an
//! output schema) is refused as the OpenAI API refuses it when the schema is not in strict
//! form ([`strict_schema_violation`]): `400` with an `invalid_request_error` whose code is
//! `invalid_json_schema`, without consuming a script step. So a driver that sends a derived
//! schema unchanged fails against the mock as it would against the API.
//!
//! # How replies are rendered
//! - [`Reply::text`]: an assistant `message` item with one `output_text` part.
//! - [`Reply::tool_call`]: a `function_call` item whose `namespace` is `mcp__<server>` and whose
//!   `name` is the tool, both mangled as Codex mangles them ([`mcp_namespace`],
//!   [`mcp_function_name`]), with the arguments as a JSON string and `call_id` `call_<n>`. This is
//!   the only form Codex 0.169.0 routes to an MCP tool; a flat `mcp__server__tool` name is
//!   rejected as "unsupported call".
//! - [`Reply::error`]: the status with `{"error":{"message","type":"test_kit_error","code":null}}`.
//!
//! Response ids are `resp_<n>`, item ids `msg_<n>` / `fc_<n>`, `n` being the zero-based index of
//! the model request.
//!
//! # Pointing Codex at it
//! ```text
//! codex exec --json --skip-git-repo-check -c model_provider=mock -c 'model_providers.mock.name="mock"' \
//!   -c 'model_providers.mock.base_url="<base_url()>"' -c 'model_providers.mock.wire_api="responses"' \
//!   -c 'model_providers.mock.env_key="MOCK_KEY"' -c model_providers.mock.request_max_retries=0 \
//!   -c model_providers.mock.stream_max_retries=0 --disable unbounded_connection_retries -
//! ```
//! (`MOCK_KEY` set to anything; it arrives as the bearer token. Without the last three settings
//! Codex retries failed requests for about 25 s, and retries a refused connection forever.)
//!
//! [`Reply::text`]: crate::Reply::text
//! [`Reply::tool_call`]: crate::Reply::tool_call
//! [`Reply::error`]: crate::Reply::error

use serde_json::{Value, json};

use crate::body::{array, content_text, str_field, tool_output_text};
use crate::names::mangle;
use crate::record::{FunctionCallOutput, RecordedRequest, WireApi};
use crate::script::Usage;
use crate::server::{HttpAnswer, Route, Turn, Wire, sse};

crate::server::mock_server! {
    /// A scripted OpenAI Responses API server on `127.0.0.1:<ephemeral port>`.
    ///
    /// It runs on its own thread and Tokio runtime, so it works from synchronous tests and from
    /// any async runtime. It stops on [`MockResponses::shutdown`] or when dropped; the recorded
    /// requests stay readable after that.
    pub struct MockResponses serves ResponsesWire;
    /// The base URL to configure in the client: `http://127.0.0.1:<port>/v1`.
    base_url = |addr| format!("http://{addr}/v1");
}

/// The Codex namespace of the MCP server configured under `server`: `mcp__` followed by the
/// server key with every character outside `[A-Za-z0-9_]` replaced by `_`
/// (`agent-tools` → `mcp__agent_tools`).
pub fn mcp_namespace(server: &str) -> String {
    format!("mcp__{}", mangle(server, &['_']))
}

/// The function name under which Codex offers the MCP tool `tool`: every character outside
/// `[A-Za-z0-9_]` replaced by `_` (`my-tool.v2` → `my_tool_v2`).
pub fn mcp_function_name(tool: &str) -> String {
    mangle(tool, &['_'])
}

/// The tool namespaces Codex announced as *deferred* in this request (listed in a developer
/// message as `Deferred tool namespaces:`). Codex 0.169.0 with its default model defers MCP
/// tools this way instead of listing them in `tools`, so this is where an injected MCP server
/// shows up (`mcp__agent_tools`). Empty for other wire APIs.
pub fn deferred_tool_namespaces(request: &RecordedRequest) -> Vec<String> {
    if request.wire_api() != WireApi::OpenAiResponses {
        return Vec::new();
    }
    let mut namespaces = Vec::new();
    for (_, text) in input_messages(request.body()) {
        let Some((_, rest)) = text.split_once("Deferred tool namespaces:") else {
            continue;
        };
        for line in rest.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match line.strip_prefix("- ") {
                Some(name) => namespaces.push(name.trim().to_owned()),
                None => break,
            }
        }
    }
    namespaces
}

/// The Responses wire, for [`MockResponses`].
struct ResponsesWire;

impl Wire for ResponsesWire {
    const API: WireApi = WireApi::OpenAiResponses;

    fn route(method: &str, path: &str, body: &Value) -> Route {
        if let Some(format) = body.pointer("/text/format")
            && format.get("type").and_then(Value::as_str) == Some("json_schema")
            && format.get("strict").and_then(Value::as_bool) == Some(true)
            && let Some(violation) =
                strict_schema_violation(format.get("schema").unwrap_or(&Value::Null))
        {
            let name = format.get("name").and_then(Value::as_str).unwrap_or("");
            return Route::json(
                400,
                &json!({"error": {
                    "message": format!("Invalid schema for response_format '{name}': {violation}"),
                    "type": "invalid_request_error",
                    "param": "text.format.schema",
                    "code": "invalid_json_schema",
                }}),
            );
        }
        crate::openai::route(
            method,
            path,
            "/responses",
            &json!({"object": "list", "data": [], "models": []}),
            |message| json!({"error": {"message": message, "type": "not_found"}}),
        )
    }

    fn error_body(_status: u16, message: &str) -> Value {
        crate::openai::error_body(message)
    }

    fn render_turn(
        turn: &Turn<'_>,
        usage: &Usage,
        sequence: usize,
        _request: &Value,
    ) -> HttpAnswer {
        let response_id = format!("resp_{sequence}");
        let item = match turn {
            Turn::Text(text) => json!({
                "type": "message",
                "role": "assistant",
                "id": format!("msg_{sequence}"),
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            Turn::ToolCall(call) => {
                let mut item = json!({
                    "type": "function_call",
                    "id": format!("fc_{sequence}"),
                    "call_id": call.call_id,
                    "name": call.name(|_, tool| mcp_function_name(tool)),
                    "arguments": call.arguments.to_string(),
                    "status": "completed",
                });
                if let Some(server) = call.server {
                    item["namespace"] = json!(mcp_namespace(server));
                }
                item
            }
        };
        let events = [
            json!({"type": "response.created", "response": {"id": response_id}}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            json!({
                "type": "response.completed",
                "response": {"id": response_id, "usage": usage_json(usage)},
            }),
        ];
        HttpAnswer::event_stream(sse(&events))
    }
}

/// Why OpenAI's strict structured output refuses `schema`, in the API's words, or `None`
/// when it is in strict form: an object root; every object with `additionalProperties: false`
/// and every one of its properties `required`; no `oneOf`. (The API checks more, such as
/// unsupported keywords; these are the rules a derived schema breaks.)
///
/// ```
/// use test_kit::responses::strict_schema_violation;
/// use serde_json::json;
///
/// let closed = json!({"type": "object", "properties": {"a": {"type": "string"}},
///                     "required": ["a"], "additionalProperties": false});
/// assert_eq!(strict_schema_violation(&closed), None);
/// let open = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
/// assert!(strict_schema_violation(&open).unwrap().contains("additionalProperties"));
/// ```
pub fn strict_schema_violation(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Some(format!(
            "schema must be a JSON Schema of 'type: \"object\"', got 'type: {}'.",
            schema.get("type").unwrap_or(&Value::Null)
        ));
    }
    let mut context = Vec::new();
    strict_violation_at(schema, &mut context)
}

/// [`strict_schema_violation`] below the root; `context` is the path, as the API names it.
fn strict_violation_at(schema: &Value, context: &mut Vec<String>) -> Option<String> {
    let map = schema.as_object()?;
    let at = || format!("In context=({})", context.join(", "));
    if map.contains_key("oneOf") {
        return Some(format!("{}, 'oneOf' is not permitted.", at()));
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Some(format!(
                "{}, 'additionalProperties' is required to be supplied and to be false.",
                at()
            ));
        }
        let required: Vec<&str> = array(schema, "required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if let Some(missing) = properties.keys().find(|k| !required.contains(&k.as_str())) {
            return Some(format!(
                "{}, 'required' is required to be supplied and to be an array including every \
                 key in properties. Missing '{missing}'.",
                at()
            ));
        }
        for (name, property) in properties {
            context.extend(["'properties'".to_owned(), format!("'{name}'")]);
            let found = strict_violation_at(property, context);
            context.truncate(context.len() - 2);
            if found.is_some() {
                return found;
            }
        }
    }
    for key in ["$defs", "definitions"] {
        for (name, def) in map
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            context.extend([format!("'{key}'"), format!("'{name}'")]);
            let found = strict_violation_at(def, context);
            context.truncate(context.len() - 2);
            if found.is_some() {
                return found;
            }
        }
    }
    for key in ["items", "anyOf", "allOf"] {
        let subschemas = match map.get(key) {
            Some(Value::Array(list)) => list.iter().collect(),
            Some(one) => vec![one],
            None => Vec::new(),
        };
        for sub in subschemas {
            context.push(format!("'{key}'"));
            let found = strict_violation_at(sub, context);
            context.pop();
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// Responses usage, with the cached and reasoning parts as details.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_output_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

/// The conversation items of a request (`input`).
fn input_items(body: &Value) -> &[Value] {
    array(body, "input")
}

/// (role, text) of every message item in `input`, any role.
pub(crate) fn input_messages(body: &Value) -> Vec<(String, String)> {
    input_items(body)
        .iter()
        .filter(|item| {
            // Items without a type are messages in the Responses API's short form.
            matches!(
                item.get("type").and_then(Value::as_str),
                Some("message") | None
            )
        })
        .filter_map(|item| {
            let role = item.get("role").and_then(Value::as_str)?;
            let text = content_text(item.get("content").unwrap_or(&Value::Null));
            Some((role.to_owned(), text))
        })
        .collect()
}

/// The `function_call_output` items, for [`RecordedRequest::function_call_outputs`].
pub(crate) fn function_call_outputs(body: &Value) -> Vec<FunctionCallOutput> {
    input_items(body)
        .iter()
        .filter(|item| str_field(item, "type") == "function_call_output")
        .map(|item| {
            let call_id = str_field(item, "call_id").to_owned();
            let output = match item.get("output") {
                // Any other JSON value is kept as JSON text, not dropped as a content would be.
                Some(other) if !other.is_string() && !other.is_array() => other.to_string(),
                output => tool_output_text(output),
            };
            FunctionCallOutput { call_id, output }
        })
        .collect()
}

/// True when the last `input` item is a `function_call_output`.
pub(crate) fn last_input_is_tool_output(body: &Value) -> bool {
    input_items(body)
        .last()
        .is_some_and(|item| str_field(item, "type") == "function_call_output")
}

/// `tools` and `additional_tools` items, namespaced tools as `<namespace>__<name>`.
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    /// Flattens `entries`, prefixing the names under a namespace with it.
    fn collect(entries: &[Value], namespace: Option<&str>, out: &mut Vec<String>) {
        for entry in entries {
            let kind = str_field(entry, "type");
            let name = entry.get("name").and_then(Value::as_str);
            if kind == "namespace" {
                collect(array(entry, "tools"), name, out);
                continue;
            }
            let name = name.unwrap_or(kind);
            out.push(match namespace {
                Some(namespace) => format!("{namespace}__{name}"),
                None => name.to_owned(),
            });
        }
    }
    let mut names = Vec::new();
    collect(array(body, "tools"), None, &mut names);
    for item in input_items(body) {
        if str_field(item, "type") == "additional_tools" {
            collect(array(item, "tools"), None, &mut names);
        }
    }
    names
}
