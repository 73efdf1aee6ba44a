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
use serde_json::json;
use thread_store::memory::MemoryStore;

mod support {
    pub(crate) mod mcp_client;
}

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
/// MCP-capable CLI would. Returns the tool's text output.
async fn call_hosted_tool(
    backend: &ReferenceBackend,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<String, Box<dyn Error>> {
    let (client, endpoint) = support::mcp_client::connect(backend).await?;
    println!("   MCP server `{SERVICE_ID}` at {}", endpoint.url);
    println!(
        "   bearer token in ${} ({} hex digits, never printed)",
        endpoint.env_var, endpoint.token_len
    );
    let names: Vec<_> = client
        .list_all_tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    println!("   tools/list -> {names:?}");
    let shown = arguments.to_string();
    let (text, failed) = support::mcp_client::call(&client, tool, arguments).await?;
    client.cancel().await?;
    let failed = if failed { " (tool error)" } else { "" };
    println!("   tools/call {tool} {shown} -> {text:?}{failed}");
    Ok(text)
}
