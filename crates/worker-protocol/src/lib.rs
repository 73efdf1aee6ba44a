//! The wire of the agent worker: JSON-RPC 2.0 over stdio, one message per line.
//!
//! A worker (`worker`'s `agent-worker`) serves one credential namespace; the host speaks to it
//! through the process layer's peer (`driver_process::peer`). This crate is the contract
//! between the two halves, as `proc-macro-api` is between rust-analyzer and its proc-macro
//! server: method names, typed params and results, error codes, and the one wire type secrets
//! cross it in.
//!
//! | method | direction | params → result |
//! |---|---|---|
//! | [`CONFIGURE`] `runtime.configure` | host → worker | [`Configure`] `{driver, config}` → `{}` |
//! | [`START_TASK`] `runtime.startTask` | host → worker | [`StartTask`] `{driver, session_id, task_id, attempt, request}` → [`Started`] `{handle}` |
//! | [`STOP`] `runtime.stop` | host → worker | [`Stop`] `{handle}` → [`Stopped`] `{stopped}` |
//! | [`SEND_TOOL_RESULT`] `runtime.sendToolResult` | host → worker | [`ToolResult`] → `{}` |
//! | [`SEND_TOOL_DENIED`] `runtime.sendToolDenied` | host → worker | [`ToolDenied`] → `{}` |
//! | [`EVENT`] `runtime.event` | worker → host, notification | [`EventParams`] `{handle, seq, event}` |
//! | [`APPROVE`] `runtime.approve` | worker → host | [`Approve`] → [`ApproveResult`] |
//! | [`PREWARM`] `runtime.prewarm` | host → worker | [`Prewarm`] `{driver, session_id, request}` → [`PrewarmAnswer`] `ready {ticket, reused, expires_after_ms}` or `failed {error}` |
//! | [`STEER`] `runtime.steer` | host → worker | [`Steer`] `{handle, attempt, text, steer_id}` → [`SteerAnswer`] `acknowledged` or `refused {error}` |
//! | [`ABANDON_STEER`] `runtime.abandonSteer` | host → worker | [`AbandonSteer`] `{handle, steer_id}` → [`Abandoned`] `{abandoned}` |
//! | [`HOLDS`] `runtime.holds` | host → worker | [`Holds`] `{driver, session_id}` → [`Held`] `{held}` |
//! | [`PROCESSES_CHANGED`] `runtime.processesChanged` | worker → host, notification | [`ProcessesChanged`] `{driver, generation}` |
//! | [`SCRIPT`] `runtime.script` | host → worker, tests only | [`Script`] `{driver, script, release}` → [`Scripted`] `{performed}` |
//!
//! ```
//! use worker_protocol::{EventParams, TaskEvent, EVENT};
//! use driver_spi::DriverEvent;
//!
//! let params = EventParams { handle: 1, seq: 0, event: TaskEvent::Driver { event: DriverEvent::RunStarted } };
//! let wire = serde_json::to_value(&params).unwrap();
//! assert_eq!(wire["event"]["type"], "driver");
//! assert_eq!(EVENT, "runtime.event");
//! assert_eq!(serde_json::from_value::<EventParams>(wire).unwrap(), params);
//! ```
//!
//! # Invariants
//! - **A task's events** are numbered from 0, in order, without gaps; the driver's events come
//!   first, then exactly one terminal event: [`TaskEvent::Completed`] (the driver's
//!   response), [`TaskEvent::Failed`] (`{code, retryable}` and the typed detail) or
//!   [`TaskEvent::Stopped`]. A worker that dies mid-task sends no terminal event: the host
//!   fails the run itself (see `worker`'s host driver).
//! - **Secrets** cross only as [`WireSecret`]s (in [`WireBinding`]s): `Deserialize` for the
//!   worker, no `Serialize`, an explicit `to_wire` on the host, `Debug` redacted. So no
//!   generic serialization (a log line, an event, a stored record) can write one, and a
//!   secret never reaches the worker through its argv, environment or a file of the host.
//! - **Approvals have a method of their own**, [`APPROVE`], a request from the worker whose
//!   answer is the decision. They do not reuse `runtime.sendToolResult`/`sendToolDenied`:
//!   those carry outcomes of tools the *host* runs, sent unprompted by the host, while an
//!   approval is a question the *worker* asks and must get exactly one answer to, within a
//!   timeout. As a JSON-RPC request its answer is correlated by the peer's id (a duplicate or
//!   late answer finds no pending request and is dropped), and it names the task's
//!   [`attempt`](Approve::attempt): an answer for another attempt is refused.
//! - **A pre-warm** is the configured driver's `Driver::prewarm` of the request, sent as
//!   `runtime.startTask`'s is (secrets as [`WireSecret`]s); its answer is the driver's
//!   `Prewarmed` or its error in a failed task's form ([`TaskError`]), so the host returns the
//!   same `DriverError` (`Unsupported::Prewarm` included) a run would. The ticket goes back in
//!   the next `runtime.startTask`'s request ([`WireRequestBody::prewarmed`], absent from the
//!   wire when there is none, so a request of an older host still parses).
//! - **A follow-up** ([`STEER`]) goes into the running task's steering, in order; the worker
//!   answers once the wrapped driver acknowledged or refused it, and an acknowledgement is
//!   written after the task's `follow_up` event (it goes through the task's ordered writer).
//!   Its text is the host's, carried like a prompt: never logged, redacted in events by the
//!   worker's driver. A follow-up for a task that is gone, or of another attempt, is refused
//!   as the turn ended; a handle no task ever had is [`codes::UNKNOWN_HANDLE`]. The host
//!   has no timer of its own: when its caller stops waiting, it sends [`ABANDON_STEER`], and
//!   the worker abandons the follow-up as the caller's own timeout does in process.
//! - **Which conversations are held** ([`HOLDS`]) is the wrapped driver's
//!   `ProcessLifecycle::holds_conversation`, read-only; whenever its `changes()` fires the
//!   worker sends [`PROCESSES_CHANGED`] for that driver, so the host asks again. A pre-warm
//!   or a look-up names its driver like `runtime.startTask` does: one no `runtime.configure`
//!   built in this worker (whose drivers all live in its one namespace) is
//!   [`codes::NOT_CONFIGURED`].
//! - **Errors** the worker answers with are the codes below, with fixed messages: nothing of
//!   the input, a provider or a secret is echoed.
//!
//! # What it deliberately does not do
//! It does no I/O, runs no driver and spawns nothing: framing and the peer are
//! `driver_process::peer`'s, serving is `worker`'s.
//!
//! Stability: pre-1.0; the wire and the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod hot;
mod messages;
mod request;
mod secret;

pub use hot::{
    AbandonSteer, Abandoned, Held, Holds, Prewarm, PrewarmAnswer, ProcessesChanged, Steer,
    SteerAnswer, WireSteerError,
};
pub use messages::{
    Approve, ApproveResult, Configure, DriverConfig, EventParams, ReferenceScript, Script,
    Scripted, StartTask, Started, Stop, Stopped, TaskError, TaskErrorCode, TaskEvent, ToolDenied,
    ToolResult, WireDecision, WireEnv, WireUnsupported,
};
pub use request::{WireOutputSchema, WireRequest, WireRequestBody, WireService, WireSession};
pub use secret::{WireBinding, WireSecret};

/// `runtime.configure`: build a driver configuration in the worker.
pub const CONFIGURE: &str = "runtime.configure";
/// `runtime.startTask`: start a task on a configured driver; answers its handle.
pub const START_TASK: &str = "runtime.startTask";
/// `runtime.stop`: cancel a task, best effort.
pub const STOP: &str = "runtime.stop";
/// `runtime.sendToolResult`: the result of a tool the host ran for a task.
pub const SEND_TOOL_RESULT: &str = "runtime.sendToolResult";
/// `runtime.sendToolDenied`: the host refused to run a tool for a task.
pub const SEND_TOOL_DENIED: &str = "runtime.sendToolDenied";
/// `runtime.event`: a task's event (a notification from the worker).
pub const EVENT: &str = "runtime.event";
/// `runtime.approve`: the worker asks the host to approve an action (a request from the
/// worker).
pub const APPROVE: &str = "runtime.approve";

/// `runtime.prewarm`: pre-warm a configured driver for a request; answers its `Prewarmed`
/// or its error.
pub const PREWARM: &str = "runtime.prewarm";
/// `runtime.steer`: a follow-up into a running task; answers once it was delivered or refused.
pub const STEER: &str = "runtime.steer";
/// `runtime.abandonSteer`: the host stopped waiting for a follow-up; the worker abandons it.
pub const ABANDON_STEER: &str = "runtime.abandonSteer";
/// `runtime.holds`: whether a configured driver's live process holds a conversation.
pub const HOLDS: &str = "runtime.holds";
/// `runtime.processesChanged`: a configured driver's processes changed (a notification from
/// the worker).
pub const PROCESSES_CHANGED: &str = "runtime.processesChanged";

/// `runtime.script`: queue behaviours on a configured reference driver and read how many
/// tools it performed: what tests (the driver kit through a worker) observe from inside the
/// worker. Refused for any other driver.
pub const SCRIPT: &str = "runtime.script";

/// The methods a worker serves.
pub const WORKER_METHODS: [&str; 10] = [
    CONFIGURE,
    START_TASK,
    STOP,
    SEND_TOOL_RESULT,
    SEND_TOOL_DENIED,
    PREWARM,
    STEER,
    ABANDON_STEER,
    HOLDS,
    SCRIPT,
];

/// The error codes of the wire: JSON-RPC's own, then the worker's (`-32001` and below).
pub mod codes {
    /// A line that is not JSON (answered with id `null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON that is not a valid message, or a line over the size limit.
    pub const INVALID_REQUEST: i64 = -32600;
    /// A method the worker does not serve.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Params of the wrong shape for the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// `runtime.startTask` names a driver number no `runtime.configure` built.
    pub const NOT_CONFIGURED: i64 = -32001;
    /// `runtime.configure` could not build the driver (unknown runtime, bad environment,
    /// invalid arguments).
    pub const CONFIG_REJECTED: i64 = -32002;
    /// `runtime.stop` or a tool outcome names no live task.
    pub const UNKNOWN_HANDLE: i64 = -32003;
    /// A tool outcome for a call no task waits for (the drivers of this version run their
    /// tools themselves, so none does).
    pub const TOOL_NOT_AWAITED: i64 = -32004;
    /// `runtime.startTask` for a task id that is running already.
    pub const DUPLICATE_TASK: i64 = -32005;
    /// `runtime.script` for a driver that is not the reference runtime.
    pub const NOT_SCRIPTABLE: i64 = -32006;
}

/// Why the worker refused a request: each has its code and a fixed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// [`codes::INVALID_PARAMS`].
    InvalidParams,
    /// [`codes::NOT_CONFIGURED`].
    NotConfigured,
    /// [`codes::CONFIG_REJECTED`].
    ConfigRejected,
    /// [`codes::UNKNOWN_HANDLE`].
    UnknownHandle,
    /// [`codes::TOOL_NOT_AWAITED`].
    ToolNotAwaited,
    /// [`codes::DUPLICATE_TASK`].
    DuplicateTask,
    /// [`codes::NOT_SCRIPTABLE`].
    NotScriptable,
}

impl ProtocolError {
    /// Its code.
    pub fn code(self) -> i64 {
        match self {
            Self::InvalidParams => codes::INVALID_PARAMS,
            Self::NotConfigured => codes::NOT_CONFIGURED,
            Self::ConfigRejected => codes::CONFIG_REJECTED,
            Self::UnknownHandle => codes::UNKNOWN_HANDLE,
            Self::ToolNotAwaited => codes::TOOL_NOT_AWAITED,
            Self::DuplicateTask => codes::DUPLICATE_TASK,
            Self::NotScriptable => codes::NOT_SCRIPTABLE,
        }
    }

    /// Its fixed message.
    pub fn message(self) -> &'static str {
        match self {
            Self::InvalidParams => "Invalid params",
            Self::NotConfigured => "No such driver configuration",
            Self::ConfigRejected => "The driver configuration could not be built",
            Self::UnknownHandle => "No such task",
            Self::ToolNotAwaited => "No task waits for this tool call",
            Self::DuplicateTask => "The task is running already",
            Self::NotScriptable => "The driver cannot be scripted",
        }
    }

    /// The error with this code, if the wire defines one.
    pub fn from_code(code: i64) -> Option<Self> {
        [
            Self::InvalidParams,
            Self::NotConfigured,
            Self::ConfigRejected,
            Self::UnknownHandle,
            Self::ToolNotAwaited,
            Self::DuplicateTask,
            Self::NotScriptable,
        ]
        .into_iter()
        .find(|e| e.code() == code)
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests;
