//! What a driver returns: [`Response`], its [`Checkpoint`], exit status, usage and typed
//! [`RunFailure`].

use std::fmt;

use crate::SessionState;

/// The result of a run that reached the provider.
///
/// A run that could not start (invalid config, rejected resume, cancelled) is a
/// [`DriverError`](crate::DriverError) instead. A run that started and then failed may return
/// either an error or a response whose [`failure`](Self::failure) is set, keeping the partial
/// output and usage.
///
/// # Checkpoint rule (checked by the conformance kit)
/// A checkpoint may be marked [`valid`](Checkpoint::valid) only when the outcome is clean
/// ([`is_clean`](Self::is_clean): successful exit, no failure) and the state has a non-empty
/// resume id that the driver's own codec accepts. On a fork, the resume id differs from the
/// parent's. The core persists only [`persistable_checkpoint`](Self::persistable_checkpoint).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Response {
    /// The final assistant text.
    pub output: String,
    /// How the provider run ended.
    pub exit: ExitStatus,
    /// Token usage, when the provider reports it.
    pub usage: Option<Usage>,
    /// The session checkpoint, when the run has a session.
    pub checkpoint: Option<Checkpoint>,
    /// A typed failure of a run that started.
    pub failure: Option<RunFailure>,
    /// The final answer as data, when the runtime reports it apart from its text (Claude
    /// Code's and CodeBuddy's `structured_output`); otherwise the core reads
    /// [`output`](Self::output) as JSON. Only for a request with an
    /// [`OutputSchema`](crate::OutputSchema).
    #[serde(default)]
    pub structured_output: Option<serde_json::Value>,
}

impl Response {
    /// A clean response with this output: successful exit, no usage, checkpoint or failure.
    pub fn new(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            exit: ExitStatus::Success,
            usage: None,
            checkpoint: None,
            failure: None,
            structured_output: None,
        }
    }

    /// Sets the structured answer.
    pub fn with_structured_output(mut self, value: serde_json::Value) -> Self {
        self.structured_output = Some(value);
        self
    }

    /// Sets the exit status.
    pub fn with_exit(mut self, exit: ExitStatus) -> Self {
        self.exit = exit;
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the checkpoint.
    pub fn with_checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = Some(checkpoint);
        self
    }

    /// Sets the failure.
    pub fn with_failure(mut self, failure: RunFailure) -> Self {
        self.failure = Some(failure);
        self
    }

    /// Whether the run ended cleanly: successful exit and no failure.
    pub fn is_clean(&self) -> bool {
        self.exit.is_success() && self.failure.is_none()
    }

    /// The checkpoint state the core may persist: present, marked valid, with a non-blank
    /// resume id, and only after a clean outcome. A driver that breaks the checkpoint rule
    /// gets `None` here rather than a stored session.
    pub fn persistable_checkpoint(&self) -> Option<&SessionState> {
        let checkpoint = self.checkpoint.as_ref()?;
        (checkpoint.valid && self.is_clean() && !checkpoint.state.resume_id.trim().is_empty())
            .then_some(&checkpoint.state)
    }
}

/// A session checkpoint: the state to resume from, and whether it may be stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// The state.
    pub state: SessionState,
    /// Whether the state may be persisted and resumed (see the rule on [`Response`]).
    pub valid: bool,
}

impl Checkpoint {
    /// A valid checkpoint.
    pub fn valid(state: SessionState) -> Self {
        Self { state, valid: true }
    }

    /// A checkpoint that must not be persisted (for example after a failed turn).
    pub fn invalid(state: SessionState) -> Self {
        Self {
            state,
            valid: false,
        }
    }
}

/// How the provider run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "value")]
#[non_exhaustive]
pub enum ExitStatus {
    /// Success (exit code 0, or an in-process run that completed).
    Success,
    /// A non-zero exit code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
    /// Stopped by the driver's timeout.
    TimedOut,
}

impl ExitStatus {
    /// Whether this is [`ExitStatus::Success`].
    pub fn is_success(self) -> bool {
        matches!(self, Self::Success)
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => f.write_str("success"),
            Self::Code(code) => write!(f, "exit code {code}"),
            Self::Signal(signal) => write!(f, "signal {signal}"),
            Self::TimedOut => f.write_str("timed out"),
        }
    }
}

/// Token usage of one run.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Of which served from a cache.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Usage with these input and output counts and no cached tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            cached_input_tokens: 0,
            output_tokens,
        }
    }

    /// Sets the cached input tokens.
    pub fn with_cached_input_tokens(mut self, cached: u64) -> Self {
        self.cached_input_tokens = cached;
        self
    }
}

/// The class of a run failure, for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The model provider (the model's API, as the runtime reports it) returned an error:
    /// a model error, a refusal, an internal error.
    ///
    /// Serialized as `"provider"`, its name before issue 40, so a worker, a stored event or a
    /// recorded transcript written before or after the rename reads the same.
    #[serde(rename = "provider")]
    ModelProvider,
    /// The model provider rejected the credentials.
    Authentication,
    /// The model provider throttled the run.
    RateLimited,
    /// The runtime's process (the agent CLI) could not start or exited abnormally. When it
    /// could not start because its program is missing or not executable,
    /// [`RunFailure::program`] says which.
    Process,
    /// The runtime's output could not be understood.
    Protocol,
    /// The run hit the driver's timeout.
    Timeout,
    /// The run hit a turn or budget limit.
    Limit,
    /// An MCP server the request marks required did not connect, so the run was stopped
    /// before the model could work without its tools.
    McpUnavailable,
    /// Anything else.
    Other,
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ModelProvider => "the model provider reported an error",
            Self::Authentication => "authentication failed",
            Self::RateLimited => "rate limited",
            Self::Process => "runtime process failed",
            Self::Protocol => "protocol error",
            Self::Timeout => "timed out",
            Self::Limit => "limit reached",
            Self::McpUnavailable => "a required MCP server is unavailable",
            Self::Other => "failed",
        })
    }
}

/// What is wrong with a program a driver could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProgramProblem {
    /// No such file (or, for a bare name, none on the child's `PATH`).
    NotFound,
    /// The file exists but cannot be executed (no execute permission, a directory, a
    /// `noexec` mount, or not a program this system can run).
    NotExecutable,
}

/// A runtime's program (an agent CLI) that could not be started, named by the path or name
/// the host configured: host configuration, never a secret or provider text, so it is shown
/// in `Display`, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ProgramUnavailable {
    /// The program as configured: a path, or a name looked up in the child's `PATH`.
    pub program: String,
    /// What is wrong with it.
    pub problem: ProgramProblem,
}

impl ProgramUnavailable {
    /// `program` (as configured) has `problem`.
    pub fn new(program: impl Into<String>, problem: ProgramProblem) -> Self {
        Self {
            program: program.into(),
            problem,
        }
    }
}

impl fmt::Display for ProgramUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let program = &self.program;
        match self.problem {
            ProgramProblem::NotFound => write!(
                f,
                "program `{program}` not found: install the CLI, or set the driver's binary \
                 to its path"
            ),
            ProgramProblem::NotExecutable => write!(
                f,
                "program `{program}` is not executable: set the driver's binary to the CLI's \
                 executable for this system, with the execute permission"
            ),
        }
    }
}

/// A typed failure of a run that started.
///
/// [`Display`](fmt::Display) shows the [`kind`](Self::kind), and the
/// [`program`](Self::program) that could not be started when there is one (host
/// configuration), never the [`message`](Self::message), so an error message can never carry
/// provider text or a secret. The message is provider detail for diagnostics: drivers pass it
/// through [`Request::redactor`](crate::Request::redactor) before storing it here, and hosts
/// decide whether to show it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunFailure {
    /// The class.
    pub kind: FailureKind,
    /// Redacted provider detail; not part of `Display`.
    pub message: String,
    /// The runtime's program, when the run failed because it could not be started (kind
    /// [`FailureKind::Process`]); part of `Display`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramUnavailable>,
    /// Whether running again may succeed, when the driver knows: a layer that lost its
    /// process says `true` when no side-effecting tool call was in flight and `false` when
    /// one was (its effect may have happened). `None`: the driver does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

impl RunFailure {
    /// A failure of this kind with a (redacted) detail message.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            program: None,
            retryable: None,
        }
    }

    /// A [`FailureKind::Process`] failure: the runtime's program could not be started.
    /// Running again does not help until the host fixes its configuration.
    pub fn program_unavailable(program: ProgramUnavailable) -> Self {
        Self::new(FailureKind::Process, program.to_string())
            .with_program(program)
            .with_retryable(false)
    }

    /// Names the program that could not be started ([`program`](Self::program)).
    pub fn with_program(mut self, program: ProgramUnavailable) -> Self {
        self.program = Some(program);
        self
    }

    /// Says whether running again may succeed ([`retryable`](Self::retryable)).
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self
    }
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)?;
        if let Some(program) = &self.program {
            write!(f, ": {program}")?;
        }
        Ok(())
    }
}
