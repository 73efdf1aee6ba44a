//! Attachment fixtures shared by the tests.

use run_service::{EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef};

/// Allocation-only details a provider picks per run.
#[derive(Debug, Clone)]
pub(crate) struct Alloc {
    pub(crate) port: u16,
    pub(crate) env_name: &'static str,
    pub(crate) token: &'static str,
}

pub(crate) const A: Alloc = Alloc {
    port: 4101,
    env_name: "UI_TOKEN_A",
    token: "secret-a-CANARY-0001",
};
pub(crate) const B: Alloc = Alloc {
    port: 4202,
    env_name: "UI_TOKEN_B",
    token: "secret-b-CANARY-0002",
};

pub(crate) fn ui_service(alloc: &Alloc) -> ServiceRef {
    let url = format!("http://127.0.0.1:{}/mcp", alloc.port);
    ServiceRef::new("agent-ui", "Agent UI")
        .with_url(&url)
        .with_port(alloc.port)
        .with_reuse_key(format!("run/{}", alloc.port))
        .with_metadata("allocated_at", format!("t{}", alloc.port))
        .with_mcp(
            McpServer::streamable_http("agent-ui", &url).with_bearer_token_env(alloc.env_name),
        )
        .with_secret_env(EnvBinding::new(alloc.env_name, alloc.token))
}

pub(crate) fn opted_in(alloc: &Alloc, fingerprint: &str) -> RunAttachment {
    RunAttachment::new([ui_service(alloc)]).with_resume_compatibility(RunServiceCompatibility::new(
        "com.example.agent-ui",
        fingerprint,
    ))
}

pub(crate) fn exact(alloc: &Alloc) -> RunAttachment {
    RunAttachment::new([ui_service(alloc)])
}

/// A second, exact attachment with its own service and MCP server.
pub(crate) fn search(port: u16) -> RunAttachment {
    let url = format!("http://127.0.0.1:{port}/search");
    RunAttachment::new([ServiceRef::new("search", "Search")
        .with_url(&url)
        .with_mcp(McpServer::streamable_http("search", &url))])
}
