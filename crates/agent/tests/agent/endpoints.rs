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

/// A provider whose one service binds `var = value` (as a secret).
#[derive(Debug)]
struct Binds {
    var: &'static str,
    value: &'static str,
}

#[run_service::async_trait]
impl run_service::RunServiceProvider for Binds {
    async fn attach_run(
        &self,
        _run: &run_service::RunId,
    ) -> Result<run_service::RunAttachment, run_service::RunServiceError> {
        let service = run_service::ServiceRef::new("svc", "Service")
            .with_secret_env(run_service::EnvBinding::new(self.var, self.value));
        Ok(run_service::RunAttachment::new([service]))
    }

    async fn detach_run(
        &self,
        _run: &run_service::RunId,
    ) -> Result<(), run_service::RunServiceError> {
        Ok(())
    }
}

/// A binding that moves the model endpoint or a proxy is an endpoint too: its value is checked
/// by the policy (a URL, or a bare `host:port` as proxies are written), before the driver
/// runs, and the refusal shows a digest of the variable's name, never the value.
#[tokio::test]
async fn endpoint_carrying_bindings_are_checked_by_the_policy() {
    let backend = ReferenceBackend::new();
    let run = |policy: EndpointPolicy, var: &'static str, value: &'static str| {
        let backend = backend.clone();
        async move {
            // The reference driver, declaring `CUSTOM_ENDPOINT` as one of its endpoint
            // variables (as a CLI driver's descriptor does, e.g. `CODEBUDDY_INTERNET_ENVIRONMENT`).
            let driver = test_support::host::Reshaped::new(&backend, |d| {
                d.with_endpoint_vars(["CUSTOM_ENDPOINT"])
            });
            let agent = agent::Agent::builder(driver)
                .store(Arc::new(MemoryStore::new()))
                .run_service(Arc::new(Binds { var, value }))
                .endpoint_policy(policy)
                .build()
                .unwrap();
            let result = agent.thread("t").run("hi").await;
            agent.close().await;
            result
        }
    };
    for (var, value) in [
        ("ANTHROPIC_BASE_URL", "https://models.evil.example/v1"),
        ("OPENAI_BASE_URL", "https://models.evil.example/v1"),
        ("GOOGLE_GEMINI_BASE_URL", "https://models.evil.example"),
        ("HTTPS_PROXY", "http://proxy.evil.example:3128"),
        ("ALL_PROXY", "socks5://proxy.evil.example:1080"),
        ("https_proxy", "proxy.evil.example:3128"),
        ("NO_PROXY", "localhost,models.example"),
        ("CUSTOM_ENDPOINT", "https://models.evil.example"),
    ] {
        let err = run(EndpointPolicy::loopback_only(), var, value)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ThreadError::EndpointRefused { .. }),
            "{var}: {err}"
        );
        assert!(!err.to_string().contains("evil"), "{err}");
    }
    assert!(backend.requests().is_empty(), "the driver never ran");

    // A loopback value passes a loopback policy; any value passes the default policy; other
    // service tokens are not endpoints.
    run(
        EndpointPolicy::loopback_only(),
        "ANTHROPIC_BASE_URL",
        "http://127.0.0.1:9/v1",
    )
    .await
    .unwrap();
    run(
        EndpointPolicy::loopback_only(),
        "HTTPS_PROXY",
        "127.0.0.1:3128",
    )
    .await
    .unwrap();
    run(
        EndpointPolicy::any(),
        "ANTHROPIC_BASE_URL",
        "https://models.evil.example/v1",
    )
    .await
    .unwrap();
    run(
        EndpointPolicy::loopback_only(),
        "DOCS_TOKEN",
        "https://evil.example",
    )
    .await
    .unwrap();
}

/// A host-declared MCP server's bearer variable must be one the host bound for it: a server
/// naming the model key without a binding is refused at build, and a bound token reaches the
/// runtime on every run under its name, redacted from what the run reports.
#[tokio::test]
async fn a_host_servers_bearer_must_be_bound_by_the_host_and_reaches_the_runtime() {
    let backend = ReferenceBackend::new();
    let driver = || {
        Arc::new(driver_spi::reference::ReferenceDriver::with_backend(
            backend.clone(),
        ))
    };
    let greedy = McpServer::streamable_http("docs", "http://127.0.0.1:9/mcp")
        .with_bearer_token_env("OPENAI_API_KEY");
    let refused = agent::Agent::builder(driver())
        .store(Arc::new(MemoryStore::new()))
        .mcp_server(greedy)
        .build()
        .unwrap_err();
    assert!(
        matches!(refused, agent::BuildError::HostMcp(_)),
        "{refused}"
    );

    let token = "host-docs-token-5e2b91";
    let docs = McpServer::streamable_http("docs", "http://127.0.0.1:9/mcp")
        .with_bearer_token_env("DOCS_TOKEN");
    let agent = agent::Agent::builder(driver())
        .store(Arc::new(MemoryStore::new()))
        .mcp_server(docs)
        .secret_env(run_service::EnvBinding::new("DOCS_TOKEN", token))
        .build()
        .unwrap();
    let result = agent.thread("t").run(format!("say {token}")).await.unwrap();
    let request = backend.last_request().unwrap();
    assert_eq!(
        request.expose_secret_env("DOCS_TOKEN").as_deref(),
        Some(token)
    );
    assert!(!result.output.contains(token), "{}", result.output);
    agent.close().await;
}
