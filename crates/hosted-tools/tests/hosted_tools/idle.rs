//! An idle gap longer than any session limit never strands a client that does not
//! re-initialize (as Claude Code and Codex do not).
//!
//! Two clients: rmcp's own HTTP client, and a raw one that behaves like those CLIs (it keeps
//! whatever session id it was given and never initializes again).

use std::sync::Arc;
use std::time::Duration;

use hosted_tools::{HostedToolsProvider, SessionMode};
use run_service::{RunId, RunServiceProvider};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Calls, call, catalog, connect, endpoint, text};

/// The idle limit the stateful case is given: short, so the test is quick.
const IDLE_LIMIT: Duration = Duration::from_millis(400);

/// One rmcp client (it never re-initializes on its own): a call, an idle gap three times the
/// limit, a call. Whether the second call succeeded.
async fn second_call_after_a_gap_succeeds(sessions: SessionMode) -> bool {
    let calls = Arc::new(Calls::default());
    let provider = HostedToolsProvider::new(catalog(&calls)).with_session_mode(sessions);
    let run = RunId::new("run-idle");
    let attachment = provider.attach_run(&run).await.unwrap();
    let ep = endpoint(&attachment);
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    let first = client
        .call_tool(call("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(text(&first), "3");
    tokio::time::sleep(IDLE_LIMIT * 3).await;
    let second = client.call_tool(call("add", json!({"a": 2, "b": 2}))).await;
    let ok = matches!(&second, Ok(result) if text(result) == "4");
    let _ = client.cancel().await;
    provider.detach_run(&run).await.unwrap();
    provider.close().await.unwrap();
    ok
}

#[tokio::test]
async fn the_default_endpoint_serves_a_call_after_any_idle_gap() {
    assert_eq!(
        HostedToolsProvider::new(catalog(&Arc::default()))
            .port()
            .await,
        None
    );
    assert!(
        second_call_after_a_gap_succeeds(SessionMode::default()).await,
        "the stateless default served the call after the gap"
    );
}

/// One raw HTTP POST; the status, the `mcp-session-id` response header and the body.
async fn post(
    port: u16,
    path: &str,
    token: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, Option<String>, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let session = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    (status, session, body.to_owned())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-like","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn add(id: u32, a: i64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{a},"b":1}}}}}}"#
    )
}

/// A client like Claude Code: initialize once, keep the session id it was given (if any),
/// call, stay silent for three idle limits, call again. The status of the second call and
/// whether its body holds the sum.
async fn cli_like_second_call(sessions: SessionMode) -> (u16, bool) {
    let calls = Arc::new(Calls::default());
    let provider = HostedToolsProvider::new(catalog(&calls)).with_session_mode(sessions);
    let run = RunId::new("run-idle-raw");
    let attachment = provider.attach_run(&run).await.unwrap();
    let ep = endpoint(&attachment);
    let path = ep
        .url
        .split_once(&format!(":{}", ep.port))
        .unwrap()
        .1
        .to_owned();
    let (status, session, _) = post(ep.port, &path, &ep.token, None, INITIALIZE).await;
    assert_eq!(status, 200);
    let session = session.as_deref();
    let (status, _, _) = post(ep.port, &path, &ep.token, session, INITIALIZED).await;
    assert!(status == 202 || status == 200, "{status}");
    let (status, _, body) = post(ep.port, &path, &ep.token, session, &add(2, 2)).await;
    assert_eq!(status, 200);
    assert!(body.contains("3"), "{body}");
    tokio::time::sleep(IDLE_LIMIT * 3).await;
    let (status, _, body) = post(ep.port, &path, &ep.token, session, &add(3, 41)).await;
    provider.detach_run(&run).await.unwrap();
    provider.close().await.unwrap();
    (status, body.contains("42"))
}

#[tokio::test]
async fn a_client_that_never_reinitializes_keeps_its_tools_across_an_idle_gap() {
    let (status, answered) = cli_like_second_call(SessionMode::default()).await;
    assert_eq!(status, 200);
    assert!(answered, "the second call was served");
}

#[tokio::test]
async fn a_stateful_endpoint_strands_such_a_client_after_its_idle_limit() {
    // The trap the default avoids (rmcp's sessions, the configuration before this change):
    // the silent session is reaped, and a client that does not re-initialize gets 404 for
    // every later call.
    let (status, answered) = cli_like_second_call(SessionMode::Stateful {
        idle_limit: Some(IDLE_LIMIT),
    })
    .await;
    assert_eq!(status, 404);
    assert!(!answered);
}
