//! [`HostedToolsProvider`]: an ordinary run-service provider that attaches the tool server to
//! every run.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use run_service::{
    EnvBinding, Lifecycle, McpServer, RunAttachment, RunEvents, RunId, RunServiceCompatibility,
    RunServiceError, RunServiceEvent, RunServiceProvider, ServiceRef, async_trait,
};
use tokio::sync::{Mutex, mpsc};

use crate::credential::{Credential, expose, random_hex};
use crate::server::{MCP_PATH, Running, SessionMode, Shared};
use crate::{COMPATIBILITY_ID, SERVICE_ID, ToolSet};

/// Serves a [`ToolSet`] to every run of one agent over a loopback MCP Streamable HTTP
/// endpoint.
///
/// - **Start**: the server starts on the first attach (of either kind)
///   (listening on `127.0.0.1` at a port the OS allocates), with a bearer token and an
///   env-var name, both random and minted once for this provider (so, once per agent).
/// - **Attach**: each run gets one [`ServiceRef`] (id [`SERVICE_ID`]) with the run's URL,
///   the port, an MCP Streamable HTTP declaration naming the token's env var, and the token as
///   a secret env binding; the attachment carries the run's tool-call events and a
///   [`RunServiceCompatibility`] of [`COMPATIBILITY_ID`] and the catalog fingerprint.
/// - **Attribution**: every attached run holds one slot, named by its URL path
///   `/mcp/<slot>`. A Thread run ([`attach_thread_run`](RunServiceProvider::attach_thread_run))
///   takes its Thread's slot (32 hex digits, a digest of the thread key under a random key of
///   this server), the same on every turn; a bare run, or a second run of a Thread whose slot
///   is still held, takes a fresh random slot (16 hex digits). A call is attributed to the
///   run holding the slot its URL names, while that run is attached; concurrent runs
///   therefore never see each other's calls. Nothing is served outside an attached run: a
///   free slot and the bare `/mcp` path answer 404, and every handler learns the run and the
///   Thread it serves ([`ToolCall::run`](crate::ToolCall::run),
///   [`ToolCall::thread`](crate::ToolCall::thread)).
/// - **Close**: [`close`](RunServiceProvider::close) stops the server and releases the port;
///   later attaches fail.
///
/// Because a Thread's slot is stable, the concrete endpoint (URL, token, env-var name) is the
/// same on every turn of a Thread within one agent: a driver with persistent provider
/// processes keeps the process across turns (its exact signature is unchanged). After a host
/// restart everything is new, and the Thread still resumes, since only the semantic tuple
/// enters the Thread fingerprint.
pub struct HostedToolsProvider {
    tools: ToolSet,
    sessions: SessionMode,
    state: Mutex<State>,
}

enum State {
    Idle,
    Serving {
        running: Running,
        shared: Arc<Shared>,
    },
    Closed,
}

impl HostedToolsProvider {
    /// A provider for this catalog. No I/O happens until the first attach.
    pub fn new(tools: ToolSet) -> Self {
        Self {
            tools,
            sessions: SessionMode::default(),
            state: Mutex::new(State::Idle),
        }
    }

    /// How the endpoint keeps MCP sessions; [`SessionMode::Stateless`] by default. Takes
    /// effect when the server starts (the first attach).
    pub fn with_session_mode(mut self, sessions: SessionMode) -> Self {
        self.sessions = sessions;
        self
    }

    /// The catalog.
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// The compatibility tuple every attachment carries.
    pub fn resume_compatibility(&self) -> RunServiceCompatibility {
        RunServiceCompatibility::new(COMPATIBILITY_ID, self.tools.fingerprint())
    }

    async fn attach(
        &self,
        run: &RunId,
        thread: Option<&str>,
    ) -> Result<RunAttachment, RunServiceError> {
        let mut state = self.state.lock().await;
        if matches!(*state, State::Closed) {
            return Err(RunServiceError::new("the tool server is closed"));
        }
        if matches!(*state, State::Idle) {
            let credential = Credential::mint()
                .map_err(|e| RunServiceError::new(format!("cannot mint a tool token: {e}")))?;
            let shared = Arc::new(Shared::new(self.tools.clone(), credential));
            let running = Running::start(Arc::clone(&shared), self.sessions)
                .await
                .map_err(|e| {
                    RunServiceError::new(format!("cannot start the tool server: {}", e.kind()))
                })?;
            *state = State::Serving { running, shared };
        }
        let State::Serving { running, shared } = &*state else {
            unreachable!("started above")
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // A Thread keeps one slot across its runs; a bare run, or a second run of a Thread
        // whose slot is still held (it will lose the lease race), gets a fresh random one.
        let thread_slot = thread.map(|thread| shared.credential.thread_slot(thread));
        let slot = match thread_slot {
            Some(slot)
                if shared.open_slot(
                    slot.clone(),
                    run.clone(),
                    thread.map(str::to_owned),
                    tx.clone(),
                ) =>
            {
                slot
            }
            _ => loop {
                let slot = random_hex(8).map_err(|e| {
                    RunServiceError::new(format!("cannot allocate a run slot: {e}"))
                })?;
                if shared.open_slot(
                    slot.clone(),
                    run.clone(),
                    thread.map(str::to_owned),
                    tx.clone(),
                ) {
                    break slot;
                }
            },
        };

        let port = running.port;
        let url = format!("http://127.0.0.1:{port}{MCP_PATH}/{slot}");
        let env_var = shared.credential.env_var().to_owned();
        let service = ServiceRef::new(SERVICE_ID, "Agent tools")
            .with_url(&url)
            .with_port(port)
            .with_lifecycle(Lifecycle::Shared)
            .with_mcp(
                McpServer::streamable_http(SERVICE_ID, &url)
                    .required(true)
                    .with_bearer_token_env(&env_var),
            )
            .with_secret_env(EnvBinding::new(
                env_var,
                expose(shared.credential.token()).to_owned(),
            ));
        Ok(RunAttachment::new([service])
            .with_events(RunEvents::new(EventStream(rx)))
            .with_resume_compatibility(self.resume_compatibility()))
    }

    /// The port the server listens on, while it runs.
    pub async fn port(&self) -> Option<u16> {
        match &*self.state.lock().await {
            State::Serving { running, .. } => Some(running.port),
            State::Idle | State::Closed => None,
        }
    }
}

impl std::fmt::Debug for HostedToolsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedToolsProvider")
            .field("tools", &self.tools.len())
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// The run's tool-call events, ended when the run detaches.
struct EventStream(mpsc::UnboundedReceiver<RunServiceEvent>);

impl futures_core::Stream for EventStream {
    type Item = RunServiceEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

#[async_trait]
impl RunServiceProvider for HostedToolsProvider {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
        self.attach(run, None).await
    }

    async fn attach_thread_run(
        &self,
        run: &RunId,
        thread: &str,
    ) -> Result<RunAttachment, RunServiceError> {
        self.attach(run, Some(thread)).await
    }

    async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError> {
        if let State::Serving { shared, .. } = &*self.state.lock().await {
            shared.close_run(run);
        }
        Ok(())
    }

    async fn close(&self) -> Result<(), RunServiceError> {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::Closed);
        if let State::Serving { running, shared } = previous {
            shared.close_all();
            running.stop().await;
        }
        Ok(())
    }
}
