//! Shared by the examples: an MCP client on the hosted-tools endpoint that the reference driver
//! last received, as an MCP-capable CLI would connect (URL and bearer env-var name from the
//! request's MCP declaration, the token from its secret env).

use std::error::Error;

use agent::tools::SERVICE_ID;
use driver_spi::reference::ReferenceBackend;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use run_service::McpTransport;

/// Where the client connected; the token itself is never kept or printed.
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) env_var: String,
    pub(crate) token_len: usize,
}

/// Connects to the tool server of the last request the reference driver received.
pub(crate) async fn connect(
    backend: &ReferenceBackend,
) -> Result<(RunningService<RoleClient, ()>, Endpoint), Box<dyn Error>> {
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
    let endpoint = Endpoint {
        url: url.clone(),
        env_var: env_var.clone(),
        token_len: token.len(),
    };
    let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(token);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
    Ok((client, endpoint))
}

/// Calls `tool` with `arguments` (a JSON object); returns its text and whether it reported an
/// error.
pub(crate) async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<(String, bool), Box<dyn Error>> {
    let serde_json::Value::Object(arguments) = arguments else {
        return Err("tool arguments must be a JSON object".into());
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await?;
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    Ok((text, result.is_error == Some(true)))
}
