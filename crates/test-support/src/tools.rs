//! Fixtures for host-defined tool tests: a `lookup_order` tool, an agent that registers it, the
//! tool endpoint as the driver received it, and a real rmcp client over HTTP.
#![allow(
    clippy::unwrap_used,
    reason = "test fixtures: a failed setup is a failed test"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent::tools::{HostedTool, ToolOutput, ToolRejection};
use agent::{Agent, ThreadEvent, ThreadEventKind};
use driver_spi::reference::{RecordedRequest, ReferenceBackend, ReferenceDriver};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use run_service::McpTransport;
use serde_json::json;
use thread_store::ThreadStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How a `lookup` tool is declared; changing any field changes the catalog fingerprint.
#[derive(Debug, Clone)]
pub struct Decl {
    /// The tool revision, if any.
    pub revision: Option<&'static str>,
    /// The required input fields.
    pub required: &'static [&'static str],
}

/// The first declaration: revision `1`, `id` required.
pub const V1: Decl = Decl {
    revision: Some("1"),
    required: &["id"],
};

/// A `lookup` tool whose handler counts its runs; it rejects ids starting with `x`.
pub fn lookup(decl: &Decl, runs: &Arc<AtomicUsize>) -> HostedTool {
    let runs = Arc::clone(runs);
    let tool = HostedTool::new(
        "lookup_order",
        "Looks up an order by id.",
        json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": decl.required,
        }),
        move |call| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                match call.arguments.get("id").and_then(|v| v.as_str()) {
                    Some(id) if id.starts_with('x') => {
                        Err(ToolRejection::new(format!("no order {id}")))
                    }
                    Some(id) => Ok(ToolOutput::text(format!("order {id}: shipped"))),
                    None => Err(ToolRejection::new("`id` is required")),
                }
            }
        },
    );
    match decl.revision {
        Some(r) => tool.with_revision(r),
        None => tool,
    }
}

/// An agent over `store` with the reference driver on `backend` and `tool` registered.
pub fn tool_host(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    tool: HostedTool,
) -> Agent {
    Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(store)
        .model("model-1")
        .workspace("/work/project")
        .tool(tool)
        .build()
        .unwrap()
}

/// The tool endpoint as the driver received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The tool server's URL.
    pub url: String,
    /// Its port.
    pub port: u16,
    /// The bearer env-var name.
    pub env_var: String,
    /// The bearer token.
    pub token: String,
}

/// The tool endpoint the driver received in `recorded`.
pub fn endpoint(recorded: &RecordedRequest) -> Endpoint {
    let request = recorded.request();
    let mcp = request
        .mcp
        .iter()
        .find(|m| m.name == hosted_tools::SERVICE_ID)
        .expect("the request declares the tool server");
    let McpTransport::StreamableHttp {
        url,
        bearer_token_env_var: Some(env_var),
        ..
    } = &mcp.transport
    else {
        panic!("not a Streamable HTTP server with a bearer env var: {mcp:?}")
    };
    let service = request
        .runtime
        .services
        .iter()
        .find(|s| s.id == hosted_tools::SERVICE_ID)
        .unwrap();
    assert_eq!(service.url.as_deref(), Some(url.as_str()));
    Endpoint {
        url: url.clone(),
        port: service.port.unwrap(),
        env_var: env_var.clone(),
        token: recorded
            .expose_secret_env(env_var)
            .expect("the token is in the secret env"),
    }
}

/// An rmcp client session.
pub type Client = RunningService<RoleClient, ()>;

/// Connects an rmcp client to `url`, with `token` as the bearer when given.
pub async fn connect(url: &str, token: Option<&str>) -> Result<Client, String> {
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

/// Calls `lookup_order` with `id`; panics when the call fails.
pub async fn call_lookup(client: &Client, id: &str) -> CallToolResult {
    call_lookup_result(client, id).await.unwrap()
}

/// A `lookup_order` call that may fail (outside a run the server serves nothing).
pub async fn call_lookup_result(
    client: &Client,
    id: &str,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("id".into(), id.into());
    client
        .call_tool(CallToolRequestParams::new("lookup_order").with_arguments(arguments))
        .await
}

/// The text of every text content of `result`, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Status code of one raw HTTP POST (a JSON-RPC initialize) with this Authorization value.
pub async fn raw_status(ep: &Endpoint, authorization: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let path = ep.url.split_once(&ep.port.to_string()).unwrap().1;
    let auth = authorization
        .map(|v| format!("Authorization: {v}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        ep.port,
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", ep.port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 32];
    let n = stream.read(&mut head).await.unwrap();
    String::from_utf8_lossy(&head[..n])
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

/// The hosted-tools service events, as `(name, data)`.
pub fn service_events(events: &[ThreadEvent]) -> Vec<(String, serde_json::Value)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ServiceEvent {
                service_id,
                name,
                data,
            } if service_id == hosted_tools::SERVICE_ID => Some((name.clone(), data.clone())),
            _ => None,
        })
        .collect()
}

/// Reads the run's stream until `count` tool events arrived; returns every event read.
pub async fn read_until_tool_events(
    stream: &mut agent::RunStream,
    count: usize,
) -> Vec<ThreadEvent> {
    let mut seen = Vec::new();
    while service_events(&seen).len() < count {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next_event())
            .await
            .expect("tool events within 5 s")
            .expect("the stream is open");
        seen.push(event);
    }
    seen
}
