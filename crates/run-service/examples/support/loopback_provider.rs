//! An example run-service provider: a fresh loopback port and a fresh token for every run,
//! with a stable semantic identity. Shared by the quickstart example and the conformance test.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use run_service::{
    EnvBinding, Lifecycle, McpServer, RunAttachment, RunId, RunServiceCompatibility,
    RunServiceError, RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind,
    async_trait,
};

/// Allocates a real loopback port (held until detach) and a demo token per run.
#[derive(Debug, Default)]
pub(crate) struct LoopbackProvider {
    listeners: Mutex<HashMap<RunId, TcpListener>>,
    counter: AtomicU64,
    /// The tool revision this provider serves; changing it is a semantic change.
    pub(crate) tool_revision: String,
}

impl LoopbackProvider {
    pub(crate) fn new(tool_revision: &str) -> Self {
        Self {
            tool_revision: tool_revision.to_owned(),
            ..Self::default()
        }
    }

    fn semantic_fingerprint(&self) -> String {
        SemanticFingerprint::new()
            .service_role("agent-ui")
            .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
            .tool(
                "ask_user",
                &serde_json::json!({"type": "object"}),
                &self.tool_revision,
            )
            .authorization("bearer", "ui:ask")
            .protocol_revision("2025-06-18")
            .finish()
    }

    /// Demo-quality token: unique per call, not a security primitive.
    fn token(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!("{nanos}:{n}:{}", std::process::id());
        blake3::hash(seed.as_bytes()).to_hex()[..32].to_owned()
    }
}

#[async_trait]
impl RunServiceProvider for LoopbackProvider {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| RunServiceError::new(format!("bind failed: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| RunServiceError::new(format!("no local address: {e}")))?
            .port();
        self.listeners
            .lock()
            .map_err(|_| RunServiceError::new("listener table poisoned"))?
            .insert(run.clone(), listener);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let env_name = format!("AGENT_UI_TOKEN_{port}");
        let service = ServiceRef::new("agent-ui", "Agent UI")
            .with_url(&url)
            .with_port(port)
            .with_lifecycle(Lifecycle::Ephemeral)
            .with_reuse_key(format!("run/{run}"))
            .with_mcp(
                McpServer::streamable_http("agent-ui", &url)
                    .required(true)
                    .with_bearer_token_env(&env_name),
            )
            .with_secret_env(EnvBinding::new(env_name, self.token()));
        Ok(
            RunAttachment::new([service]).with_resume_compatibility(RunServiceCompatibility::new(
                "com.example.agent-ui",
                self.semantic_fingerprint(),
            )),
        )
    }

    async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError> {
        self.listeners
            .lock()
            .map_err(|_| RunServiceError::new("listener table poisoned"))?
            .remove(run);
        Ok(())
    }
}
