//! The trait a run-service provider implements.

use std::fmt;

use crate::RunAttachment;

/// The id of one run, unique per invocation. Providers may use it for ephemeral resources;
/// it must never reach a resume identity.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// Wraps an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A run-service provider's failure to attach or detach. Named `ProviderError` before issue 40.
///
/// Its message is provider text: the agent passes it through a secret redactor before showing
/// it, but providers should still never put a credential in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run-service provider failed: {message}")]
pub struct RunServiceError {
    message: String,
}

impl RunServiceError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The name of [`RunServiceError`] before issue 40.
#[deprecated(note = "use `RunServiceError`: \"provider\" alone also means the model provider")]
pub type ProviderError = RunServiceError;

/// Host-trusted code that attaches services to every run of an agent.
///
/// `attach_run` (for a Thread run, [`attach_thread_run`](Self::attach_thread_run), which
/// defaults to it) is called once per run before the driver launches, in provider order;
/// `detach_run` is called once for every successful attach, in reverse order, when the run
/// ends (also when a later provider or validation fails); `close` is called when the agent
/// closes.
///
/// ```
/// use run_service::{
///     async_trait, EnvBinding, McpServer, RunServiceError, RunAttachment, RunId,
///     RunServiceCompatibility, RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind,
/// };
///
/// struct AgentUi;
///
/// #[async_trait]
/// impl RunServiceProvider for AgentUi {
///     async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
///         let (url, token) = ("http://127.0.0.1:4101/mcp", "fresh-token"); // allocated per run
///         let service = ServiceRef::new("agent-ui", "Agent UI")
///             .with_url(url)
///             .with_reuse_key(format!("run/{run}"))
///             .with_mcp(McpServer::streamable_http("agent-ui", url).with_bearer_token_env("AGENT_UI_TOKEN"))
///             .with_secret_env(EnvBinding::new("AGENT_UI_TOKEN", token));
///         let semantic = SemanticFingerprint::new()
///             .service_role("agent-ui")
///             .mcp_server("agent-ui", TransportKind::StreamableHttp, false)
///             .authorization("bearer", "ui:ask")
///             .protocol_revision("2025-06-18")
///             .finish();
///         Ok(RunAttachment::new([service])
///             .with_resume_compatibility(RunServiceCompatibility::new("com.example.agent-ui", semantic)))
///     }
///
///     async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait RunServiceProvider: Send + Sync {
    /// Allocates (or reuses) this provider's services for one run.
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError>;

    /// Allocates (or reuses) this provider's services for one run of the Thread `thread`.
    ///
    /// The agent calls this, not [`attach_run`](Self::attach_run), for every Thread run. A
    /// Thread has at most one run at a time, so a provider may key something stable on the
    /// Thread (a URL path, a slot) and hand the same concrete endpoint to every turn: a
    /// driver that keeps its runtime process alive by exact signature then keeps it across
    /// turns, instead of replacing it because the endpoint changed. The thread key is
    /// host-supplied; a provider that puts anything derived from it into an endpoint should
    /// use a keyed digest, not the key. Two runs of one Thread may still overlap briefly (the
    /// second attaches before it finds the Thread's lease taken), so a provider must not let
    /// the second take over the first's calls.
    ///
    /// The default calls [`attach_run`](Self::attach_run); [`detach_run`](Self::detach_run)
    /// ends either kind of attachment.
    async fn attach_thread_run(
        &self,
        run: &RunId,
        thread: &str,
    ) -> Result<RunAttachment, RunServiceError> {
        let _ = thread;
        self.attach_run(run).await
    }

    /// Releases what [`attach_run`](Self::attach_run) allocated for this run.
    async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError>;

    /// Releases everything the provider keeps across runs (a listening server, a pool),
    /// when the agent that owns it closes. Called once per agent close, after its runs were
    /// torn down, within the agent's teardown budget. The default does nothing.
    async fn close(&self) -> Result<(), RunServiceError> {
        Ok(())
    }
}
