//! Fixtures: a catalog with counting handlers, an rmcp client, raw HTTP, event draining.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolRejection, ToolSet};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, model::CallToolRequestParams};
use run_service::{ExposeSecret, RunAttachment, RunServiceEvent};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counts how often each handler ran.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    pub(crate) add: AtomicUsize,
    pub(crate) fail: AtomicUsize,
}

impl Calls {
    pub(crate) fn total(&self) -> usize {
        self.add.load(Ordering::SeqCst) + self.fail.load(Ordering::SeqCst)
    }
}

/// `add` (sums `a` and `b`), `fail` (rejects), `boom` (panics) and `stats` (structured output).
pub(crate) fn catalog(calls: &Arc<Calls>) -> ToolSet {
    let add_calls = Arc::clone(calls);
    let add = HostedTool::new(
        "add",
        "Adds two integers.",
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]
        }),
        move |call| {
            add_calls.add.fetch_add(1, Ordering::SeqCst);
            async move {
                let n = |k: &str| call.arguments.get(k).and_then(serde_json::Value::as_i64);
                match (n("a"), n("b")) {
                    (Some(a), Some(b)) => Ok(ToolOutput::text((a + b).to_string())),
                    _ => Err(ToolRejection::new("`a` and `b` must be integers")),
                }
            }
        },
    )
    .with_revision("1");
    let fail_calls = Arc::clone(calls);
    let fail = HostedTool::new(
        "fail",
        "Always refuses.",
        json!({"type": "object"}),
        move |_| {
            fail_calls.fail.fetch_add(1, Ordering::SeqCst);
            async { Err(ToolRejection::new("refused on purpose")) }
        },
    )
    .with_revision("1");
    let boom = HostedTool::new("boom", "Panics.", json!({"type": "object"}), |_| async {
        panic!("handler bug")
    })
    .with_revision("1");
    let stats = HostedTool::new(
        "stats",
        "Structured.",
        json!({"type": "object"}),
        |_| async { Ok(ToolOutput::json(json!({"count": 3}))) },
    )
    .with_revision("1")
    .with_output_schema(json!({"type": "object", "properties": {"count": {"type": "integer"}}}));
    ToolSet::new([add, fail, boom, stats]).unwrap()
}

pub(crate) fn provider(calls: &Arc<Calls>) -> HostedToolsProvider {
    HostedToolsProvider::new(catalog(calls))
}

/// Where a run reaches the server: URL, env-var name and token.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) port: u16,
    pub(crate) env_var: String,
    pub(crate) token: String,
}

pub(crate) fn endpoint(attachment: &RunAttachment) -> Endpoint {
    let service = &attachment.services[0];
    let binding = &service.secret_env[0];
    Endpoint {
        url: service.url.clone().unwrap(),
        port: service.port.unwrap(),
        env_var: binding.name().to_owned(),
        token: binding.value().expose_secret().to_owned(),
    }
}

pub(crate) type Client = RunningService<RoleClient, ()>;

/// A real MCP client over Streamable HTTP (rmcp + reqwest), sending `token` as bearer.
pub(crate) async fn connect(url: &str, token: Option<&str>) -> Result<Client, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    tokio::time::timeout(Duration::from_secs(10), ().serve(transport))
        .await
        .map_err(|_| "initialize timed out".to_owned())?
        .map_err(|e| e.to_string())
}

pub(crate) fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_owned());
    match arguments {
        serde_json::Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

/// The text of a call result's content blocks.
pub(crate) fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Sends one raw HTTP/1.1 POST with `authorization` (a full header value) and returns the
/// status code.
pub(crate) async fn raw_post(
    port: u16,
    path: &str,
    authorization: Option<&str>,
    body: &str,
) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let auth = authorization
        .map(|v| format!("Authorization: {v}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut head))
        .await
        .unwrap()
        .unwrap();
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {line:?}"))
}

pub(crate) type Events =
    std::pin::Pin<Box<dyn futures_core::Stream<Item = RunServiceEvent> + Send>>;

/// The attachment's event stream.
pub(crate) fn events(attachment: &mut RunAttachment) -> Events {
    attachment
        .events
        .take()
        .expect("the attachment carries events")
        .into_inner()
}

/// Takes the next event of a run (`None`: the stream ended), waiting at most five seconds.
pub(crate) async fn next_event(events: &mut Events) -> Option<RunServiceEvent> {
    tokio::time::timeout(
        Duration::from_secs(5),
        std::future::poll_fn(|cx| events.as_mut().poll_next(cx)),
    )
    .await
    .expect("an event or the end of the stream within 5 s")
}

/// Events already delivered, without waiting for more.
pub(crate) fn ready_events(events: &mut Events) -> Vec<RunServiceEvent> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut out = Vec::new();
    while let std::task::Poll::Ready(Some(e)) = events.as_mut().poll_next(&mut cx) {
        out.push(e);
    }
    out
}
