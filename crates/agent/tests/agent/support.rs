//! Shared fixtures: a rotating run-service provider, agents over a SQLite file, and helpers.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::Agent;
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use run_service::{
    EnvBinding, McpServer, ProviderError, RunAttachment, RunId, RunServiceCompatibility,
    RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind, async_trait,
};
use thread_store::ThreadStore;
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// How a [`RotatingProvider`] describes itself.
#[derive(Debug, Clone)]
pub(crate) struct ProviderSpec {
    /// `Some((id, fingerprint))` opts in; `None` keeps exact fingerprinting.
    pub(crate) compat: Option<(String, String)>,
    /// The service id and MCP key.
    pub(crate) service: String,
    /// First port this host allocates; each attach takes the next one.
    pub(crate) base_port: u16,
    /// Prefix of every token this host mints (a canary in secret-hygiene tests).
    pub(crate) token_prefix: String,
}

impl ProviderSpec {
    pub(crate) fn semantic(generation: u16) -> Self {
        Self {
            compat: Some((
                "com.example.agent-ui".into(),
                semantic_fingerprint("1", "tenant-a"),
            )),
            service: "agent-ui".into(),
            base_port: 4000 + generation * 100,
            token_prefix: format!("tok-gen{generation}-"),
        }
    }

    pub(crate) fn exact(generation: u16) -> Self {
        Self {
            compat: None,
            ..Self::semantic(generation)
        }
    }

    pub(crate) fn with_fingerprint(mut self, fingerprint: String) -> Self {
        if let Some((_, fp)) = &mut self.compat {
            *fp = fingerprint;
        }
        self
    }
}

/// A provider's semantic fingerprint for a tool revision and an auth scope.
pub(crate) fn semantic_fingerprint(tool_revision: &str, scope: &str) -> String {
    SemanticFingerprint::new()
        .service_role("agent-ui")
        .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
        .tool(
            "ask_user",
            &serde_json::json!({"type": "object"}),
            tool_revision,
        )
        .authorization("bearer", scope)
        .finish()
}

/// Allocates a new port, bearer env-var name and token on every attach, like a real loopback
/// MCP provider after a restart; records attach and detach calls.
#[derive(Debug)]
pub(crate) struct RotatingProvider {
    pub(crate) spec: Mutex<ProviderSpec>,
    next: AtomicU32,
    pub(crate) attached: AtomicUsize,
    pub(crate) detached: AtomicUsize,
    pub(crate) live: Mutex<Vec<RunId>>,
    pub(crate) attach_delay: Mutex<Option<Duration>>,
}

/// What the provider handed out for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allocation {
    pub(crate) url: String,
    pub(crate) env_name: String,
    pub(crate) token: String,
}

impl RotatingProvider {
    pub(crate) fn new(spec: ProviderSpec) -> Arc<Self> {
        Arc::new(Self {
            spec: Mutex::new(spec),
            next: AtomicU32::new(0),
            attached: AtomicUsize::new(0),
            detached: AtomicUsize::new(0),
            live: Mutex::new(Vec::new()),
            attach_delay: Mutex::new(None),
        })
    }

    /// The allocation the `n`-th attach (0-based) of this provider hands out.
    pub(crate) fn allocation(&self, n: u32) -> Allocation {
        let spec = self.spec.lock().unwrap().clone();
        let port = u32::from(spec.base_port) + n;
        Allocation {
            url: format!("http://127.0.0.1:{port}/mcp"),
            env_name: format!(
                "{}_TOKEN_{port}",
                spec.service.to_uppercase().replace('-', "_")
            ),
            token: format!("{}{port}-secret", spec.token_prefix),
        }
    }

    pub(crate) fn live_runs(&self) -> usize {
        self.live.lock().unwrap().len()
    }
}

#[async_trait]
impl RunServiceProvider for RotatingProvider {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, ProviderError> {
        let delay = *self.attach_delay.lock().unwrap();
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let a = self.allocation(n);
        let spec = self.spec.lock().unwrap().clone();
        let service = ServiceRef::new(spec.service.clone(), "Agent UI")
            .with_url(&a.url)
            .with_reuse_key(format!("run/{run}"))
            .with_mcp(
                McpServer::streamable_http(spec.service.clone(), &a.url)
                    .required(true)
                    .with_bearer_token_env(&a.env_name),
            )
            .with_secret_env(EnvBinding::new(a.env_name.clone(), a.token.clone()));
        let mut attachment = RunAttachment::new([service]);
        if let Some((id, fp)) = spec.compat {
            attachment = attachment.with_resume_compatibility(RunServiceCompatibility::new(id, fp));
        }
        self.attached.fetch_add(1, Ordering::SeqCst);
        self.live.lock().unwrap().push(run.clone());
        Ok(attachment)
    }

    async fn detach_run(&self, run: &RunId) -> Result<(), ProviderError> {
        self.detached.fetch_add(1, Ordering::SeqCst);
        self.live.lock().unwrap().retain(|r| r != run);
        Ok(())
    }
}

/// A SQLite store file in a temporary directory, opened afresh by each "host".
pub(crate) struct SqliteFile {
    pub(crate) dir: tempfile::TempDir,
}

impl SqliteFile {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("threads.db")
    }

    /// Opens a new connection to the file, as a restarted host would.
    pub(crate) async fn open(&self) -> Arc<dyn ThreadStore> {
        Arc::new(
            SqliteStore::open(SqliteConfig::new(self.path()))
                .await
                .unwrap(),
        )
    }
}

/// One "host": an agent over `store`, with a reference driver on the shared backend.
pub(crate) fn host(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    providers: &[Arc<RotatingProvider>],
) -> Agent {
    host_with(store, backend, providers, |b| b)
}

pub(crate) fn host_with(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    providers: &[Arc<RotatingProvider>],
    configure: impl FnOnce(agent::AgentBuilder) -> agent::AgentBuilder,
) -> Agent {
    let driver = Arc::new(ReferenceDriver::with_backend(backend.clone()));
    let mut builder = Agent::builder(driver)
        .store(store)
        .model("model-1")
        .workspace("/work/project");
    for p in providers {
        builder = builder.provider(p.clone());
    }
    configure(builder).build().unwrap()
}
