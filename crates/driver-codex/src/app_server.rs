//! Codex's app-server protocol (JSON-RPC over stdio): the methods and notifications the
//! resident dialect of issue 25 speaks, in one place, and the check that the pinned binary's
//! own schema (`codex app-server generate-json-schema`) has not changed for any of them.
//!
//! What the pinned binary does with these messages is recorded in `docs/codex-app-server.md`;
//! the facts this module relies on:
//! - the whole configuration goes in as `-c` overrides at launch, as for `exec`, so it is part
//!   of the process signature: a thread is resumed with other config (a rotated MCP token, a
//!   new endpoint) only on a new process, because a thread already loaded ignores the config
//!   of a second `thread/resume`;
//! - every refusal is code -32600 (one -32603, for a required MCP server that fails), so
//!   refusals are told apart by Codex's words;
//! - one process per loaded thread: a thread loaded elsewhere answers "already has an active
//!   writer", which the pool avoids by keeping one process per conversation (and retiring a
//!   fork's parent first);
//! - on stdin EOF the process exits and an in-flight turn is saved as interrupted.

use driver_cli::{
    Call, Invocation, MalformedEvent, Rejection, ResidentProtocol, SessionPlan, Turn, TurnNotes,
};
use driver_spi::{ApprovalDecision, ApprovalQuery, ConfigError, DriverError, FailureKind, Request};
use serde_json::{Value, json};

use crate::dialect::{Codex, check_servers, is_unknown_session, overrides};

/// Client requests the dialect sends.
#[cfg_attr(not(test), allow(dead_code, reason = "the schema check's list"))]
pub(crate) const REQUESTS: &[&str] = &[
    INITIALIZE,
    THREAD_START,
    THREAD_RESUME,
    THREAD_FORK,
    TURN_START,
    TURN_STEER,
    TURN_INTERRUPT,
];
const INITIALIZE: &str = "initialize";
const THREAD_START: &str = "thread/start";
const THREAD_RESUME: &str = "thread/resume";
const THREAD_FORK: &str = "thread/fork";
const TURN_START: &str = "turn/start";
const TURN_INTERRUPT: &str = "turn/interrupt";
const TURN_STEER: &str = "turn/steer";
/// The client notification after `initialize` (not required by 0.169.0; sent anyway).
const INITIALIZED: &str = "initialized";

/// Server notifications the dialect maps to driver events.
#[cfg_attr(not(test), allow(dead_code, reason = "the schema check's list"))]
pub(crate) const NOTIFICATIONS: &[&str] = &[
    "thread/started",
    "turn/started",
    "turn/completed",
    "item/started",
    "item/completed",
    "item/agentMessage/delta",
    "thread/tokenUsage/updated",
];

/// Server requests the dialect answers (approvals and MCP elicitations).
#[cfg_attr(not(test), allow(dead_code, reason = "the schema check's list"))]
pub(crate) const SERVER_REQUESTS: &[&str] = &[ELICITATION, COMMAND_APPROVAL, FILE_APPROVAL];
const ELICITATION: &str = "mcpServer/elicitation/request";
const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
const FILE_APPROVAL: &str = "item/fileChange/requestApproval";

/// The config file `app-server` reads and cannot be told to ignore (it has no
/// `--ignore-user-config`).
const USER_CONFIG: &str = "config.toml";

impl ResidentProtocol for Codex {
    fn handshake(&self) -> Vec<Call> {
        let client = json!({
            "clientInfo": {
                "name": "agent-sdk",
                "title": "agent-sdk driver-codex",
                "version": env!("CARGO_PKG_VERSION"),
            }
        });
        vec![
            Call::request(INITIALIZE, client),
            Call::notification(INITIALIZED, json!({})),
        ]
    }

    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call> {
        let cwd = turn.request.workspace.as_deref();
        let approval = crate::permissions::thread_policy(&turn.request.permissions);
        let with_cwd = |mut params: Value| {
            if let Some(map) = params.as_object_mut() {
                if let Some(cwd) = cwd {
                    map.insert("cwd".into(), json!(cwd));
                }
                if let Some(approval) = approval {
                    map.insert("approvalPolicy".into(), json!(approval));
                }
            }
            params
        };
        match turn.plan {
            SessionPlan::Resume(id) if loaded.is_some_and(|l| l.eq_ignore_ascii_case(id)) => None,
            SessionPlan::Resume(id) => Some(Call::request(
                THREAD_RESUME,
                with_cwd(json!({"threadId": id, "excludeTurns": true})),
            )),
            SessionPlan::Fork(id) => Some(Call::request(
                THREAD_FORK,
                with_cwd(json!({"threadId": id, "excludeTurns": true})),
            )),
            SessionPlan::Stateless => Some(Call::request(
                THREAD_START,
                with_cwd(json!({"ephemeral": true})),
            )),
            _ => Some(Call::request(THREAD_START, with_cwd(json!({})))),
        }
    }

    fn opened(&self, _turn: &Turn<'_>, answer: &Value) -> Result<String, MalformedEvent> {
        let id = answer
            .pointer("/thread/id")
            .and_then(Value::as_str)
            .filter(|id| driver_cli::is_safe_id(id))
            .ok_or(MalformedEvent)?;
        Ok(id.to_owned())
    }

    /// `turn/start`, with the turn's output schema inline (`outputSchema` holds for this
    /// turn only, so turns with and without one share the process).
    fn prompt(&self, turn: &Turn<'_>, session: Option<&str>) -> Call {
        let mut params = json!({
            "threadId": session,
            "input": [{"type": "text", "text": turn.request.prompt}],
        });
        let schema = crate::dialect::strict_schema(turn.request);
        if let (Some(schema), Some(map)) = (schema, params.as_object_mut()) {
            map.insert("outputSchema".into(), schema);
        }
        Call::request(TURN_START, params)
    }

    fn prompt_accepted(&self, answer: &Value) -> Option<String> {
        answer
            .pointer("/turn/id")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// `turnId`, or `turn.id` (`turn/started`, `turn/completed`).
    fn turn_of(&self, _method: &str, params: &Value) -> Option<String> {
        params
            .get("turnId")
            .or_else(|| params.pointer("/turn/id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn steers(&self) -> bool {
        true
    }

    /// `turn/steer` with the running turn's id as its precondition (`expectedTurnId`: Codex
    /// refuses it when that turn is no longer the active one), answered `{"turnId"}`; the
    /// input joins the turn's next model request. Only once `turn/start` named the turn.
    fn steer(&self, session: Option<&str>, turn_id: Option<&str>, text: &str) -> Option<Call> {
        Some(Call::request(
            TURN_STEER,
            json!({
                "threadId": session?,
                "expectedTurnId": turn_id?,
                "input": [{"type": "text", "text": text}],
            }),
        ))
    }

    /// Only once `turn/start` answered with the turn's id.
    fn interrupt(&self, session: Option<&str>, turn_id: Option<&str>) -> Option<Call> {
        Some(Call::request(
            TURN_INTERRUPT,
            json!({"threadId": session?, "turnId": turn_id?}),
        ))
    }

    fn rejection(&self, method: &str, code: i64, message: &str) -> Rejection {
        rejection(method, code, message)
    }

    /// MCP elicitations are declined (the host is not asked for form input).
    fn answer(&self, method: &str, _params: &Value) -> Option<Value> {
        (method == ELICITATION).then(|| json!({"action": "decline"}))
    }

    fn approvals(&self) -> bool {
        true
    }

    /// A `fileChange` item's changes, for its approval request (which names the item only).
    fn note(&self, method: &str, params: &Value) -> Option<(String, Value)> {
        crate::permissions::note(method, params)
    }

    fn approval(
        &self,
        request: &Request,
        method: &str,
        params: &Value,
        notes: &TurnNotes,
    ) -> Option<ApprovalQuery> {
        crate::permissions::approval(request, method, params, notes)
    }

    fn approval_answer(
        &self,
        _request: &Request,
        _method: &str,
        _params: &Value,
        decision: &ApprovalDecision,
    ) -> Value {
        crate::permissions::answer(decision)
    }
}

/// `codex app-server` (stdio transport) with the turn's `-c` overrides: the resident mode's
/// [`Dialect::invocation`](driver_cli::Dialect::invocation).
pub(crate) fn launch(codex: &Codex, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
    let request = turn.request;
    check_servers(&request.mcp)?;
    if codex.hermetic_config {
        let state = turn
            .env
            .state_dir(&crate::RUNTIME.descriptor)
            .map_err(driver_process::error::ProcessError::from)?;
        if state.join(USER_CONFIG).exists() {
            return Err(ConfigError::invalid(
                "hermetic_config",
                "app-server cannot ignore the namespace's config.toml: remove it, or turn \
                 hermetic_config off",
            )
            .into());
        }
    }
    let mut args = vec!["app-server".to_owned()];
    args.extend(overrides(codex, request));
    Ok(Invocation::new(args))
}

/// What Codex's refusal means: its words, since nearly every refusal is -32600.
fn rejection(method: &str, code: i64, message: &str) -> Rejection {
    const MCP_REQUIRED: &str = "required mcp servers failed";
    let lower = message.to_ascii_lowercase();
    let opening = method == THREAD_RESUME || method == THREAD_FORK;
    if opening
        && (is_unknown_session(&lower)
            || lower.contains("invalid session id")
            || lower.contains("invalid thread id"))
    {
        return Rejection::UnknownSession;
    }
    if lower.contains(MCP_REQUIRED) {
        return Rejection::Failed(FailureKind::McpUnavailable);
    }
    if lower.contains("already has an active writer") {
        // Another process (another host on this namespace) holds the thread.
        return Rejection::Failed(FailureKind::Other);
    }
    match code {
        -32600 | -32601 | -32602 | -32700 => Rejection::Failed(FailureKind::Protocol),
        _ => Rejection::Failed(driver_cli::classify_text(&lower)),
    }
}

pub(crate) mod events;
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod schema_check;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_judged_by_codex_words() {
        // Verbatim from codex app-server 0.169.0 (docs/codex-app-server.md §6, §9).
        let unknown = "no rollout found for thread id 00000000-0000-0000-0000-000000000000";
        assert_eq!(
            rejection("thread/resume", -32600, unknown),
            Rejection::UnknownSession
        );
        assert_eq!(
            rejection(
                "thread/fork",
                -32600,
                "invalid session id: invalid character"
            ),
            Rejection::UnknownSession
        );
        assert_eq!(
            rejection("turn/start", -32600, unknown),
            Rejection::Failed(FailureKind::Protocol),
            "only opening a session can reject a resume"
        );
        let mcp = "error creating thread: Fatal error: Failed to initialize session: required \
                   MCP servers failed to initialize: req: No such file or directory (os error 2)";
        assert_eq!(
            rejection("thread/start", -32603, mcp),
            Rejection::Failed(FailureKind::McpUnavailable)
        );
        assert_eq!(
            rejection(
                "thread/resume",
                -32600,
                "thread T already has an active writer"
            ),
            Rejection::Failed(FailureKind::Other)
        );
        assert_eq!(
            rejection("turn/start", -32000, "401 Unauthorized"),
            Rejection::Failed(FailureKind::Authentication)
        );
    }
}
