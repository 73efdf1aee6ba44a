//! The Anthropic Messages mock over raw HTTP/1.1: SSE framing, rendering, side routes and the
//! request helpers on Claude Code-shaped bodies.

use crate::http as common;

use crate::http::http;
use serde_json::{Value, json};
use test_kit::anthropic::{MockAnthropic, mcp_tool_name};
use test_kit::{DEFAULT_TEXT, FunctionCallOutput, Reply, Script, Usage, WireApi};

async fn post_messages(mock: &MockAnthropic, body: &Value) -> common::HttpReply {
    http(
        mock.addr(),
        "POST",
        "/v1/messages?beta=true",
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        &body.to_string(),
    )
    .await
}

fn user_turn(text: &str) -> Value {
    json!({
        "model": "claude-opus-4-8",
        "stream": true,
        "max_tokens": 64000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    })
}

#[tokio::test]
async fn text_reply_is_a_complete_message_stream() {
    let mock = MockAnthropic::start(Script::new().then(Reply::text("Hello there"))).unwrap();
    assert_eq!(mock.base_url(), format!("http://{}", mock.addr()));
    assert!(mock.addr().ip().is_loopback());

    let reply = post_messages(&mock, &user_turn("hi")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = reply.named_sse();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let message = &events[0].1["message"];
    assert_eq!(message["id"], "msg_0");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-opus-4-8", "the model is echoed");
    assert_eq!(message["content"], json!([]));
    // Anthropic reports cached input apart from the rest.
    assert_eq!(message["usage"]["input_tokens"], 8);
    assert_eq!(message["usage"]["cache_read_input_tokens"], 2);
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        events[2].1["delta"],
        json!({"type": "text_delta", "text": "Hello there"})
    );
    assert_eq!(events[3].1["index"], 0);
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
    assert_eq!(
        events[4].1["usage"]["output_tokens"],
        Usage::DEFAULT.output_tokens
    );
    assert_eq!(mock.pending_replies(), 0);
}

#[tokio::test]
async fn tool_call_is_a_tool_use_block_with_claude_names() {
    let mock = MockAnthropic::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "hi"}),
            ))
            .then(Reply::tool_call("a.b", "echo-text.v2", json!({})).with_call_id("toolu_x")),
    )
    .unwrap();
    let events = post_messages(&mock, &user_turn("go")).await.named_sse();
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "tool_use", "id": "call_0", "name": "mcp__agent-tools__ping", "input": {}})
    );
    let delta = &events[2].1["delta"];
    assert_eq!(delta["type"], "input_json_delta");
    let input: Value = serde_json::from_str(delta["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"text": "hi"}));
    assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");

    let second = post_messages(&mock, &user_turn("again")).await.named_sse();
    assert_eq!(second[1].1["content_block"]["id"], "toolu_x");
    assert_eq!(
        second[1].1["content_block"]["name"],
        "mcp__a_b__echo-text_v2"
    );
    assert_eq!(
        mcp_tool_name("agent-tools", "echo-text.v2"),
        "mcp__agent-tools__echo-text_v2"
    );
}

#[tokio::test]
async fn non_streaming_errors_raw_and_default() {
    let mock = MockAnthropic::start(
        Script::new()
            .then(Reply::text("plain").with_usage(Usage::new(100, 7)))
            .then(Reply::error(500))
            .then(Reply::error_with_message(401, "bad key"))
            .then(Reply::error(529))
            .then(Reply::raw(200, "text/plain", "verbatim")),
    )
    .unwrap();
    let mut body = user_turn("1");
    body["stream"] = json!(false);
    let plain = post_messages(&mock, &body).await;
    assert_eq!(plain.status, 200);
    let message = plain.json();
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "plain"}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["input_tokens"], 100);
    assert_eq!(message["usage"]["output_tokens"], 7);

    let e500 = post_messages(&mock, &user_turn("2")).await;
    assert_eq!(e500.status, 500);
    assert_eq!(e500.json()["type"], "error");
    assert_eq!(e500.json()["error"]["type"], "api_error");
    let e401 = post_messages(&mock, &user_turn("3")).await;
    assert_eq!(e401.status, 401);
    assert_eq!(
        e401.json()["error"],
        json!({"type": "authentication_error", "message": "bad key"})
    );
    let e529 = post_messages(&mock, &user_turn("4")).await;
    assert_eq!(e529.json()["error"]["type"], "overloaded_error");
    let raw = post_messages(&mock, &user_turn("5")).await;
    assert_eq!(raw.body, "verbatim");
    let default = post_messages(&mock, &user_turn("6")).await.named_sse();
    assert_eq!(default[2].1["delta"]["text"], DEFAULT_TEXT);
    assert_eq!(default[0].1["message"]["id"], "msg_5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_routes_and_title_requests_do_not_consume_steps() {
    let mock = MockAnthropic::start(Script::new().then(Reply::text("real"))).unwrap();
    assert_eq!(http(mock.addr(), "HEAD", "/", &[], "").await.status, 200);
    let count = http(
        mock.addr(),
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &[],
        "{}",
    )
    .await;
    assert_eq!(count.status, 200);
    assert!(count.json()["input_tokens"].is_u64());
    let models = http(mock.addr(), "GET", "/v1/models?limit=1000", &[], "").await;
    assert_eq!(models.json()["data"], json!([]));
    let model = http(mock.addr(), "GET", "/v1/models/claude-x", &[], "").await;
    assert_eq!(model.json()["id"], "claude-x");
    let missing = http(mock.addr(), "DELETE", "/v1/nothing", &[], "").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["type"], "not_found_error");

    // Claude Code's session-title request: structured output, answered without the script.
    let mut title = user_turn("<session>\nhi\n</session>");
    title["output_config"] = json!({"format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["title", "n"], "additionalProperties": false}}});
    let events = post_messages(&mock, &title).await.named_sse();
    let text = events[2].1["delta"]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"title": "test-kit", "n": 0})
    );
    assert_eq!(mock.pending_replies(), 1);

    let real = post_messages(&mock, &user_turn("hi")).await.named_sse();
    assert_eq!(real[2].1["delta"]["text"], "real");

    mock.shutdown();
    let requests = mock.requests();
    let seen: Vec<(&str, bool)> = requests
        .iter()
        .map(|r| (r.method(), r.is_model_request()))
        .collect();
    assert_eq!(
        seen,
        [
            ("HEAD", false),
            ("POST", false),
            ("GET", false),
            ("GET", false),
            ("DELETE", false),
            ("POST", false),
            ("POST", true),
        ]
    );
    assert_eq!(mock.model_requests().len(), 1);
    assert_eq!(requests[6].wire_api(), WireApi::AnthropicMessages);
    assert_eq!(requests[6].path(), "/v1/messages?beta=true");
}

/// A body shaped like Claude Code 2.1.197's second request of a tool-call turn.
fn claude_like_body() -> Value {
    json!({
        "model": "claude-opus-4-8",
        "stream": true,
        "system": [{"type": "text", "text": "You are Claude Code"}],
        "tools": [
            {"name": "Bash", "input_schema": {}},
            {"name": "mcp__agent-tools__ping", "input_schema": {}},
            {"type": "web_search_20250305", "name": "web_search"}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\ncontext\n</system-reminder>\n\n"},
                {"type": "text", "text": "ping it", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": "Available agent types"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "call_0", "name": "mcp__agent-tools__ping", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_0", "content": [
                    {"type": "text", "text": "pong"}, {"type": "text", "text": "again"}
                ]},
                {"type": "tool_result", "tool_use_id": "call_1", "content": "plain", "is_error": true}
            ]}
        ]
    })
}

#[tokio::test]
async fn recorded_request_helpers_read_claude_bodies() {
    let mock = MockAnthropic::start(Script::new()).unwrap();
    post_messages(&mock, &claude_like_body()).await;
    let request = mock.model_requests().pop().unwrap();
    assert_eq!(
        request.bearer(),
        Some("sk-ant-test"),
        "x-api-key is the key"
    );
    assert_eq!(request.model(), Some("claude-opus-4-8"));
    assert_eq!(request.input_texts(), ["ping it", "calling"]);
    assert_eq!(request.last_user_text().as_deref(), Some("ping it"));
    assert_eq!(
        request.function_call_outputs(),
        [
            FunctionCallOutput {
                call_id: "call_0".into(),
                output: "pong\nagain".into()
            },
            FunctionCallOutput {
                call_id: "call_1".into(),
                output: "plain".into()
            },
        ]
    );
    assert!(request.last_input_is_tool_output());
    assert_eq!(
        request.tool_names(),
        ["Bash", "mcp__agent-tools__ping", "web_search"]
    );

    // A bearer header wins over x-api-key (ANTHROPIC_AUTH_TOKEN).
    http(
        mock.addr(),
        "POST",
        "/v1/messages",
        &[("authorization", "Bearer tok"), ("x-api-key", "k")],
        &user_turn("x").to_string(),
    )
    .await;
    let request = mock.model_requests().pop().unwrap();
    assert_eq!(request.bearer(), Some("tok"));
    assert!(!request.last_input_is_tool_output());
}
