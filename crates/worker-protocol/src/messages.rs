//! The params and results of each method, and the `runtime.event` notification.

use std::collections::BTreeMap;
use std::path::PathBuf;

use driver_spi::{
    Action, ApprovalDecision, ConfigError, DriverError, DriverEvent, FailureKind, Permission,
    Response, ResumeRejectReason, RunFailure, Unsupported,
};
use run_service::TransportKind;
use serde_json::{Value, json};

use crate::{WireBinding, WireRequest, WireSecret};

/// Where the worker builds its driver's runtime environment: the same base directory,
/// credential namespace, working directory and plain variables as the host's `RuntimeEnv` of
/// the namespace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WireEnv {
    /// `RuntimeEnv::base_dir`.
    pub base_dir: PathBuf,
    /// The credential namespace (`user:alice`).
    pub namespace: String,
    /// `RuntimeEnv::cwd`.
    pub cwd: PathBuf,
    /// The plain (non-secret) variables the host's environment sets for its runtimes
    /// (`RuntimeEnvBuilder::var`), by name. The worker's own environment passes only the
    /// allow-list on to a runtime, so a variable reaches a CLI through a worker only when it is
    /// named here; the worker's environment refuses credential-looking and reserved names, as
    /// the host's does. Secrets never go here: they cross as the configuration's `key` or in a
    /// request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
}

/// Something the worker's reference driver does on its next runs, in order (for tests of
/// what crosses the worker: a run that stalls until it is stopped or its worker dies, a tool
/// the policy governs).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceScript {
    /// Start, then wait until the run is stopped.
    Stall,
    /// Use a tool that takes `action`, as the request's policy says (asking the host where it
    /// says to ask), then reply.
    UseTool {
        /// The kind of action.
        action: Action,
        /// The tool's name.
        tool: String,
        /// Its arguments.
        arguments: String,
    },
}

/// `runtime.script` params (tests and demos of the reference runtime only): queue `script` on
/// the reference driver configured as `driver`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Script {
    /// The configured driver (a reference one).
    pub driver: u64,
    /// What its next runs do.
    #[serde(default)]
    pub script: Vec<ReferenceScript>,
    /// Release the runs stalled now ([`ReferenceScript::Stall`]), after queueing `script`.
    #[serde(default)]
    pub release: bool,
}

/// `runtime.script` result. It may carry a secret (the materialization), so it is written
/// only by [`to_wire`](Self::to_wire), never `Serialize`d.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Scripted {
    /// How many tools the reference driver's runs have performed so far (their effect
    /// happened).
    pub performed: u64,
    /// What the reference driver's last run materialized for its simulated provider, secret
    /// values included (what the driver kit's CUR-01 searches), as a [`WireSecret`].
    #[serde(default)]
    pub materialization: Option<WireSecret>,
}

impl Scripted {
    /// The message the worker writes (the materialization in clear, for the pipe only).
    pub fn to_wire(&self) -> Value {
        json!({
            "performed": self.performed,
            "materialization": self.materialization.as_ref().map(WireSecret::to_wire),
        })
    }
}

/// The driver configuration a worker builds, inside its own environment. The host computes
/// the descriptor, session codec and config fingerprinter of the same configuration in
/// process, so a Thread resumes the same way in process or through a worker.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DriverConfig {
    /// The file-backed reference runtime (`reference-runtime`) in `env`.
    Reference {
        /// Its environment.
        env: WireEnv,
        /// What its next runs do (empty: they reply).
        #[serde(default)]
        script: Vec<ReferenceScript>,
        /// `ReferenceConfig::prompt_tools`: `/tool <action> <name> [arguments]` and
        /// `/answer <text>` prompts script a run (as `agentctl` runs the reference runtime).
        #[serde(default)]
        prompt_tools: bool,
    },
    /// A runtime of the registry (`runtimes::find(runtime)`) built from its common arguments.
    Registry {
        /// Its environment.
        env: WireEnv,
        /// The registry name (`codex`, `claude_code`, …).
        runtime: String,
        /// `CommonArgs::binary`.
        #[serde(default)]
        binary: Option<PathBuf>,
        /// `CommonArgs::model`.
        #[serde(default)]
        model: Option<String>,
        /// `CommonArgs::base_url`.
        #[serde(default)]
        base_url: Option<String>,
        /// `CommonArgs::key`: the one secret of a configuration, as a [`WireBinding`].
        #[serde(default)]
        key: Option<WireBinding>,
        /// `CommonArgs::process_mode`: resident processes (`ProcessMode::Resident` with the
        /// default pool limits, kept inside the worker) rather than one process per turn (the
        /// default). A runtime without a resident mode refuses it, as in process.
        #[serde(default)]
        resident: bool,
    },
}

impl DriverConfig {
    /// The environment it is built in.
    pub fn env(&self) -> &WireEnv {
        match self {
            Self::Reference { env, .. } | Self::Registry { env, .. } => env,
        }
    }

    /// The message the host writes (a key in clear, for the pipe only).
    pub fn to_wire(&self) -> Value {
        match self {
            Self::Reference {
                env,
                script,
                prompt_tools,
            } => json!({
                "kind": "reference",
                "env": env,
                "script": script,
                "prompt_tools": prompt_tools,
            }),
            Self::Registry {
                env,
                runtime,
                binary,
                model,
                base_url,
                key,
                resident,
            } => json!({
                "kind": "registry",
                "env": env,
                "runtime": runtime,
                "binary": binary,
                "model": model,
                "base_url": base_url,
                "key": key.as_ref().map(WireBinding::to_wire),
                "resident": resident,
            }),
        }
    }
}

/// `runtime.configure` params: build the driver of `config` under the host's number `driver`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Configure {
    /// The host's number for this configuration; `runtime.startTask` names it.
    pub driver: u64,
    /// What to build.
    pub config: DriverConfig,
}

impl Configure {
    /// The message the host writes.
    pub fn to_wire(&self) -> Value {
        json!({"driver": self.driver, "config": self.config.to_wire()})
    }
}

/// `runtime.startTask` params.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct StartTask {
    /// The configured driver that runs it.
    pub driver: u64,
    /// The session the task continues, when it has one (its resume id; informational).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The task (the run id).
    pub task_id: String,
    /// How many times the host started this task (1 first): approval requests echo it, so an
    /// answer meant for an earlier attempt cannot approve a retried call.
    pub attempt: u32,
    /// The request.
    pub request: WireRequest,
}

impl StartTask {
    /// The message the host writes.
    pub fn to_wire(&self) -> Value {
        json!({
            "driver": self.driver,
            "session_id": self.session_id,
            "task_id": self.task_id,
            "attempt": self.attempt,
            "request": self.request.to_wire(),
        })
    }
}

/// `runtime.startTask` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Started {
    /// The task's handle, unique within the worker; its events carry it.
    pub handle: u64,
}

/// `runtime.stop` params: cancel the task, best effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stop {
    /// The task.
    pub handle: u64,
}

/// `runtime.stop` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stopped {
    /// Whether the task was still running (its terminal event is then `stopped`).
    pub stopped: bool,
}

/// `runtime.sendToolResult` params: the result of a tool the host ran for the task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    /// The task.
    pub handle: u64,
    /// The tool call.
    pub call_id: String,
    /// Its result text.
    pub output: String,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
}

/// `runtime.sendToolDenied` params: the host refused to run a tool for the task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolDenied {
    /// The task.
    pub handle: u64,
    /// The tool call.
    pub call_id: String,
    /// Why, in words for the model.
    pub reason: String,
}

/// `runtime.event` params: one event of a task.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventParams {
    /// The task.
    pub handle: u64,
    /// Numbered from 0 per task, without gaps, in the order sent.
    pub seq: u64,
    /// The event.
    pub event: TaskEvent,
}

/// One event of a task: the driver's events, then exactly one terminal event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEvent {
    /// An event the driver emitted.
    Driver {
        /// The event.
        event: DriverEvent,
    },
    /// Terminal: the driver returned a response.
    Completed {
        /// The response.
        response: Response,
    },
    /// Terminal: the driver returned an error.
    Failed {
        /// The error.
        error: TaskError,
    },
    /// Terminal: the task was stopped (`runtime.stop`) before it ended.
    Stopped,
}

impl TaskEvent {
    /// Whether it ends its task.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Driver { .. })
    }
}

/// The class of a [`TaskError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskErrorCode {
    /// `DriverError::ResumeRejected`.
    ResumeRejected,
    /// `DriverError::InvalidConfig`.
    InvalidConfig,
    /// `DriverError::Unsupported`.
    Unsupported,
    /// `DriverError::Session`.
    InvalidSession,
    /// `DriverError::Failed`.
    Failed,
    /// `DriverError::Cancelled`.
    Cancelled,
}

/// A `DriverError` on the wire: `{code, retryable}` and the typed detail of its class. No
/// field holds provider text but a failure's redacted message, as in process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TaskError {
    /// The class.
    pub code: TaskErrorCode,
    /// Whether running the task again may succeed: a failure's own flag, `true` for a
    /// cancellation, `false` otherwise.
    pub retryable: bool,
    /// For [`TaskErrorCode::ResumeRejected`].
    #[serde(default)]
    pub reason: Option<ResumeRejectReason>,
    /// For [`TaskErrorCode::Failed`].
    #[serde(default)]
    pub failure: Option<RunFailure>,
    /// For [`TaskErrorCode::Unsupported`].
    #[serde(default)]
    pub unsupported: Option<WireUnsupported>,
}

/// An `Unsupported` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "each variant is the `Unsupported` variant of the same name"
)]
pub enum WireUnsupported {
    Resume,
    Fork,
    McpTransport {
        transport: TransportKind,
    },
    StructuredOutput,
    Approvals,
    Permission {
        action: Action,
        permission: Permission,
    },
    PermissionNeeds {
        action: Action,
        permission: Permission,
        needs: Action,
    },
    StrictOutputSchema {
        reason: driver_spi::StrictSchemaError,
    },
    Prewarm,
    /// A variant this version of the protocol does not name.
    Other,
}

impl TaskError {
    fn new(code: TaskErrorCode, retryable: bool) -> Self {
        Self {
            code,
            retryable,
            reason: None,
            failure: None,
            unsupported: None,
        }
    }

    /// The wire form of `error`.
    pub fn from_driver_error(error: &DriverError) -> Self {
        match error {
            DriverError::ResumeRejected { reason } => Self {
                reason: Some(*reason),
                ..Self::new(TaskErrorCode::ResumeRejected, false)
            },
            DriverError::InvalidConfig(_) => Self::new(TaskErrorCode::InvalidConfig, false),
            DriverError::Unsupported(what) => Self {
                unsupported: Some(WireUnsupported::from(*what)),
                ..Self::new(TaskErrorCode::Unsupported, false)
            },
            DriverError::Session(_) => Self::new(TaskErrorCode::InvalidSession, false),
            DriverError::Failed(failure) => Self {
                failure: Some(failure.clone()),
                ..Self::new(TaskErrorCode::Failed, failure.retryable.unwrap_or(false))
            },
            DriverError::Cancelled => Self::new(TaskErrorCode::Cancelled, true),
            _ => Self {
                failure: Some(RunFailure::new(FailureKind::Other, "")),
                ..Self::new(TaskErrorCode::Failed, false)
            },
        }
    }

    /// The error, on the host's side. A configuration or session error of the worker's driver
    /// is named by its class only (its field or key stays in the worker).
    pub fn into_driver_error(self) -> DriverError {
        match self.code {
            TaskErrorCode::ResumeRejected => DriverError::resume_rejected(
                self.reason.unwrap_or(ResumeRejectReason::InvalidState),
            ),
            TaskErrorCode::InvalidConfig => DriverError::InvalidConfig(ConfigError::invalid(
                "worker driver",
                "the worker's driver refused its configuration",
            )),
            TaskErrorCode::Unsupported => {
                match self.unsupported.and_then(WireUnsupported::into_unsupported) {
                    Some(what) => DriverError::Unsupported(what),
                    None => DriverError::Failed(RunFailure::new(FailureKind::Other, "unsupported")),
                }
            }
            TaskErrorCode::InvalidSession => {
                DriverError::Session(driver_spi::CodecError::MissingResumeId)
            }
            TaskErrorCode::Failed => DriverError::Failed(
                self.failure
                    .unwrap_or_else(|| RunFailure::new(FailureKind::Other, "")),
            ),
            TaskErrorCode::Cancelled => DriverError::Cancelled,
        }
    }
}

impl From<Unsupported> for WireUnsupported {
    fn from(what: Unsupported) -> Self {
        match what {
            Unsupported::Resume => Self::Resume,
            Unsupported::Fork => Self::Fork,
            Unsupported::McpTransport(transport) => Self::McpTransport { transport },
            Unsupported::StructuredOutput => Self::StructuredOutput,
            Unsupported::Approvals => Self::Approvals,
            Unsupported::Permission { action, permission } => {
                Self::Permission { action, permission }
            }
            Unsupported::PermissionNeeds {
                action,
                permission,
                needs,
            } => Self::PermissionNeeds {
                action,
                permission,
                needs,
            },
            Unsupported::StrictOutputSchema(reason) => Self::StrictOutputSchema { reason },
            Unsupported::Prewarm => Self::Prewarm,
            _ => Self::Other,
        }
    }
}

impl WireUnsupported {
    fn into_unsupported(self) -> Option<Unsupported> {
        Some(match self {
            Self::Resume => Unsupported::Resume,
            Self::Fork => Unsupported::Fork,
            Self::McpTransport { transport } => Unsupported::McpTransport(transport),
            Self::StructuredOutput => Unsupported::StructuredOutput,
            Self::Approvals => Unsupported::Approvals,
            Self::Permission { action, permission } => {
                Unsupported::Permission { action, permission }
            }
            Self::PermissionNeeds {
                action,
                permission,
                needs,
            } => Unsupported::PermissionNeeds {
                action,
                permission,
                needs,
            },
            Self::StrictOutputSchema { reason } => Unsupported::StrictOutputSchema(reason),
            Self::Prewarm => Unsupported::Prewarm,
            Self::Other => return None,
        })
    }
}

/// `runtime.approve` params: the worker asks the host to approve one action of a task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Approve {
    /// The task.
    pub handle: u64,
    /// The request's id within the run (`approval-<n>`).
    pub approval_id: String,
    /// The task's attempt ([`StartTask::attempt`]), echoed in the answer.
    pub attempt: u32,
    /// The tool call it approves, when the runtime names one.
    #[serde(default)]
    pub call_id: Option<String>,
    /// The kind of action.
    pub action: Action,
    /// The tool or command name, redacted in the worker.
    pub tool: String,
    /// The arguments, redacted in the worker.
    pub arguments: String,
    /// Whether an answer in place of the tool's result is accepted.
    #[serde(default)]
    pub answerable: bool,
}

/// `runtime.approve` result: the host's decision, naming the request and attempt it answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApproveResult {
    /// [`Approve::approval_id`], echoed.
    pub approval_id: String,
    /// [`Approve::attempt`], echoed: a mismatch is refused (the worker denies).
    pub attempt: u32,
    /// The decision.
    pub decision: WireDecision,
}

/// An `ApprovalDecision` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WireDecision {
    /// Approve.
    Approve,
    /// Deny, with the reason the model sees.
    Deny {
        /// Why.
        reason: String,
    },
    /// Answer in place of the tool.
    Answer {
        /// The result text.
        output: String,
    },
    /// The host's approval timeout passed unanswered: the worker sends no decision and lets
    /// its own timer (the host's timeout and a short grace) deny, so its events read
    /// `timed_out` as in process.
    TimedOut,
}

impl From<ApprovalDecision> for WireDecision {
    fn from(decision: ApprovalDecision) -> Self {
        match decision {
            ApprovalDecision::Approve => Self::Approve,
            ApprovalDecision::Answer { output } => Self::Answer { output },
            ApprovalDecision::Deny { reason } => Self::Deny { reason },
            _ => Self::Deny {
                reason: "an answer this protocol cannot carry: denied".to_owned(),
            },
        }
    }
}

impl From<WireDecision> for ApprovalDecision {
    fn from(decision: WireDecision) -> Self {
        match decision {
            WireDecision::Approve => Self::Approve,
            WireDecision::Deny { reason } => Self::deny(reason),
            WireDecision::Answer { output } => Self::answer(output),
            WireDecision::TimedOut => Self::deny("no answer before the approval timeout: denied"),
        }
    }
}
