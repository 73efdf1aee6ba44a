//! The Agent Client Protocol as a [`ResidentProtocol`]: what the driver sends (built with the
//! protocol crate's types) and what the agent's answers and requests mean.

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AuthenticateRequest, CancelNotification, ClientCapabilities, ContentBlock,
    FileSystemCapabilities, ForkSessionRequest, Implementation, InitializeRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, RequestPermissionOutcome,
    RequestPermissionResponse, ResumeSessionRequest, SelectedPermissionOutcome, TextContent,
};
use driver_cli::{
    Call, MalformedEvent, Rejection, Replay, ResidentProtocol, SessionPlan, Turn, TurnNotes,
};
use driver_spi::{ApprovalDecision, ApprovalQuery, FailureKind, Request};
use serde::Serialize;
use serde_json::Value;

use crate::agent::AcpAgent;
use crate::permissions;

pub(crate) const INITIALIZE: &str = "initialize";
pub(crate) const AUTHENTICATE: &str = "authenticate";
pub(crate) const SESSION_NEW: &str = "session/new";
pub(crate) const SESSION_LOAD: &str = "session/load";
pub(crate) const SESSION_RESUME: &str = "session/resume";
pub(crate) const SESSION_FORK: &str = "session/fork";
pub(crate) const SESSION_PROMPT: &str = "session/prompt";
pub(crate) const SESSION_CANCEL: &str = "session/cancel";
pub(crate) const REQUEST_PERMISSION: &str = "session/request_permission";

/// JSON-RPC's "resource not found", which ACP agents use for an unknown session.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// How long a loading agent must be quiet after its answer before the replay counts as
/// over: Gemini answers `session/load` after the first replayed message and sends the rest
/// right after (within milliseconds); the protocol does not say the replay ends with the
/// answer. Paid once per cold load.
const LOAD_SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// The protocol, for one agent (its capabilities choose how a session is continued).
#[derive(Debug, Clone)]
pub(crate) struct AcpProtocol {
    pub(crate) agent: &'static AcpAgent,
    /// The agent's entry (its descriptor names the state directory).
    pub(crate) entry: &'static driver_cli::Runtime,
}

impl AcpProtocol {
    pub(crate) fn new(agent: &'static AcpAgent, entry: &'static driver_cli::Runtime) -> Self {
        Self { agent, entry }
    }
}

/// `value` as JSON: the protocol crate's types serialize infallibly to objects.
fn json(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The `initialize` request: protocol version 1, and a client that offers neither file
/// system nor terminal methods (the agent then uses its own tools, under its own
/// permission requests).
pub(crate) fn initialize() -> Call {
    let request = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new()
                    .read_text_file(false)
                    .write_text_file(false))
                .terminal(false),
        )
        .client_info(Implementation::new("agent-sdk", env!("CARGO_PKG_VERSION")));
    Call::request(INITIALIZE, json(request))
}

impl ResidentProtocol for AcpProtocol {
    fn handshake(&self) -> Vec<Call> {
        let mut calls = vec![initialize()];
        if let Some(method) = self.agent.auth_method {
            calls.push(Call::request(
                AUTHENTICATE,
                json(AuthenticateRequest::new(method.to_owned())),
            ));
        }
        calls
    }

    /// `session/new` for a new session; for a stored one, `session/resume` where the agent
    /// offers it (no replay), else `session/load` (whose replay the driver drops);
    /// `session/fork` for a fork. Each carries the workspace and the request's MCP servers,
    /// their secrets written only on the wire.
    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call> {
        let request = turn.request;
        let cwd = crate::mcp::cwd(turn);
        // Checked in `check_request`, before a launch.
        let servers = crate::mcp::servers(request).ok()?;
        let (method, params) = match turn.plan {
            SessionPlan::Resume(id) if loaded == Some(id) => return None,
            SessionPlan::Resume(id) if self.agent.capabilities.resume_session => (
                SESSION_RESUME,
                json(ResumeSessionRequest::new(id.to_owned(), cwd).mcp_servers(servers.declared())),
            ),
            SessionPlan::Resume(id) => (
                SESSION_LOAD,
                json(LoadSessionRequest::new(id.to_owned(), cwd).mcp_servers(servers.declared())),
            ),
            SessionPlan::Fork(parent) => (
                SESSION_FORK,
                json(
                    ForkSessionRequest::new(parent.to_owned(), cwd).mcp_servers(servers.declared()),
                ),
            ),
            SessionPlan::Start(_) | SessionPlan::Stateless => (
                SESSION_NEW,
                json(NewSessionRequest::new(cwd).mcp_servers(servers.declared())),
            ),
            _ => return None,
        };
        Some(servers.with_secrets(Call::request(method, params)))
    }

    /// Before a load, the agent's own wait (Gemini's: not in the minute of the session's
    /// last opening).
    fn wait_before_open(&self, turn: &Turn<'_>, method: &str) -> Option<std::time::Duration> {
        let wait = self.agent.load_wait?;
        let SessionPlan::Resume(id) = turn.plan else {
            return None;
        };
        if method != SESSION_LOAD {
            return None;
        }
        let state = turn.env.state_dir(&self.entry.descriptor).ok()?;
        wait(state, id, std::time::SystemTime::now())
    }

    /// A load's replay is read and dropped until the agent has been quiet for a moment after
    /// its answer; for an agent that "loads" unknown ids, an empty one is an unknown session.
    fn replay(&self, method: &str) -> Option<Replay> {
        (method == SESSION_LOAD).then(|| {
            let replay = Replay::new().settling(LOAD_SETTLE);
            if self.agent.empty_load_is_unknown {
                replay.empty_is_unknown()
            } else {
                replay
            }
        })
    }

    /// A replayed user or agent message, thought or tool call.
    fn is_history(&self, method: &str, params: &Value) -> bool {
        method == "session/update"
            && params
                .pointer("/update/sessionUpdate")
                .and_then(Value::as_str)
                .is_some_and(|kind| {
                    matches!(
                        kind,
                        "user_message_chunk"
                            | "agent_message_chunk"
                            | "agent_thought_chunk"
                            | "tool_call"
                    )
                })
    }

    /// A new or forked session's id is in the answer; a resumed or loaded one is the plan's.
    fn opened(&self, turn: &Turn<'_>, answer: &Value) -> Result<String, MalformedEvent> {
        match turn.plan {
            SessionPlan::Resume(id) => Ok(id.to_owned()),
            _ => answer
                .get("sessionId")
                .and_then(Value::as_str)
                .filter(|id| driver_cli::is_safe_id(id))
                .map(str::to_owned)
                .ok_or(MalformedEvent),
        }
    }

    /// `session/prompt`. ACP has no system prompt: a new session's first prompt opens with
    /// the request's instructions as a text block of their own, which the session then keeps
    /// (a resumed or forked session has them already).
    fn prompt(&self, turn: &Turn<'_>, session: Option<&str>) -> Call {
        let request = turn.request;
        let mut blocks = Vec::new();
        let new = matches!(turn.plan, SessionPlan::Start(_) | SessionPlan::Stateless);
        if let Some(instructions) = request
            .instructions
            .as_deref()
            .filter(|i| new && !i.is_empty())
        {
            blocks.push(ContentBlock::Text(TextContent::new(instructions)));
        }
        blocks.push(ContentBlock::Text(TextContent::new(
            request.prompt.as_str(),
        )));
        let session = session.unwrap_or_default().to_owned();
        Call::request(SESSION_PROMPT, json(PromptRequest::new(session, blocks)))
    }

    fn interrupt(&self, session: Option<&str>, _turn_id: Option<&str>) -> Option<Call> {
        Some(Call::notification(
            SESSION_CANCEL,
            json(CancelNotification::new(session?.to_owned())),
        ))
    }

    fn per_turn_cli(&self) -> bool {
        false
    }

    /// An unknown session, in each agent's words: `-32002` (resource not found), or a
    /// message or data that says the session was not found (Gemini answers `-32603` with
    /// "No previous sessions found for this project." in `data.details`).
    fn rejection(&self, method: &str, code: i64, message: &str) -> Rejection {
        let continuing = matches!(method, SESSION_LOAD | SESSION_RESUME | SESSION_FORK);
        let lower = message.to_ascii_lowercase();
        let unknown = code == RESOURCE_NOT_FOUND
            || lower.contains("no previous sessions found")
            || lower.contains("session not found")
            || lower.contains("invalid session identifier")
            || (lower.contains("session") && lower.contains("not found"));
        if continuing && unknown {
            Rejection::UnknownSession
        } else if method == AUTHENTICATE || code == -32000 {
            // -32000: ACP's "authentication required".
            Rejection::Failed(FailureKind::Authentication)
        } else {
            Rejection::Failed(driver_cli::classify_text(message))
        }
    }

    /// `fs/*`, `terminal/*` and anything else the client did not offer: not supported. A
    /// permission request for reading or searching, which the policy does not govern, is
    /// allowed once.
    fn answer(&self, method: &str, params: &Value) -> Option<Value> {
        (method == REQUEST_PERMISSION)
            .then(|| permissions::read_only_answer(params))
            .flatten()
    }

    fn approvals(&self) -> bool {
        true
    }

    fn approval(
        &self,
        request: &Request,
        method: &str,
        params: &Value,
        _notes: &TurnNotes,
    ) -> Option<ApprovalQuery> {
        (method == REQUEST_PERMISSION)
            .then(|| permissions::query(request, params))
            .flatten()
    }

    fn approval_answer(
        &self,
        request: &Request,
        _method: &str,
        params: &Value,
        decision: &ApprovalDecision,
    ) -> Value {
        permissions::answer(request, params, decision)
    }

    /// A permission request pending at a cancel is answered `cancelled`.
    fn cancelled_answer(&self, method: &str, _params: &Value) -> Option<Value> {
        (method == REQUEST_PERMISSION).then(|| {
            json(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled,
            ))
        })
    }
}

/// The answer that selects `option_id`.
pub(crate) fn selected(option_id: &str) -> Value {
    json(RequestPermissionResponse::new(
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id.to_owned())),
    ))
}

/// The answer of a permission request with no option to select.
pub(crate) fn cancelled() -> Value {
    json(RequestPermissionResponse::new(
        RequestPermissionOutcome::Cancelled,
    ))
}
