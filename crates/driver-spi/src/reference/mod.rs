//! An in-process, deterministic reference driver that implements every optional capability,
//! for tests and demos.
//!
//! - Sessions live in a simulated provider backend ([`ReferenceBackend`]) that several
//!   driver instances can share, so a test can "restart the host" and resume on a second
//!   driver. The backend keeps them in a [`SessionTable`]: in memory by default
//!   ([`MemorySessions`]), or on disk (the `reference-runtime` crate), so another process
//!   resumes them. A reply shows the session's turn number and its earlier prompts.
//! - Every [`Request`] is recorded ([`ReferenceBackend::requests`]); secret values are
//!   readable only through [`RecordedRequest::expose_secret_env`].
//! - With persistent processes (the default) each session has a simulated runtime process,
//!   reused while its [`ProcessSignature`] matches and replaced before the prompt when it does
//!   not ([`ReferenceBackend::process_stats`], [`ReferenceBackend::deliveries`]).
//! - Behaviours are scripted per run ([`Behavior`]): reply, call a tool, use a tool governed by
//!   the request's [`PermissionPolicy`](crate::PermissionPolicy) (asking the host through
//!   [`Approvals`](crate::Approvals) where the policy says so), fail, stall, reject a resume,
//!   or emit a given event sequence.
//! - [`Fault`]s make it break the contract on purpose, so tests can prove that a check
//!   (the conformance kit, the agent core) catches it.
//!
//! The guard follows the rule of [`SessionCodec`]: it is built from the profile's
//! session-compatibility fingerprint, so resuming with a different exact fingerprint is
//! accepted and resuming with a different session-compatibility fingerprint is rejected.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use compat_fingerprint::{Fingerprint, Kind};
//! use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
//! use driver_spi::{CollectingSink, Driver, ProfilePayload, Request, SessionContext};
//! use run_service::RunId;
//!
//! const K: Kind = Kind::new("example 2026-11-30 profile v1");
//! let profile = ProfilePayload::new(Fingerprint::of(K, |e| e.str("a")), Fingerprint::of(K, |e| e.str("s")));
//!
//! let backend = ReferenceBackend::new();
//! let host1 = ReferenceDriver::with_backend(backend.clone());
//! let sink = Arc::new(CollectingSink::new());
//! let first = host1.run(Request::new(RunId::new("r1"), "hello", profile), sink.clone()).await.unwrap();
//! let state = first.persistable_checkpoint().unwrap().clone();
//!
//! // Another driver on the same backend (a restarted host) resumes the session.
//! let host2 = ReferenceDriver::with_backend(backend.clone());
//! let resumed = Request::new(RunId::new("r2"), "again", profile)
//!     .with_session(SessionContext::continue_only(state.clone()));
//! let second = host2.run(resumed, sink).await.unwrap();
//! assert_eq!(second.persistable_checkpoint().unwrap().resume_id, state.resume_id);
//! assert_eq!(backend.session_turns(&state.resume_id).unwrap(), Some(2));
//! # });
//! ```

mod backend;
mod behavior;
mod codec;
mod config;
mod sessions;
mod steer;

use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use secrecy::{ExposeSecret, SecretString};

pub use backend::{Delivery, ProcessStats, RecordedRequest, ReferenceBackend};
pub use behavior::Behavior;
use behavior::prompt_tool;
pub use codec::ReferenceCodec;
pub use config::ReferenceConfig;
pub use sessions::{
    HISTORY_ENTRY_LEN, HISTORY_LEN, MemorySessions, ReferenceSession, SessionTable,
    SessionTableError,
};

use crate::{
    ApprovalDecision, ApprovalQuery, Capabilities, Checkpoint, ConfigError,
    ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver, DriverError, DriverEvent,
    EventSink, ExitStatus, FailureKind, Permission, ProcessLifecycle, ProcessSignature, Request,
    Response, ResumeRejectReason, RunFailure, SessionCodec, SessionGuard, SessionMode,
    SessionState, Usage,
};

/// A deliberate contract violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// Keep using a live process although its signature no longer matches (a stale endpoint
    /// or credential).
    ReuseStaleProcess,
    /// Build the session guard from the profile's exact fingerprint instead of its
    /// session-compatibility fingerprint.
    GuardFromExactFingerprint,
}

/// The in-process reference driver. See the [module docs](self).
#[derive(Debug)]
pub struct ReferenceDriver {
    id: u64,
    backend: ReferenceBackend,
    config: ReferenceConfig,
    persistent: bool,
    faults: Vec<Fault>,
    codec: ReferenceCodec,
    namespace: Option<String>,
}

impl Default for ReferenceDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl ReferenceDriver {
    /// The driver type in its [`Descriptor`].
    pub const TYPE: &'static str = "reference";

    /// A driver on a fresh backend of its own, with persistent processes.
    pub fn new() -> Self {
        Self::with_backend(ReferenceBackend::new())
    }

    /// A driver on a shared backend, with persistent processes.
    pub fn with_backend(backend: ReferenceBackend) -> Self {
        Self {
            id: backend.register_driver(),
            backend,
            config: ReferenceConfig::default(),
            persistent: true,
            faults: Vec::new(),
            codec: ReferenceCodec,
            namespace: None,
        }
    }

    /// Sets the construction config.
    pub fn with_config(mut self, config: ReferenceConfig) -> Self {
        self.config = config;
        self
    }

    /// Turns persistent processes on or off (on by default). Off, the descriptor declares
    /// none and [`Driver::process_lifecycle`] returns `None`.
    pub fn with_persistent_processes(mut self, persistent: bool) -> Self {
        self.persistent = persistent;
        self
    }

    /// Binds the driver to a credential namespace, which
    /// [`Driver::credential_namespace`] then reports (none by default). The driver does not
    /// check the name: the agent that runs it does. Sessions stay where the backend's
    /// [`SessionTable`] keeps them; `reference-runtime` binds a driver to the namespace its
    /// session files live in.
    pub fn with_credential_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Makes the driver break the contract in this way.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// The backend handle (clone it to share the backend).
    pub fn backend(&self) -> &ReferenceBackend {
        &self.backend
    }

    /// This instance's id within its backend, as recorded in
    /// [`RecordedRequest::driver_instance`].
    pub fn instance_id(&self) -> u64 {
        self.id
    }

    fn has(&self, fault: Fault) -> bool {
        self.faults.contains(&fault)
    }

    fn guard(&self, request: &Request) -> SessionGuard {
        if self.has(Fault::GuardFromExactFingerprint) {
            SessionGuard::new(request.profile.exact, request.workspace.as_deref())
        } else {
            SessionGuard::for_request(request)
        }
    }

    /// Finds or creates the session this request runs in and records the turn in it: `None`
    /// for stateless runs. Rejections happen here, before any event.
    fn resolve_session(&self, request: &Request) -> Result<Option<Turn>, DriverError> {
        let session = &request.session;
        let stored = match (session.mode, &session.state) {
            (SessionMode::Stateless, _) => return Ok(None),
            (SessionMode::ContinueOrStart, None) => {
                let mut fresh = ReferenceSession::new(0);
                fresh.push_turn(&request.prompt);
                let id = self
                    .backend
                    .with_state(|state| state.sessions.create(&fresh))
                    .map_err(table_failed)?;
                return Ok(Some(Turn {
                    id,
                    number: 1,
                    earlier: Vec::new(),
                }));
            }
            (SessionMode::ContinueOnly | SessionMode::Fork, None) => {
                return Err(ResumeRejectReason::MissingState.into());
            }
            (_, Some(stored)) => stored,
        };
        if self.codec.to_params(Some(stored)).is_err() {
            return Err(ResumeRejectReason::InvalidState.into());
        }
        let fork = session.mode == SessionMode::Fork;
        let guard = self.guard(request);
        self.backend.with_state(|state| {
            let mut record = state
                .sessions
                .get(&stored.resume_id)
                .map_err(table_failed)?
                .ok_or(ResumeRejectReason::UnknownSession)?;
            if record.expired {
                return Err(ResumeRejectReason::Expired.into());
            }
            guard.check(stored)?;
            let earlier = record.history.clone();
            record.push_turn(&request.prompt);
            let id = if fork {
                state.sessions.create(&record)
            } else {
                state
                    .sessions
                    .update(&stored.resume_id, &record)
                    .map(|()| stored.resume_id.clone())
            }
            .map_err(table_failed)?;
            Ok(Some(Turn {
                id,
                number: record.turns,
                earlier,
            }))
        })
    }

    fn effective_model<'a>(&'a self, request: &'a Request) -> Option<&'a str> {
        request.model.as_deref().or(self.config.model.as_deref())
    }

    /// The config a CLI driver would write for this request: command, flags, cwd, model, env
    /// (construction env and runtime secret env, values included), MCP servers, services,
    /// instructions and the exact profile fingerprint.
    fn materialize(&self, request: &Request) -> SecretString {
        let env: serde_json::Map<String, serde_json::Value> = self
            .config
            .env
            .iter()
            .chain(&request.runtime.secret_env)
            .map(|b| (b.name().to_owned(), b.value().expose_secret().into()))
            .collect();
        let config = serde_json::json!({
            "command": self.config.command,
            "args": self.config.flags,
            "cwd": request.workspace,
            "model": self.effective_model(request),
            "env": env,
            "mcp_servers": request.mcp,
            "services": request.runtime.services,
            "instructions": request.instructions,
            "profile": request.profile.exact,
        });
        SecretString::from(config.to_string())
    }

    fn signature(&self, request: &Request) -> ProcessSignature {
        ProcessSignature::builder()
            .command(self.config.command.clone(), self.config.flags.clone())
            .secret_env(&self.config.env)
            .request(request)
            .model(self.effective_model(request))
            .finish()
    }

    fn checkpoint(&self, request: &Request, resume_id: &str, turn: u64, clean: bool) -> Checkpoint {
        let mut state = SessionState::new(resume_id)
            .with_display_id(format!("reference session {resume_id}"))
            .with_data("reference.turns", turn.to_string());
        self.guard(request).write_to(&mut state);
        if clean {
            Checkpoint::valid(state)
        } else {
            Checkpoint::invalid(state)
        }
    }
}

/// How many earlier prompts a reply shows.
const SHOWN_HISTORY: usize = 3;

/// `reference turn <n>: <prompt>`, then ` [earlier: <p1> | <p2>]` with the session's latest
/// earlier prompts, so a resumed or forked conversation is visibly the same one.
fn reply_events(sink: &dyn EventSink, turn: u64, prompt: &str, earlier: &[String]) -> String {
    let head = format!("reference turn {turn}: ");
    sink.emit(DriverEvent::text(head.clone()));
    let mut output = head;
    if !prompt.is_empty() {
        sink.emit(DriverEvent::text(prompt));
        output.push_str(prompt);
    }
    if !earlier.is_empty() {
        let shown = &earlier[earlier.len().saturating_sub(SHOWN_HISTORY)..];
        let tail = format!(" [earlier: {}]", shown.join(" | "));
        sink.emit(DriverEvent::text(tail.clone()));
        output.push_str(&tail);
    }
    output
}

/// A session table failure, as a real CLI's unreadable session store: the runtime process
/// fails.
fn table_failed(error: SessionTableError) -> DriverError {
    DriverError::Failed(RunFailure::new(FailureKind::Process, error.to_string()))
}

/// The session turn a run is: its session id, its number and the prompts before it.
struct Turn {
    id: String,
    number: u64,
    earlier: Vec<String>,
}

fn word_count(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

#[async_trait::async_trait]
impl Driver for ReferenceDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(Self::TYPE, "Reference driver").with_capabilities(
            Capabilities::none()
                .with_resume(true)
                .with_fork(true)
                .with_mcp_transport(run_service::TransportKind::Stdio)
                .with_mcp_transport(run_service::TransportKind::StreamableHttp)
                .with_mcp_transport(run_service::TransportKind::Sse)
                .with_streaming(true)
                .with_persistent_processes(self.persistent)
                .with_approvals(true)
                .with_structured_output(true)
                .with_steer(true),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.config.command.trim().is_empty() {
            return Err(ConfigError::missing("command"));
        }
        if self.config.flags.iter().any(|f| f.is_empty()) {
            return Err(ConfigError::invalid(
                "flags",
                "must not contain an empty flag",
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.backend.record(self.id, &request);
        self.validate_config()?;
        self.descriptor().capabilities.check(&request)?;
        let behavior = match self.backend.next_behavior() {
            Behavior::Reply if self.config.prompt_tools => {
                prompt_tool(&request.prompt).unwrap_or(Behavior::Reply)
            }
            behavior => behavior,
        };
        if let Behavior::RejectResume(reason) = behavior {
            return Err(reason.into());
        }
        let session = self.resolve_session(&request)?;

        // Deliver the prompt exactly once, to a process configured from this request.
        let session_id = session.as_ref().map(|turn| turn.id.as_str());
        let process_session = if self.persistent { session_id } else { None };
        self.backend.acquire_process(
            self.id,
            process_session,
            self.signature(&request),
            self.materialize(&request),
            self.has(Fault::ReuseStaleProcess),
            &request.run_id,
        );

        let (turn, earlier) = session
            .as_ref()
            .map_or((1, &[][..]), |t| (t.number, &t.earlier[..]));
        let checkpoint = |clean: bool| {
            session
                .as_ref()
                .map(|t| self.checkpoint(&request, &t.id, t.number, clean))
        };
        let redactor = request.redactor();
        if !matches!(behavior, Behavior::Events(_)) {
            sink.emit(DriverEvent::RunStarted);
        }
        let output = match behavior {
            Behavior::Reply | Behavior::RejectResume(_) => {
                reply_events(&*sink, turn, &request.prompt, earlier)
            }
            Behavior::CallTool {
                name,
                arguments,
                result,
            } => {
                let call_id = format!("call-{turn}");
                sink.emit(DriverEvent::tool_call_started(&call_id, name));
                if !arguments.is_empty() {
                    sink.emit(DriverEvent::tool_call_arguments(&call_id, arguments));
                }
                sink.emit(DriverEvent::tool_call_result(&call_id, result, false));
                reply_events(&*sink, turn, &request.prompt, earlier)
            }
            Behavior::UseTool {
                action,
                tool,
                arguments,
            } => {
                let call_id = format!("call-{turn}");
                sink.emit(DriverEvent::tool_call_started(&call_id, tool.clone()));
                if !arguments.is_empty() {
                    sink.emit(DriverEvent::tool_call_arguments(
                        &call_id,
                        redactor.redact(&arguments),
                    ));
                }
                let (output, is_error) = match request.permissions.get(action) {
                    Permission::Allow => {
                        self.backend.perform(&tool);
                        (format!("{tool} done"), false)
                    }
                    Permission::Ask => {
                        let query = ApprovalQuery::new(action, tool.clone())
                            .with_call_id(call_id.clone())
                            .with_arguments(arguments)
                            .answerable();
                        match request.approvals.ask(&request, &*sink, query).await {
                            ApprovalDecision::Approve => {
                                self.backend.perform(&tool);
                                (format!("{tool} done"), false)
                            }
                            ApprovalDecision::Deny { reason } => {
                                (format!("denied by the host: {reason}"), true)
                            }
                            ApprovalDecision::Answer { output } => (output, false),
                        }
                    }
                    _ => (format!("{} is denied by the policy", action.as_str()), true),
                };
                sink.emit(DriverEvent::tool_call_result(
                    &call_id,
                    redactor.redact(&output),
                    is_error,
                ));
                reply_events(&*sink, turn, &request.prompt, earlier)
            }
            Behavior::Answer(text) => {
                if !text.is_empty() {
                    sink.emit(DriverEvent::text(redactor.redact(&text)));
                }
                redactor.redact(&text).into_owned()
            }
            Behavior::Stall => {
                let follow_ups = steer::stall(&self.backend, &request, &*sink, &redactor).await;
                let mut output = reply_events(&*sink, turn, &request.prompt, earlier);
                if let Some(tail) = steer::tail(&follow_ups) {
                    let tail = redactor.redact(&tail).into_owned();
                    sink.emit(DriverEvent::text(tail.clone()));
                    output.push_str(&tail);
                }
                output
            }
            Behavior::Fail(kind) => {
                sink.emit(DriverEvent::RunFailed { kind });
                let message = redactor.redact("the reference driver was told to fail");
                return Err(DriverError::Failed(RunFailure::new(kind, message)));
            }
            Behavior::FailedResponse(kind) => {
                sink.emit(DriverEvent::RunFailed { kind });
                let mut response = Response::new("")
                    .with_exit(ExitStatus::Code(1))
                    .with_failure(RunFailure::new(
                        kind,
                        redactor.redact("the reference driver was told to fail"),
                    ));
                response.checkpoint = checkpoint(false);
                return Ok(response);
            }
            Behavior::Events(events) => {
                let mut output = String::new();
                let mut last = None;
                for event in events {
                    if let DriverEvent::TextDelta { delta } = &event {
                        output.push_str(delta);
                    }
                    last = Some(event.clone());
                    sink.emit(event);
                }
                let mut response = Response::new(output);
                if let Some(DriverEvent::RunFailed { kind }) = last {
                    response = response
                        .with_exit(ExitStatus::Code(1))
                        .with_failure(RunFailure::new(kind, "scripted failure"));
                }
                let clean = last == Some(DriverEvent::RunFinished);
                response.checkpoint = checkpoint(clean);
                return Ok(response);
            }
        };
        sink.emit(DriverEvent::RunFinished);
        let mut response = Response::new(output.clone())
            .with_usage(Usage::new(word_count(&request.prompt), word_count(&output)));
        response.checkpoint = checkpoint(true);
        Ok(response)
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&self.codec)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }

    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        if self.persistent { Some(self) } else { None }
    }

    fn credential_namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

impl ConfigFingerprinter for ReferenceDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        ConfigFingerprintBuilder::new(Self::TYPE)
            .str("command", &self.config.command)
            .list("flags", &self.config.flags)
            .opt_str("model", self.config.model.as_deref())
            .env("env", &self.config.env)
            .bool("persistent", self.persistent)
            .finish()
    }
}

#[async_trait::async_trait]
impl ProcessLifecycle for ReferenceDriver {
    async fn close_processes(&self) -> Result<(), DriverError> {
        self.backend.close_processes_of(self.id);
        Ok(())
    }
}
