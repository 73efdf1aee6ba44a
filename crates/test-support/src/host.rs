//! Shared fixtures: a rotating run-service provider, agents over a SQLite file, and helpers.
#![allow(
    clippy::unwrap_used,
    reason = "test fixtures: a failed setup is a failed test"
)]

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::Agent;
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunId, RunServiceCompatibility, RunServiceError,
    RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind, async_trait,
};
use thread_store::ThreadStore;
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// How a [`RotatingProvider`] describes itself.
#[derive(Debug, Clone)]
pub struct ProviderSpec {
    /// `Some((id, fingerprint))` opts in; `None` keeps exact fingerprinting.
    pub compat: Option<(String, String)>,
    /// The service id and MCP key.
    pub service: String,
    /// First port this host allocates; each attach takes the next one.
    pub base_port: u16,
    /// Prefix of every token this host mints (a canary in secret-hygiene tests).
    pub token_prefix: String,
}

impl ProviderSpec {
    /// An opted-in provider of generation `generation` (ports and token prefix per generation).
    pub fn semantic(generation: u16) -> Self {
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

    /// The same provider, opted out: its attachment is fingerprinted exactly.
    pub fn exact(generation: u16) -> Self {
        Self {
            compat: None,
            ..Self::semantic(generation)
        }
    }

    /// Replaces the semantic fingerprint (a semantic change).
    pub fn with_fingerprint(mut self, fingerprint: String) -> Self {
        if let Some((_, fp)) = &mut self.compat {
            *fp = fingerprint;
        }
        self
    }
}

/// A provider's semantic fingerprint for a tool revision and an auth scope.
pub fn semantic_fingerprint(tool_revision: &str, scope: &str) -> String {
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
pub struct RotatingProvider {
    /// What the provider describes itself as; tests change it between hosts.
    pub spec: Mutex<ProviderSpec>,
    next: AtomicU32,
    /// How many attaches succeeded.
    pub attached: AtomicUsize,
    /// How many detaches ran.
    pub detached: AtomicUsize,
    /// The runs attached and not yet detached.
    pub live: Mutex<Vec<RunId>>,
    /// A delay every attach waits first, to widen race windows.
    pub attach_delay: Mutex<Option<Duration>>,
}

/// What the provider handed out for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The concrete MCP URL.
    pub url: String,
    /// The bearer env-var name.
    pub env_name: String,
    /// The bearer token (a canary: it starts with the spec's token prefix).
    pub token: String,
}

impl RotatingProvider {
    /// A provider with no attach yet.
    pub fn new(spec: ProviderSpec) -> Arc<Self> {
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
    pub fn allocation(&self, n: u32) -> Allocation {
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

    /// How many runs are attached now.
    pub fn live_runs(&self) -> usize {
        self.live.lock().unwrap().len()
    }
}

#[async_trait]
impl RunServiceProvider for RotatingProvider {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
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

    async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError> {
        self.detached.fetch_add(1, Ordering::SeqCst);
        self.live.lock().unwrap().retain(|r| r != run);
        Ok(())
    }
}

/// A SQLite store file in a temporary directory, opened afresh by each "host".
#[derive(Debug)]
pub struct SqliteFile {
    /// The temporary directory holding the file.
    pub dir: tempfile::TempDir,
}

impl Default for SqliteFile {
    fn default() -> Self {
        Self::new()
    }
}

impl SqliteFile {
    /// A new, empty temporary directory.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The store file's path.
    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("threads.db")
    }

    /// Opens a new connection to the file, as a restarted host would.
    pub async fn open(&self) -> Arc<dyn ThreadStore> {
        Arc::new(
            SqliteStore::open(SqliteConfig::new(self.path()))
                .await
                .unwrap(),
        )
    }
}

/// One "host": an agent over `store`, with a reference driver on the shared backend.
pub fn host(
    store: Arc<dyn ThreadStore>,
    backend: &ReferenceBackend,
    providers: &[Arc<RotatingProvider>],
) -> Agent {
    host_with(store, backend, providers, |b| b)
}

/// [`host`], with the builder adjusted by `configure` before it is built.
pub fn host_with(
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
        builder = builder.run_service(p.clone());
    }
    configure(builder).build().unwrap()
}

/// A reference driver whose descriptor is reshaped (a capability removed, an endpoint variable
/// added), for tests of how the core treats what a driver declares. Everything else is the
/// reference driver's.
#[derive(Debug)]
pub struct Reshaped {
    driver: ReferenceDriver,
    reshape: fn(driver_spi::Descriptor) -> driver_spi::Descriptor,
}

impl Reshaped {
    /// A reference driver on `backend` whose descriptor passes through `reshape`.
    pub fn new(
        backend: &ReferenceBackend,
        reshape: fn(driver_spi::Descriptor) -> driver_spi::Descriptor,
    ) -> Arc<Self> {
        Arc::new(Self {
            driver: ReferenceDriver::with_backend(backend.clone()),
            reshape,
        })
    }
}

#[driver_spi::async_trait]
impl driver_spi::Driver for Reshaped {
    fn descriptor(&self) -> driver_spi::Descriptor {
        (self.reshape)(self.driver.descriptor())
    }

    fn validate_config(&self) -> Result<(), driver_spi::ConfigError> {
        self.driver.validate_config()
    }

    async fn run(
        &self,
        request: driver_spi::Request,
        sink: Arc<dyn driver_spi::EventSink>,
    ) -> Result<driver_spi::Response, driver_spi::DriverError> {
        self.driver.run(request, sink).await
    }

    fn session_codec(&self) -> Option<&dyn driver_spi::SessionCodec> {
        self.driver.session_codec()
    }

    fn config_fingerprinter(&self) -> Option<&dyn driver_spi::ConfigFingerprinter> {
        self.driver.config_fingerprinter()
    }

    fn credential_namespace(&self) -> Option<&str> {
        self.driver.credential_namespace()
    }
}
