//! The one event loop and the one judgement of a CLI turn.
//!
//! **The stop rule.** Each stdout line is translated, then checked, then emitted: a batch
//! whose session id contradicts the plan (a resume that reports another session, a new
//! session under another id than the host chose, a fork that reports its parent) or whose
//! start-up report shows a required MCP server not connected is never emitted. Any stop
//! ends the process group first (terminate-then-fail), then reports: `RunFailed` only when
//! `RunStarted` reached the sink.

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{
    DriverError, DriverEvent, EventSink, FailureKind, Response, ResumeRejectReason, RunFailure,
    SessionState,
};
use runtime_env::RuntimeEnv;

use crate::dialect::events::Tracked;
use crate::dialect::session::SessionPlan;
use crate::dialect::{Dialect, Translator, Turn};
use crate::driver::options::CommonOptions as _;
use driver_process::command::CliCommand;
use driver_process::error::ProcessError;
use driver_process::process::CliProcess;
use driver_process::process::Finished;

const SERVER_NAME: Kind = Kind::new("agent-sdk 2026-11-30 driver-stream-json mcp-server-name v1");

/// Why reading a turn's events stopped early.
pub(crate) enum Stop {
    /// The output broke a limit or the protocol.
    Cli(ProcessError),
    /// The CLI reported another session than the plan's.
    OtherSession,
    /// A fork reported its parent: the CLI continued the session instead.
    NotForked,
    /// A required MCP server did not connect.
    McpUnavailable(String),
    /// A resident process's output ended during the turn (it exited or crashed).
    Ended,
    /// A resident process refused the prompt (or did not answer it).
    Refused(RunFailure),
}

/// The stop a reported session id `got` means under `plan`, if any.
pub(crate) fn session_stop(plan: SessionPlan<'_>, got: &str) -> Option<Stop> {
    if plan
        .expected_id()
        .is_some_and(|want| !got.eq_ignore_ascii_case(want))
    {
        return Some(Stop::OtherSession);
    }
    match plan {
        SessionPlan::Fork(parent) if got.eq_ignore_ascii_case(parent) => Some(Stop::NotForked),
        _ => None,
    }
}

/// Spawns `command`, forwards its translated events, and judges the finished turn.
pub(crate) async fn drive<D: Dialect>(
    dialect: &D,
    env: &RuntimeEnv,
    command: CliCommand,
    turn: &Turn<'_>,
    translator: D::Translator,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let mut translator = Tracked::new(translator);
    let mut process = CliProcess::spawn(env, command, dialect.cli().limits)?;
    let required = required_servers(turn.request);
    let mut started = false;
    let stop = read_events(
        &mut process,
        &mut translator,
        turn,
        &required,
        &mut started,
        sink,
    );
    let finished = match stop.await {
        None => process.wait().await,
        Some(stop) => {
            // The process (group included) is ended before the error is reported.
            let finished = process.terminate().await;
            return Err(fail_early(stop, turn.plan, started, &finished, sink));
        }
    };
    match finished {
        Ok(finished) => judge(dialect, turn, translator, &finished, sink),
        Err(err) => {
            let failure = err.to_run_failure(None);
            if translator.started() {
                sink.emit(DriverEvent::RunFailed { kind: failure.kind });
            }
            Err(DriverError::Failed(failure))
        }
    }
}

/// Reads every event and forwards its translation; `Some` when reading stopped early.
/// `started` says whether `RunStarted` reached the sink.
async fn read_events<T: Translator>(
    process: &mut CliProcess,
    translator: &mut Tracked<T>,
    turn: &Turn<'_>,
    required: &[&str],
    started: &mut bool,
    sink: &dyn EventSink,
) -> Option<Stop> {
    let mut gate = Gate::new(turn.plan, required);
    loop {
        let value = match process.next_json().await {
            Ok(Some(value)) => value,
            Ok(None) => return None,
            Err(err) => return Some(Stop::Cli(err)),
        };
        let Ok(events) = translator.translate(&value) else {
            let line = process.line_number();
            return Some(Stop::Cli(ProcessError::MalformedJson { line }));
        };
        if let Some(stop) = gate.check(translator) {
            return Some(stop);
        }
        for event in events {
            sink.emit(event);
        }
        *started = translator.started();
    }
}

/// The stop rule's checks of one translated batch, before it is emitted: the session id
/// against the plan, and (once) the required MCP servers against the start-up report.
pub(crate) struct Gate<'a> {
    plan: SessionPlan<'a>,
    required: &'a [&'a str],
    checked_init: bool,
}

impl<'a> Gate<'a> {
    pub(crate) fn new(plan: SessionPlan<'a>, required: &'a [&'a str]) -> Self {
        Self {
            plan,
            required,
            checked_init: false,
        }
    }

    /// `Some` when the batch must not be emitted and the turn stops.
    pub(crate) fn check<T: Translator>(&mut self, translator: &Tracked<T>) -> Option<Stop> {
        if let Some(stop) = translator
            .session_id()
            .and_then(|got| session_stop(self.plan, got))
        {
            return Some(stop);
        }
        if !self.checked_init
            && let Some(servers) = translator.mcp_servers()
        {
            self.checked_init = true;
            let missing = self.required.iter().find(|name| {
                !servers
                    .iter()
                    .any(|s| s.name == **name && s.status == "connected")
            });
            if let Some(name) = missing {
                return Some(Stop::McpUnavailable((*name).to_owned()));
            }
        }
        None
    }
}

/// The names of the request's required MCP servers.
pub(crate) fn required_servers(request: &driver_spi::Request) -> Vec<&str> {
    request
        .mcp
        .iter()
        .filter(|s| s.required)
        .map(|s| s.name.as_str())
        .collect()
}

/// The error of a turn that stopped early; `RunFailed` first when the run had started.
pub(crate) fn fail_early(
    stop: Stop,
    plan: SessionPlan<'_>,
    started: bool,
    finished: &Finished,
    sink: &dyn EventSink,
) -> DriverError {
    let (kind, error) = match stop {
        Stop::OtherSession if matches!(plan, SessionPlan::Resume(_)) => (
            FailureKind::Protocol,
            DriverError::from(ResumeRejectReason::UnknownSession),
        ),
        Stop::OtherSession => protocol("the CLI reported another session id than it was given"),
        Stop::NotForked => protocol("the CLI continued the session it was asked to fork"),
        Stop::McpUnavailable(name) => {
            let digest = Fingerprint::of(SERVER_NAME, |e| e.str(&name)).short();
            let mut failure = RunFailure::new(
                FailureKind::McpUnavailable,
                format!("required MCP server {digest} did not connect"),
            );
            append_stderr(&mut failure, finished);
            (failure.kind, DriverError::Failed(failure))
        }
        Stop::Cli(err) => {
            let failure = err.to_run_failure(Some(&finished.stderr_tail));
            (failure.kind, DriverError::Failed(failure))
        }
        Stop::Ended => {
            let mut failure = RunFailure::new(
                driver_process::process::failure_kind(finished.status)
                    .unwrap_or(FailureKind::Process),
                format!(
                    "the resident process ended during the turn ({}); the prompt is not sent again",
                    finished.status
                ),
            );
            append_stderr(&mut failure, finished);
            (failure.kind, DriverError::Failed(failure))
        }
        Stop::Refused(mut failure) => {
            append_stderr(&mut failure, finished);
            (failure.kind, DriverError::Failed(failure))
        }
    };
    if started {
        sink.emit(DriverEvent::RunFailed { kind });
    }
    error
}

fn protocol(message: &str) -> (FailureKind, DriverError) {
    (
        FailureKind::Protocol,
        DriverError::Failed(RunFailure::new(FailureKind::Protocol, message)),
    )
}

fn append_stderr(failure: &mut RunFailure, finished: &Finished) {
    if !finished.stderr_tail.trim().is_empty() {
        failure.message.push_str("\nstderr:\n");
        failure.message.push_str(&finished.stderr_tail);
    }
}

/// Judges a turn whose output ended and whose process exited, and emits the terminal event.
///
/// - An unknown session reported before `RunStarted` is
///   [`ResumeRejected`](DriverError::ResumeRejected) with nothing emitted.
/// - A clean turn is a successful exit, a success the CLI reported, and a session id
///   (unless stateless); its response carries a checkpoint (session id, driver data, guard)
///   and, for a request with an output schema, the structured answer the CLI reported apart
///   from its text ([`Translator::structured_output`]).
/// - Anything else fails ([`Dialect::failure`]): before `RunStarted` as an error, after it as
///   `RunFailed` and a response whose failure is set (partial output and usage kept).
pub(crate) fn judge<D: Dialect>(
    dialect: &D,
    turn: &Turn<'_>,
    mut translator: Tracked<D::Translator>,
    finished: &Finished,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let plan = turn.plan;
    if plan.is_resuming() && !translator.started() && dialect.unknown_session(&translator, finished)
    {
        return Err(ResumeRejectReason::UnknownSession.into());
    }
    let usage = translator.usage();
    let stateless = plan == SessionPlan::Stateless;
    let clean = finished.status.is_success()
        && translator.succeeded()
        && (stateless || translator.session_id().is_some());
    if !clean {
        let failure = match (translator.reported_failure(), finished.status.is_success()) {
            (None, true) if translator.succeeded() => {
                RunFailure::new(FailureKind::Protocol, "the CLI reported no session id")
            }
            _ => dialect.failure(&translator, finished),
        };
        return crate::dialect::events::fail_turn(
            sink,
            translator.started(),
            failure,
            finished.status,
            translator.output(),
            usage,
        );
    }
    let checkpoint = translator.session_id().filter(|_| !stateless).map(|id| {
        let mut state = SessionState::new(id);
        for (key, value) in translator.checkpoint_data() {
            state.data.insert(key, value);
        }
        crate::dialect::events::checkpoint(turn.request, state, &dialect.identity().codec)
    });
    let closing = translator.close_open_calls();
    let response =
        crate::dialect::events::finish_turn(sink, closing, translator.output(), usage, checkpoint);
    // The structured answer, when the CLI reports one apart from its text; the core checks
    // it (else the text) against the schema.
    Ok(match translator.structured_output() {
        Some(value) if turn.output_schema().is_some() => response.with_structured_output(value),
        _ => response,
    })
}
