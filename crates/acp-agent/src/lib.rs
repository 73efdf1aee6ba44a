//! The SDK as an Agent Client Protocol (ACP) agent: an editor (Zed, a JetBrains IDE, a terminal
//! client) drives durable [`agent::Thread`]s on any runtime of the registry over a byte stream
//! pair, usually the agent process's stdin and stdout ([`AcpAgent::serve`]).
//!
//! Each ACP session is one Thread. The caller supplies an [`AgentFactory`] that builds the
//! [`agent::Agent`] of a session (runtime, store, namespace, policy) for the session's working
//! directory and the run-service providers made from the editor's MCP servers, and a
//! [`SessionStore`] where the session map lives.
//!
//! # Invariants
//! - `session/new` writes the session (its id, Thread key, working directory and namespace)
//!   to the [`SessionStore`] **before** it answers: an id the editor holds always names a
//!   stored session. A session never prompted resumes as an empty conversation.
//! - Once a turn of a session succeeded, every later prompt resumes its Thread with
//!   resume-only semantics: an incompatible configuration, a missing checkpoint or a lost
//!   Thread is an error, never a silent new conversation. `session/resume` checks the stored
//!   Thread with [`agent::Thread::explain`] and refuses an incompatible one with an error that
//!   names the drifted components (component names, never values).
//! - Every approval of a run becomes one `session/request_permission` request to the editor;
//!   the ticket is answered exactly once (the first of the editor's answer, the timeout, a
//!   `session/cancel` or the end of the connection, each of which but the first denies).
//! - Malformed, unknown and out-of-order messages get JSON-RPC errors (answered by the
//!   [`driver_process::peer::RpcPeer`] server or here) and the agent lives on. Nothing but
//!   protocol messages is written to the output; logs go through `tracing` (stderr, as the
//!   host sets it up).
//! - The editor's MCP servers (HTTP, SSE, stdio) reach each run as run-service attachments:
//!   a bearer token, every other HTTP header (a secret header of run-service) and every stdio
//!   `env` value as secret bindings, never in a record, error, event or log; a header given
//!   twice is refused. By default a server's identity is exact (a new port, token, header or
//!   env value makes the stored Thread incompatible: fail closed); the servers the host names
//!   in [`AcpAgent::semantic_mcp`] get a semantic identity (name, transport, bearer or not,
//!   stdio command and args, header names), so an editor restart that moves them to a new
//!   port with a new token or header value resumes.
//!
//! # Non-goals
//! - No `session/load`: the conversation lives in the runtime's session, not here, so there
//!   is no history to replay (`loadSession` is `false`).
//! - No fork, no image, audio or embedded-resource prompts (the text of text blocks and the
//!   URI of resource links reach the runtime).
//! - No authentication methods: the runtime's credentials are the host's business.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod mcp;
mod sessions;
mod turn;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, Approvals, ThreadError};
use agent_client_protocol_schema::v1 as acp;
use driver_process::peer::{Incoming, JsonRpc, RpcPeer};
use run_service::RunServiceProvider;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use turn::Running;

pub use sessions::{SessionRecord, SessionStore};

/// The longest message line read (1 MiB).
const MAX_LINE: usize = 1 << 20;

/// The ACP protocol version this agent speaks.
const PROTOCOL_VERSION: u16 = 1;

/// The methods served; any other request is answered "Method not found".
const METHODS: [&str; 6] = [
    "initialize",
    "session/new",
    "session/resume",
    "session/list",
    "session/prompt",
    "session/cancel",
];

/// JSON-RPC error codes.
mod code {
    /// Invalid Request (also: a message out of order, such as a session method before
    /// `initialize`).
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    /// Invalid params.
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub(crate) const INTERNAL: i64 = -32603;
    /// ACP's "resource not found": an unknown session.
    pub(crate) const NOT_FOUND: i64 = -32002;
    /// The stored Thread may not continue under the current configuration.
    pub(crate) const INCOMPATIBLE: i64 = -32010;
    /// The session already has a prompt in flight.
    pub(crate) const BUSY: i64 = -32011;
}

/// What a session's agent is built for.
#[derive(Clone)]
#[non_exhaustive]
pub struct SessionSetup {
    /// The session's working directory: the agent's workspace.
    pub cwd: PathBuf,
    /// The run-service providers of the editor's MCP servers, to add to the agent.
    pub run_services: Vec<Arc<dyn RunServiceProvider>>,
}

impl std::fmt::Debug for SessionSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSetup")
            .field("cwd", &self.cwd)
            .field("run_services", &self.run_services.len())
            .finish()
    }
}

/// Builds the agent of a session. The same setup must give the same configuration (it is what
/// a stored Thread's compatibility is judged against).
#[run_service::async_trait]
pub trait AgentFactory: Send + Sync {
    /// The agent for `setup`, or a message for the editor (no secret).
    async fn build(&self, setup: SessionSetup) -> Result<Agent, String>;
}

/// The ACP agent: its factory, session store and choices.
#[derive(Clone)]
pub struct AcpAgent {
    factory: Arc<dyn AgentFactory>,
    sessions: SessionStore,
    semantic_mcp: BTreeSet<String>,
    approval_timeout: Duration,
}

impl std::fmt::Debug for AcpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgent")
            .field("sessions", &self.sessions)
            .field("semantic_mcp", &self.semantic_mcp)
            .field("approval_timeout", &self.approval_timeout)
            .finish_non_exhaustive()
    }
}

impl AcpAgent {
    /// An agent building each session's [`Agent`] with `factory`, keeping sessions in
    /// `sessions`.
    pub fn new(factory: Arc<dyn AgentFactory>, sessions: SessionStore) -> Self {
        Self {
            factory,
            sessions,
            semantic_mcp: BTreeSet::new(),
            approval_timeout: Approvals::DEFAULT_TIMEOUT,
        }
    }

    /// The editor's MCP servers with these names get a semantic identity (see the crate
    /// docs); every other one keeps the exact default.
    pub fn semantic_mcp(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.semantic_mcp = names.into_iter().collect();
        self
    }

    /// How long a permission request waits for the editor before it is denied.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Serves ACP on `input` (the editor's messages) and `output` (this agent's), until the
    /// input ends. Runs still in flight are cancelled then, and every session's agent closed.
    pub async fn serve(
        self,
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
    ) {
        let (peer, mut inbox) = RpcPeer::server(&JsonRpc, METHODS, input, output, MAX_LINE);
        let server = Arc::new(Server {
            config: self,
            peer,
            initialized: Mutex::new(false),
            live: Mutex::new(HashMap::new()),
        });
        let mut prompts = tokio::task::JoinSet::new();
        while let Some(message) = inbox.recv().await {
            match message {
                Incoming::Notification { method, params } => server.notification(&method, params),
                Incoming::Request { id, method, params } if method == "session/prompt" => {
                    let server = Arc::clone(&server);
                    prompts.spawn(async move { server.prompt(id, params).await });
                }
                Incoming::Request { id, method, params } => {
                    let answer = server.request(&method, params).await;
                    server.answer(id, answer).await;
                }
            }
            while prompts.try_join_next().is_some() {}
        }
        let agents: Vec<Agent> = server
            .lock_live()
            .drain()
            .map(|(_, live)| {
                live.cancel();
                live.agent
            })
            .collect();
        prompts.shutdown().await;
        for agent in agents {
            agent.close().await;
        }
    }
}

/// A JSON-RPC error to answer.
struct Error {
    code: i64,
    message: String,
}

impl Error {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// A session loaded in this process.
struct Live {
    record: SessionRecord,
    agent: Agent,
    /// The prompt in flight: its cancel signal and its open permission tickets.
    running: Option<Running>,
}

impl Live {
    fn cancel(&self) {
        if let Some(running) = &self.running {
            running.cancel();
        }
    }
}

struct Server {
    config: AcpAgent,
    peer: RpcPeer,
    initialized: Mutex<bool>,
    live: Mutex<HashMap<String, Live>>,
}

fn params<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, Error> {
    // The parser's message may quote the input: it is not echoed.
    serde_json::from_value(params)
        .map_err(|_| Error::new(code::INVALID_PARAMS, format!("invalid params for {method}")))
}

impl Server {
    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_initialized(&self) -> bool {
        *self.initialized.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn answer(&self, id: Value, answer: Result<Value, Error>) {
        let sent = match answer {
            Ok(result) => self.peer.respond(id, result).await,
            Err(error) => {
                self.peer
                    .respond_error(id, error.code, &error.message)
                    .await
            }
        };
        if sent.is_err() {
            tracing::warn!("acp-agent: cannot write an answer to the editor");
        }
    }

    fn notification(&self, method: &str, params: Value) {
        if method != "session/cancel" {
            return;
        }
        let Ok(cancel) = serde_json::from_value::<acp::CancelNotification>(params) else {
            tracing::warn!("acp-agent: a malformed session/cancel was ignored");
            return;
        };
        if let Some(live) = self.lock_live().get(cancel.session_id.0.as_ref()) {
            live.cancel();
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        if method == "initialize" {
            return self.initialize(params);
        }
        if !self.is_initialized() {
            return Err(Error::new(
                code::INVALID_REQUEST,
                format!("{method} before initialize"),
            ));
        }
        match method {
            "session/new" => self.new_session(params).await,
            "session/resume" => self.resume(params).await,
            "session/list" => self.list(params),
            _ => Err(Error::new(-32601, "Method not found")),
        }
    }

    fn initialize(&self, params: Value) -> Result<Value, Error> {
        let _request: acp::InitializeRequest = self::params("initialize", params)?;
        let mut initialized = self.initialized.lock().unwrap_or_else(|e| e.into_inner());
        if *initialized {
            return Err(Error::new(code::INVALID_REQUEST, "already initialized"));
        }
        *initialized = true;
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": false,
                "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
                "mcpCapabilities": {"http": true, "sse": true},
                "sessionCapabilities": {"resume": {}, "list": {}}
            },
            "agentInfo": {"name": "agent-sdk", "version": env!("CARGO_PKG_VERSION")},
            "authMethods": []
        }))
    }

    /// The agent of a session with the editor's `servers`.
    async fn build(&self, cwd: PathBuf, servers: &[acp::McpServer]) -> Result<Agent, Error> {
        if !cwd.is_absolute() {
            return Err(Error::new(
                code::INVALID_PARAMS,
                "cwd must be an absolute path",
            ));
        }
        let run_services = mcp::providers(servers, &self.config.semantic_mcp)
            .map_err(|e| Error::new(code::INVALID_PARAMS, e.0))?;
        self.config
            .factory
            .build(SessionSetup { cwd, run_services })
            .await
            .map_err(|e| Error::new(code::INTERNAL, e))
    }

    async fn new_session(&self, params: Value) -> Result<Value, Error> {
        let request: acp::NewSessionRequest = self::params("session/new", params)?;
        let agent = self
            .build(request.cwd.clone(), &request.mcp_servers)
            .await?;
        // Durable before the answer: the editor never holds an id that names nothing.
        let record = match self.config.sessions.create(request.cwd) {
            Ok(record) => record,
            Err(e) => {
                agent.close().await;
                tracing::error!("acp-agent: cannot write the session: {e}");
                return Err(Error::new(code::INTERNAL, "cannot store the session"));
            }
        };
        let id = record.session_id.clone();
        tracing::info!(session = %id, "acp-agent: new session");
        self.lock_live().insert(
            id.clone(),
            Live {
                record,
                agent,
                running: None,
            },
        );
        Ok(json!({"sessionId": id}))
    }

    async fn resume(&self, params: Value) -> Result<Value, Error> {
        let request: acp::ResumeSessionRequest = self::params("session/resume", params)?;
        let id = request.session_id.0.to_string();
        let record = self
            .config
            .sessions
            .load(&id)
            .map_err(|e| {
                tracing::error!("acp-agent: cannot read the session: {e}");
                Error::new(code::INTERNAL, "cannot read the session")
            })?
            .ok_or_else(|| Error::new(code::NOT_FOUND, format!("unknown session {id}")))?;
        if record.cwd != request.cwd {
            return Err(Error::new(
                code::INVALID_PARAMS,
                "cwd differs from the session's working directory",
            ));
        }
        if self
            .lock_live()
            .get(&id)
            .is_some_and(|live| live.running.is_some())
        {
            return Err(Error::new(code::BUSY, "the session has a prompt in flight"));
        }
        let agent = self.build(record.cwd.clone(), &request.mcp_servers).await?;
        if let Err(error) = check_resumable(&agent, &record).await {
            agent.close().await;
            return Err(error);
        }
        let old = self.lock_live().insert(
            id,
            Live {
                record,
                agent,
                running: None,
            },
        );
        if let Some(old) = old {
            old.agent.close().await;
        }
        Ok(json!({}))
    }

    fn list(&self, params: Value) -> Result<Value, Error> {
        let request: acp::ListSessionsRequest = self::params("session/list", params)?;
        let sessions = self
            .config
            .sessions
            .list(request.cwd.as_deref())
            .map_err(|e| {
                tracing::error!("acp-agent: cannot list the sessions: {e}");
                Error::new(code::INTERNAL, "cannot list the sessions")
            })?;
        let sessions: Vec<Value> = sessions
            .iter()
            .map(|s| {
                json!({
                    "sessionId": s.session_id,
                    "cwd": s.cwd,
                    "updatedAt": sessions::rfc3339(s.updated_ms),
                })
            })
            .collect();
        Ok(json!({"sessions": sessions}))
    }

    async fn prompt(self: Arc<Self>, id: Value, params: Value) {
        let answer = if self.is_initialized() {
            self.run_prompt(params).await
        } else {
            Err(Error::new(
                code::INVALID_REQUEST,
                "session/prompt before initialize",
            ))
        };
        self.answer(id, answer).await;
    }
}

/// Whether `record`'s Thread may continue on `agent`: a session never prompted whose Thread
/// does not exist is an empty conversation; otherwise the Thread must resume.
async fn check_resumable(agent: &Agent, record: &SessionRecord) -> Result<(), Error> {
    let thread = agent.thread(record.thread_key.clone());
    let stored = thread.checkpoint().await.map_err(thread_error)?;
    if !record.prompted && stored.is_none() {
        return Ok(());
    }
    thread
        .resume_only()
        .explain()
        .await
        .map(|_| ())
        .map_err(thread_error)
}

/// The editor's error for a Thread's: the drifted components by name for an incompatible one.
/// The core's messages carry no secret.
fn thread_error(error: ThreadError) -> Error {
    match &error {
        ThreadError::Incompatible {
            incompatibility, ..
        } => {
            let changes: Vec<String> = incompatibility
                .changes()
                .iter()
                .map(ToString::to_string)
                .collect();
            Error::new(
                code::INCOMPATIBLE,
                format!(
                    "the session's Thread cannot resume under this configuration; drifted: {}",
                    changes.join(", ")
                ),
            )
        }
        ThreadError::Busy { .. } => Error::new(code::BUSY, error.to_string()),
        ThreadError::NotFound { .. } | ThreadError::CheckpointMissing { .. } => {
            Error::new(code::NOT_FOUND, error.to_string())
        }
        _ => Error::new(code::INTERNAL, error.to_string()),
    }
}
