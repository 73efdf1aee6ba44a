//! The endpoint policy refuses a run whose services point elsewhere, before anything
//! launches.

use std::sync::Arc;

use agent::{EndpointPolicy, ThreadError};
use driver_spi::reference::ReferenceBackend;
use run_service::McpServer;
use thread_store::memory::MemoryStore;

use test_support::host::{ProviderSpec, RotatingProvider, host_with};

#[tokio::test]
async fn a_refused_endpoint_fails_the_run_before_launch() {
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let url = provider.allocation(0).url;
    assert!(url.starts_with("http://127.0.0.1:"));

    // Only a remote host is allowed: the provider's loopback endpoint is refused.
    let remote_only = host_with(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
        |b| b.endpoint_policy(EndpointPolicy::hosts(["tools.example.com"])),
    );
    let err = remote_only.thread("t").run("hi").await.unwrap_err();
    assert!(matches!(err, ThreadError::EndpointRefused { .. }), "{err}");
    assert!(
        !err.to_string().contains("127.0.0.1"),
        "a digest, not the URL: {err}"
    );
    assert!(backend.requests().is_empty(), "the driver never ran");
    assert_eq!(provider.live_runs(), 0, "the provider was detached");
    remote_only.close().await;

    // Loopback only: the same provider runs.
    let local = host_with(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
        |b| b.endpoint_policy(EndpointPolicy::loopback_only()),
    );
    local.thread("t").run("hi").await.unwrap();
    local.close().await;

    // The host's own MCP servers are checked too.
    let remote_mcp = host_with(Arc::new(MemoryStore::new()), &backend, &[], |b| {
        b.endpoint_policy(EndpointPolicy::loopback_only())
            .mcp_server(McpServer::streamable_http(
                "docs",
                "https://docs.example.net/mcp",
            ))
    });
    let err = remote_mcp.thread("t").run("hi").await.unwrap_err();
    assert!(matches!(err, ThreadError::EndpointRefused { .. }), "{err}");
    remote_mcp.close().await;

    // The default allows any endpoint.
    let default = host_with(Arc::new(MemoryStore::new()), &backend, &[], |b| {
        b.mcp_server(McpServer::streamable_http(
            "docs",
            "https://docs.example.net/mcp",
        ))
    });
    default.thread("t").run("hi").await.unwrap();
    default.close().await;
}
