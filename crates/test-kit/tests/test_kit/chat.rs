//! The Chat Completions mock over raw HTTP/1.1: SSE framing, rendering, side routes and the
//! request helpers on CodeBuddy Code-shaped bodies.

use crate::http as common;

use crate::http::http;
use serde_json::{Value, json};
use test_kit::chat::{MockChat, mcp_tool_name};
use test_kit::{DEFAULT_TEXT, FunctionCallOutput, Reply, Script, Usage, WireApi};

async fn post_chat(mock: &MockChat, body: &Value) -> common::HttpReply {
    http(
        mock.addr(),
        "POST",
        "/chat/completions",
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer cb-test"),
            ("x-api-key", "cb-test"),
        ],
        &body.to_string(),
    )
    .await
}

fn user_turn(text: &str, include_usage: bool) -> Value {
    json!({
        "model": "default-model",
        "stream": true,
        "stream_options": {"include_usage": include_usage},
        "messages": [{"role": "user", "content": text}],
    })
}

fn chunks(reply: &common::HttpReply) -> Vec<Value> {
    let frames = reply.data_frames();
    assert_eq!(frames.last().map(String::as_str), Some("[DONE]"));
    frames[..frames.len() - 1]
        .iter()
        .map(|frame| serde_json::from_str(frame).unwrap())
        .collect()
}

#[tokio::test]
async fn text_reply_streams_chunks_usage_and_done() {
    let mock = MockChat::start(Script::new().then(Reply::text("Hello there"))).unwrap();
    assert_eq!(mock.base_url(), format!("http://{}", mock.addr()));

    let reply = post_chat(&mock, &user_turn("hi", true)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let chunks = chunks(&reply);
    assert_eq!(chunks.len(), 3);
    for chunk in &chunks {
        assert_eq!(chunk["id"], "chatcmpl_0");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "default-model");
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": "Hello there"})
    );
    assert_eq!(chunks[0]["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(chunks[1]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[2]["choices"], json!([]));
    let usage = &chunks[2]["usage"];
    assert_eq!(usage["prompt_tokens"], Usage::DEFAULT.input_tokens);
    assert_eq!(usage["completion_tokens"], Usage::DEFAULT.output_tokens);
    assert_eq!(usage["total_tokens"], 15);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 2);

    // Without include_usage there is no usage chunk.
    let no_usage = chunks_of(&mock, &user_turn("again", false)).await;
    assert_eq!(no_usage.len(), 2);
    assert_eq!(no_usage[0]["choices"][0]["delta"]["content"], DEFAULT_TEXT);
}

async fn chunks_of(mock: &MockChat, body: &Value) -> Vec<Value> {
    chunks(&post_chat(mock, body).await)
}

#[tokio::test]
async fn tool_call_uses_codebuddy_names() {
    let mock = MockChat::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "hi"}),
            ))
            .then(Reply::tool_call("agent-tools", "echo-text.v2", json!({})).with_call_id("fixed")),
    )
    .unwrap();
    let chunks = chunks_of(&mock, &user_turn("go", true)).await;
    let call = &chunks[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["id"], "call_0");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "mcp__agent_tools__ping");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"text": "hi"}));
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "tool_calls");

    let second = chunks_of(&mock, &user_turn("again", true)).await;
    let call = &second[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["id"], "fixed");
    assert_eq!(call["function"]["name"], "mcp__agent_tools__echo_text_v2");
    assert_eq!(
        mcp_tool_name("agent-tools", "echo-text.v2"),
        "mcp__agent_tools__echo_text_v2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_errors_and_other_routes() {
    let mock = MockChat::start(
        Script::new()
            .then(Reply::tool_call("s", "t", json!({"a": 1})))
            .then(Reply::error(500))
            .then(Reply::error_with_message(401, "bad key")),
    )
    .unwrap();
    let mut body = user_turn("1", false);
    body["stream"] = json!(false);
    let plain = post_chat(&mock, &body).await.json();
    assert_eq!(plain["object"], "chat.completion");
    let message = &plain["choices"][0]["message"];
    assert_eq!(message["tool_calls"][0]["function"]["name"], "mcp__s__t");
    assert_eq!(message["tool_calls"][0].get("index"), None);
    assert_eq!(plain["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(plain["usage"]["prompt_tokens"], 10);

    let e500 = post_chat(&mock, &user_turn("2", true)).await;
    assert_eq!(e500.status, 500);
    assert_eq!(e500.json()["error"]["type"], "test_kit_error");
    let e401 = post_chat(&mock, &user_turn("3", true)).await;
    assert_eq!(e401.json()["error"]["message"], "bad key");

    let models = http(mock.addr(), "GET", "/v1/models", &[], "").await;
    assert_eq!(models.json(), json!({"object": "list", "data": []}));
    let missing = http(mock.addr(), "GET", "/health", &[], "").await;
    assert_eq!(missing.status, 404);
    // Any prefix works, e.g. a client that adds /v1.
    let prefixed = http(mock.addr(), "POST", "/v1/chat/completions", &[], "{}").await;
    assert_eq!(prefixed.status, 200);

    mock.shutdown();
    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(mock.model_requests().len(), 4);
    assert_eq!(requests[0].wire_api(), WireApi::OpenAiChat);
    assert!(!requests[3].is_model_request());
}

/// A body shaped like CodeBuddy Code 2.117.0's second request of a tool-call turn.
fn codebuddy_like_body() -> Value {
    json!({
        "model": "default-model",
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": [
            {"type": "function", "function": {"name": "Bash", "parameters": {}}},
            {"type": "function", "function": {"name": "mcp__agent_tools__ping", "parameters": {}}}
        ],
        "messages": [
            {"role": "system", "content": "You are CodeBuddy Code."},
            {"role": "user", "agent": "cli", "content": [
                {"type": "text", "text": "<system-reminder data-role=\"memory\"><memory>m</memory></system-reminder>"},
                {"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>"},
                {"type": "text", "text": "<user_query>ping it</user_query>"}
            ]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "mcp__agent_tools__ping", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_0", "content": "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}"}
        ]
    })
}

#[tokio::test]
async fn recorded_request_helpers_read_codebuddy_bodies() {
    let mock = MockChat::start(Script::new()).unwrap();
    post_chat(&mock, &codebuddy_like_body()).await;
    let request = mock.model_requests().pop().unwrap();
    assert_eq!(request.bearer(), Some("cb-test"));
    assert_eq!(request.header("x-api-key"), Some("cb-test"));
    assert_eq!(request.model(), Some("default-model"));
    assert_eq!(request.input_texts(), ["<user_query>ping it</user_query>"]);
    assert_eq!(
        request.last_user_text().as_deref(),
        Some("<user_query>ping it</user_query>")
    );
    assert_eq!(
        request.function_call_outputs(),
        [FunctionCallOutput {
            call_id: "call_0".into(),
            output: r#"{"content":[{"type":"text","text":"pong"}]}"#.into()
        }]
    );
    assert!(request.last_input_is_tool_output());
    assert_eq!(request.tool_names(), ["Bash", "mcp__agent_tools__ping"]);

    post_chat(&mock, &user_turn("plain", true)).await;
    let request = mock.model_requests().pop().unwrap();
    assert_eq!(request.input_texts(), ["plain"]);
    assert!(!request.last_input_is_tool_output());
}
