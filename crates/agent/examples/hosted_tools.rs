//! Host-defined tools, end to end: register a Rust function as a tool, run a Thread on the
//! reference driver, and call the tool through the MCP endpoint with the URL and token the
//! driver received, as an MCP-capable CLI would.
//!
//! Run with `cargo run -p agent --example hosted_tools`.

use std::error::Error;
use std::sync::Arc;

use agent::tools::{HostedTool, SERVICE_ID, ToolOutput, ToolRejection};
use agent::{Agent, ThreadEventKind};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use run_service::McpTransport;
use serde_json::json;
use thread_store::memory::MemoryStore;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    // 1. A tool: name, description, input schema, revision and an async handler.
    let lookup = HostedTool::new(
        "lookup_order",
        "Looks up the status of an order by id.",
        json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"]
        }),
        |call| async move {
            match call.arguments.get("id").and_then(|v| v.as_str()) {
                Some(id) => Ok(ToolOutput::text(format!("order {id}: shipped"))),
                None => Err(ToolRejection::new("`id` must be a string")),
            }
        },
    )
    .with_revision("2026-11-30");
    println!("1. declared tool `lookup_order` (revision 2026-11-30)");

    // 2. An agent with the tool. `build` validates it; no server starts yet.
    let backend = ReferenceBackend::new();
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()))
        .tool(lookup)
        .build()?;
    println!("2. built the agent; the tool server starts with the first run");

    // 3. Start a run. The reference driver stalls, as a real CLI would while it works, so
    //    the tool call below happens during the run and shows up in its event stream.
    backend.push_behavior(Behavior::Stall);
    let mut run = agent.thread("orders").stream("Where is order 42?")?;
    backend.wait_for_stalled(1).await;
    println!("3. the run is in flight; calling the tool with what the driver received:");

    // 4. What the driver received (the MCP declaration, the token in its secret env), used
    //      the way an MCP-capable CLI uses it: rmcp's Streamable HTTP client.
    let text = call_hosted_tool(&backend, "lookup_order", json!({"id": "42"})).await?;
    assert_eq!(text, "order 42: shipped");

    // 5. The call is part of the run's event stream.
    let mut seen = 0;
    while seen < 3 {
        let Some(event) = run.next_event().await else {
            break;
        };
        if let ThreadEventKind::ServiceEvent {
            service_id,
            name,
            data,
        } = &event.kind
            && service_id == SERVICE_ID
        {
            println!("4. run event #{}: {name} {data}", event.seq);
            seen += 1;
        }
    }

    // 6. Let the run finish, then close the agent: the server stops and its port is released.
    backend.release_stalled();
    let finished = run.result().await?;
    println!("5. run finished: {:?}", finished.session);
    let recorded = backend
        .last_request()
        .ok_or("the driver received no request")?;
    let port = recorded
        .request()
        .runtime
        .services
        .iter()
        .find_map(|s| s.port)
        .ok_or("no port")?;
    agent.close().await;
    let refused = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err();
    println!("6. agent closed; port {port} refuses connections: {refused}");
    Ok(())
}

/// Calls a hosted tool through the MCP endpoint the reference driver last received, as an
/// MCP-capable CLI would: the URL and bearer env-var name from the request's MCP declaration,
/// the token from its secret env. Returns the tool's text output.
async fn call_hosted_tool(
    backend: &ReferenceBackend,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<String, Box<dyn Error>> {
    let recorded = backend
        .last_request()
        .ok_or("the driver received no request")?;
    let server = recorded
        .request()
        .mcp
        .iter()
        .find(|m| m.name == SERVICE_ID)
        .ok_or("no tool server in the request")?;
    let McpTransport::StreamableHttp {
        url,
        bearer_token_env_var: Some(env_var),
        ..
    } = &server.transport
    else {
        return Err("the tool server is not Streamable HTTP with a bearer env var".into());
    };
    let token = recorded
        .expose_secret_env(env_var)
        .ok_or("the token is not in the secret env")?;
    println!("   MCP server `{SERVICE_ID}` at {url}");
    println!(
        "   bearer token in ${env_var} ({} hex digits, never printed)",
        token.len()
    );

    let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(token);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
    let names: Vec<_> = client
        .list_all_tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    println!("   tools/list -> {names:?}");
    let serde_json::Value::Object(arguments) = arguments else {
        return Err("tool arguments must be a JSON object".into());
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone()))
        .await?;
    client.cancel().await?;
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let failed = if result.is_error == Some(true) {
        " (tool error)"
    } else {
        ""
    };
    println!(
        "   tools/call {tool} {} -> {text:?}{failed}",
        serde_json::Value::Object(arguments)
    );
    Ok(text)
}
