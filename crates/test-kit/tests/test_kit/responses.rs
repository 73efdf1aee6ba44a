//! The Responses mock over raw HTTP/1.1: SSE framing, rendering, scripting and recording.

use crate::http as common;

use std::time::{Duration, Instant};

use crate::http::http;
use serde_json::{Value, json};
use test_kit::responses::{
    MockResponses, deferred_tool_namespaces, mcp_function_name, mcp_namespace,
};
use test_kit::{DEFAULT_TEXT, FunctionCallOutput, Reply, Script, Usage, WireApi};

async fn post_responses(mock: &MockResponses, body: &Value) -> common::HttpReply {
    http(
        mock.addr(),
        "POST",
        "/v1/responses",
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-test"),
            ("accept", "text/event-stream"),
        ],
        &body.to_string(),
    )
    .await
}

fn user_turn(text: &str) -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
    })
}

#[tokio::test]
async fn text_reply_is_the_minimal_codex_stream() {
    let mock = MockResponses::start(Script::new().then(Reply::text("Hello there"))).unwrap();
    assert_eq!(mock.base_url(), format!("http://{}/v1", mock.addr()));
    assert!(mock.addr().ip().is_loopback());

    let reply = post_responses(&mock, &user_turn("hi")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = reply.named_sse();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(events[0].1["response"]["id"], "resp_0");
    let item = &events[1].1["item"];
    assert_eq!(item["type"], "message");
    assert_eq!(item["role"], "assistant");
    assert_eq!(item["content"][0]["type"], "output_text");
    assert_eq!(item["content"][0]["text"], "Hello there");
    let usage = &events[2].1["response"]["usage"];
    assert_eq!(events[2].1["response"]["id"], "resp_0");
    assert_eq!(usage["input_tokens"], Usage::DEFAULT.input_tokens);
    assert_eq!(
        usage["input_tokens_details"]["cached_tokens"],
        Usage::DEFAULT.cached_input_tokens
    );
    assert_eq!(usage["output_tokens"], Usage::DEFAULT.output_tokens);
    assert_eq!(usage["total_tokens"], 15);
    assert_eq!(mock.pending_replies(), 0);
}

#[tokio::test]
async fn tool_call_uses_codex_namespace_and_mangled_names() {
    let mock = MockResponses::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "my-tool.v2",
                json!({"a": 1}),
            ))
            .then(Reply::tool_call("tools", "echo", json!({})).with_call_id("fixed")),
    )
    .unwrap();
    let first = post_responses(&mock, &user_turn("go")).await.named_sse();
    let item = &first[1].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["namespace"], "mcp__agent_tools");
    assert_eq!(item["name"], "my_tool_v2");
    assert_eq!(item["call_id"], "call_0");
    assert_eq!(item["id"], "fc_0");
    let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"a": 1}));

    let second = post_responses(&mock, &user_turn("again")).await.named_sse();
    assert_eq!(second[1].1["item"]["call_id"], "fixed");
    assert_eq!(second[1].1["item"]["namespace"], "mcp__tools");

    assert_eq!(mcp_namespace("agent-tools"), "mcp__agent_tools");
    assert_eq!(mcp_function_name("a.b-c_d9"), "a_b_c_d9");
}

#[tokio::test]
async fn errors_raw_usage_and_default() {
    let mock = MockResponses::start(
        Script::new()
            .then(Reply::error(500))
            .then(Reply::error_with_message(401, "bad key"))
            .then(Reply::raw(
                200,
                "text/event-stream",
                "event: x\ndata: {}\n\n",
            ))
            .then(Reply::text("counted").with_usage(Usage::new(100, 7))),
    )
    .unwrap();
    let e500 = post_responses(&mock, &user_turn("1")).await;
    assert_eq!(e500.status, 500);
    assert_eq!(e500.header("content-type"), Some("application/json"));
    assert_eq!(e500.json()["error"]["type"], "test_kit_error");
    let e401 = post_responses(&mock, &user_turn("2")).await;
    assert_eq!(e401.status, 401);
    assert_eq!(e401.json()["error"]["message"], "bad key");
    let raw = post_responses(&mock, &user_turn("3")).await;
    assert_eq!(raw.body, "event: x\ndata: {}\n\n");
    let counted = post_responses(&mock, &user_turn("4")).await.named_sse();
    assert_eq!(counted[2].1["response"]["usage"]["input_tokens"], 100);
    assert_eq!(counted[2].1["response"]["usage"]["output_tokens"], 7);

    // The queue is empty: the documented default text, with the request's sequence number.
    let default = post_responses(&mock, &user_turn("5")).await.named_sse();
    assert_eq!(default[1].1["item"]["content"][0]["text"], DEFAULT_TEXT);
    assert_eq!(default[0].1["response"]["id"], "resp_4");

    let other = MockResponses::start(Script::new().with_default(Reply::text("mine"))).unwrap();
    let reply = post_responses(&other, &user_turn("x")).await.named_sse();
    assert_eq!(reply[1].1["item"]["content"][0]["text"], "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_routes_are_answered_and_everything_is_recorded() {
    let mock = MockResponses::start(Script::new().then(Reply::text("a"))).unwrap();
    let models = http(mock.addr(), "GET", "/v1/models?client_version=1", &[], "").await;
    assert_eq!(models.status, 200);
    assert_eq!(models.json()["data"], json!([]));
    let missing = http(mock.addr(), "DELETE", "/v1/nothing", &[], "").await;
    assert_eq!(missing.status, 404);
    let not_json = http(mock.addr(), "POST", "/v1/responses", &[], "plain").await;
    assert_eq!(
        not_json.status, 200,
        "a model request even with a non-JSON body"
    );

    mock.shutdown();
    let requests = mock.requests();
    let seen: Vec<(&str, &str, bool)> = requests
        .iter()
        .map(|r| (r.method(), r.path(), r.is_model_request()))
        .collect();
    assert_eq!(
        seen,
        [
            ("GET", "/v1/models?client_version=1", false),
            ("DELETE", "/v1/nothing", false),
            ("POST", "/v1/responses", true),
        ]
    );
    assert_eq!(requests[2].raw_body(), b"plain");
    assert_eq!(requests[2].body(), &Value::Null);
    assert_eq!(requests[2].index(), 2);
    assert_eq!(requests[2].wire_api(), WireApi::OpenAiResponses);
    assert_eq!(mock.model_requests().len(), 1);
}

/// A body shaped like Codex 0.169.0's second request of a tool-call turn.
fn codex_like_body() -> Value {
    json!({
        "model": "gpt-6.1-sol",
        "stream": true,
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {}},
            {"type": "namespace", "name": "mcp__agent_tools", "tools": [
                {"type": "function", "name": "add", "parameters": {}}
            ]},
            {"type": "web_search"}
        ],
        "input": [
            {"type": "additional_tools", "role": "developer", "tools": [
                {"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]}
            ]},
            {"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "system prompt"},
                {"type": "input_text", "text": "<tools>\nDeferred tool namespaces:\n- mcp__agent_tools\n- mcp__other\n</tools>"}
            ]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add 1 and 2\n"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
            {"type": "function_call", "call_id": "call_0", "namespace": "mcp__agent_tools", "name": "add", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_0", "output": [
                {"type": "input_text", "text": "Wall time: 0.01 seconds\nOutput:"},
                {"type": "input_text", "text": "3"}
            ]},
            {"type": "function_call_output", "call_id": "call_x", "output": "unsupported call: x"}
        ]
    })
}

#[tokio::test]
async fn recorded_request_helpers_read_codex_bodies() {
    let mock = MockResponses::start(Script::new()).unwrap();
    post_responses(&mock, &codex_like_body()).await;
    let request = mock.model_requests().pop().unwrap();

    assert_eq!(request.bearer(), Some("sk-test"));
    assert_eq!(request.header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert!(
        request
            .headers()
            .iter()
            .all(|(n, _)| n == &n.to_lowercase())
    );
    assert_eq!(request.model(), Some("gpt-6.1-sol"));
    assert_eq!(
        request.input_texts(),
        ["<environment_context/>", "add 1 and 2\n", "calling"]
    );
    assert_eq!(request.last_user_text().as_deref(), Some("add 1 and 2\n"));
    assert_eq!(
        request.function_call_outputs(),
        [
            FunctionCallOutput {
                call_id: "call_0".into(),
                output: "Wall time: 0.01 seconds\nOutput:\n3".into()
            },
            FunctionCallOutput {
                call_id: "call_x".into(),
                output: "unsupported call: x".into()
            },
        ]
    );
    assert!(request.last_input_is_tool_output());
    assert_eq!(
        request.tool_names(),
        [
            "exec_command",
            "mcp__agent_tools__add",
            "web_search",
            "functions__exec"
        ]
    );
    assert_eq!(
        deferred_tool_namespaces(&request),
        ["mcp__agent_tools", "mcp__other"]
    );
}

#[tokio::test]
async fn guarded_steps_wait_for_a_matching_request() {
    let mock = MockResponses::start(
        Script::new()
            .then_when(
                |request| request.last_input_is_tool_output(),
                Reply::text("after the tool"),
            )
            .then(Reply::tool_call("tools", "echo", json!({"text": "x"}))),
    )
    .unwrap();
    // The first request is a plain prompt: the guarded step is skipped, the call is taken.
    let first = post_responses(&mock, &user_turn("go")).await.named_sse();
    assert_eq!(first[1].1["item"]["type"], "function_call");
    assert_eq!(mock.pending_replies(), 1);
    // A prompt again: nothing accepts it, the default answers and the guarded step stays.
    let second = post_responses(&mock, &user_turn("go")).await.named_sse();
    assert_eq!(second[1].1["item"]["content"][0]["text"], DEFAULT_TEXT);
    assert_eq!(mock.pending_replies(), 1);
    // The continuation after the tool output.
    let third = post_responses(&mock, &codex_like_body()).await.named_sse();
    assert_eq!(third[1].1["item"]["content"][0]["text"], "after the tool");
    assert_eq!(mock.pending_replies(), 0);

    mock.push_reply(Reply::text("pushed"));
    let fourth = post_responses(&mock, &user_turn("go")).await.named_sse();
    assert_eq!(fourth[1].1["item"]["content"][0]["text"], "pushed");
}

#[test]
fn works_without_a_runtime_and_shutdown_closes_the_port() {
    let mock = MockResponses::start(
        [Reply::text("one"), Reply::text("two")]
            .into_iter()
            .collect(),
    )
    .unwrap();
    assert_eq!(mock.pending_replies(), 2);
    let addr = mock.addr();
    assert!(std::net::TcpStream::connect(addr).is_ok());
    mock.shutdown();
    mock.shutdown(); // idempotent
    assert!(std::net::TcpStream::connect(addr).is_err(), "port closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_a_delayed_reply() {
    let mock = MockResponses::start(
        Script::new().then(Reply::text("late").delayed(Duration::from_secs(60))),
    )
    .unwrap();
    let addr = mock.addr();
    let pending = tokio::spawn(async move { http(addr, "POST", "/v1/responses", &[], "{}").await });
    // Wait until the request is recorded (it is recorded before the delay).
    let deadline = Instant::now() + Duration::from_secs(10);
    while mock.requests().is_empty() {
        assert!(Instant::now() < deadline, "request never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    tokio::task::block_in_place(|| mock.shutdown());
    assert!(started.elapsed() < Duration::from_secs(5));
    // The client sees the connection closed without an answer.
    assert!(
        pending.await.is_err(),
        "the half-read reply panics the helper"
    );
}

#[tokio::test]
async fn delayed_reply_is_answered_after_the_delay() {
    let mock = MockResponses::start(
        Script::new().then(Reply::text("late").delayed(Duration::from_millis(300))),
    )
    .unwrap();
    let started = Instant::now();
    let reply = post_responses(&mock, &user_turn("x")).await.named_sse();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(reply[1].1["item"]["content"][0]["text"], "late");
}

/// Issue 40: every mock shuts down through `&self`, so a mock shared with a driver or a task
/// (in an `Arc`) can be stopped by whoever holds it; dropping the last handle does the same.
#[test]
fn every_mock_shuts_down_through_a_shared_reference_or_on_drop() {
    fn closes(addr: std::net::SocketAddr, shutdown: impl FnOnce()) {
        assert!(std::net::TcpStream::connect(addr).is_ok());
        shutdown();
        assert!(std::net::TcpStream::connect(addr).is_err(), "port closed");
    }
    let responses = std::sync::Arc::new(MockResponses::start(Script::new()).unwrap());
    let shared = std::sync::Arc::clone(&responses);
    closes(responses.addr(), || shared.shutdown());
    responses.shutdown(); // idempotent, through the other handle
    let anthropic = test_kit::anthropic::MockAnthropic::start(Script::new()).unwrap();
    closes(anthropic.addr(), || anthropic.shutdown());
    let chat = test_kit::chat::MockChat::start(Script::new()).unwrap();
    closes(chat.addr(), || chat.shutdown());
    let gemini = test_kit::gemini::MockGemini::start(Script::new()).unwrap();
    closes(gemini.addr(), || gemini.shutdown());
    let dropped = MockResponses::start(Script::new()).unwrap();
    let addr = dropped.addr();
    closes(addr, || drop(dropped));
}
