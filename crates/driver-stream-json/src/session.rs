//! Sessions as both CLIs handle them: the host chooses a new session's id
//! (`--session-id`), continues one with `--resume`, branches one with `--resume
//! --fork-session`; and the judgement of a finished turn.

use driver_spi::{
    DriverError, DriverEvent, EventSink, ExitStatus, FailureKind, GuardedCodec, Request, Response,
    ResumeRejectReason, RunFailure, SessionCodec, SessionGuard, SessionMode, SessionState,
    Unsupported,
};

use crate::events::TurnResult;
use crate::turn::TurnOutput;

/// What one invocation does with sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionPlan<'a> {
    /// A new, persisted session under this host-chosen id (`--session-id`).
    Start(&'a str),
    /// A new session that is not persisted.
    Stateless,
    /// Continue this stored session (`--resume`).
    Resume(&'a str),
    /// Branch a new session from this stored one (`--resume … --fork-session`).
    Fork(&'a str),
}

impl<'a> SessionPlan<'a> {
    /// The plan of `request` under `codec`; a new session gets `new_id`.
    ///
    /// A stored state must be accepted by the codec, be a UUID (both CLIs take other strings
    /// for session *titles*), and pass the request's [`SessionGuard`]; this is checked before
    /// anything is spawned.
    ///
    /// # Errors
    /// [`DriverError::ResumeRejected`] with `MissingState`, `InvalidState` or `GuardMismatch`,
    /// and [`Unsupported::Resume`] for an unknown mode.
    pub fn of(
        request: &'a Request,
        codec: &GuardedCodec,
        new_id: &'a str,
    ) -> Result<Self, DriverError> {
        let session = &request.session;
        Ok(match session.mode {
            SessionMode::Stateless => Self::Stateless,
            SessionMode::ContinueOrStart if session.state.is_none() => Self::Start(new_id),
            SessionMode::ContinueOrStart | SessionMode::ContinueOnly => {
                Self::Resume(stored_id(request, codec, session.state.as_ref())?)
            }
            SessionMode::Fork => Self::Fork(stored_id(request, codec, session.state.as_ref())?),
            _ => return Err(Unsupported::Resume.into()),
        })
    }

    /// Whether the invocation continues a stored session (resume or fork).
    pub fn is_resuming(self) -> bool {
        matches!(self, Self::Resume(_) | Self::Fork(_))
    }

    /// The session flags: `--session-id <id>`, `--resume <id>`, `--resume <id>
    /// --fork-session`, or `stateless_flag` (which differs between the CLIs).
    pub fn flags(self, stateless_flag: Option<&str>) -> Vec<String> {
        match self {
            Self::Start(id) => vec!["--session-id".to_owned(), id.to_owned()],
            Self::Stateless => stateless_flag.map(str::to_owned).into_iter().collect(),
            Self::Resume(id) => vec!["--resume".to_owned(), id.to_owned()],
            Self::Fork(id) => vec![
                "--resume".to_owned(),
                id.to_owned(),
                "--fork-session".to_owned(),
            ],
        }
    }
}

fn stored_id<'r>(
    request: &Request,
    codec: &GuardedCodec,
    state: Option<&'r SessionState>,
) -> Result<&'r str, DriverError> {
    let state = state.ok_or(ResumeRejectReason::MissingState)?;
    if codec.to_params(Some(state)).is_err() || !driver_cli::is_uuid(&state.resume_id) {
        return Err(ResumeRejectReason::InvalidState.into());
    }
    SessionGuard::for_request(request).check(state)?;
    Ok(state.resume_id.as_str())
}

/// What a driver decided about a finished turn before the shared judgement.
#[derive(Debug, Clone, Copy)]
pub struct Judgement<'a> {
    /// The session plan the turn ran with.
    pub plan: SessionPlan<'a>,
    /// Whether the CLI said, in its own words, that it does not know the session (each CLI
    /// says it differently).
    pub unknown_session: bool,
    /// The driver's codec, to validate the checkpoint.
    pub codec: &'a GuardedCodec,
    /// The failure class of a failed `result` event.
    pub classify: fn(&TurnResult) -> FailureKind,
}

/// Judges a turn whose output ended and whose process exited, and emits the terminal event.
///
/// - An unknown session reported before `RunStarted` is
///   [`ResumeRejected`](DriverError::ResumeRejected) with nothing emitted.
/// - A started or resumed session must report the id it was given; a resume that reports
///   another is rejected (the CLI started a new session instead).
/// - A clean turn is a successful exit, a `success` result that is not `is_error`, and a
///   session id; its response carries a valid checkpoint (session id plus guard).
/// - Anything else fails: before `RunStarted` as an error, after it as `RunFailed` and a
///   response whose failure is set (partial output and usage kept).
///
/// # Errors
/// As above.
pub fn judge(
    request: &Request,
    judgement: Judgement<'_>,
    output: TurnOutput,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let mut translator = output.translator;
    let finished = output.finished;
    let plan = judgement.plan;
    if plan.is_resuming() && !translator.started() && judgement.unknown_session {
        return Err(ResumeRejectReason::UnknownSession.into());
    }
    let expected = match plan {
        SessionPlan::Start(id) | SessionPlan::Resume(id) => Some(id),
        _ => None,
    };
    if let (Some(want), Some(got)) = (expected, translator.session_id())
        && !got.eq_ignore_ascii_case(want)
    {
        if translator.started() {
            sink.emit(DriverEvent::RunFailed {
                kind: FailureKind::Protocol,
            });
        }
        return Err(if matches!(plan, SessionPlan::Resume(_)) {
            ResumeRejectReason::UnknownSession.into()
        } else {
            DriverError::Failed(RunFailure::new(
                FailureKind::Protocol,
                "the CLI reported another session id than the one it was given",
            ))
        });
    }

    let result = translator.result().cloned();
    let clean = finished.status.is_success()
        && result.as_ref().is_some_and(TurnResult::is_success)
        && (plan == SessionPlan::Stateless || translator.session_id().is_some());
    if !clean {
        let (kind, message) = match (&result, translator.error()) {
            (Some(r), _) if !r.is_success() => ((judgement.classify)(r), r.failure_text()),
            (_, Some(error)) => (FailureKind::Provider, error.to_owned()),
            _ => match finished.status {
                ExitStatus::Success => (
                    FailureKind::Protocol,
                    "the CLI exited without a successful result".to_owned(),
                ),
                status => (
                    driver_cli::failure_kind(status).unwrap_or(FailureKind::Process),
                    finished.stderr_tail.clone(),
                ),
            },
        };
        return driver_cli::fail_turn(
            sink,
            translator.started(),
            RunFailure::new(kind, message),
            finished.status,
            translator.output(),
            result.and_then(|r| r.usage),
        );
    }

    let checkpoint = translator
        .session_id()
        .filter(|_| plan != SessionPlan::Stateless)
        .map(|id| driver_cli::checkpoint(request, SessionState::new(id), judgement.codec));
    let closing = translator.close_open_calls();
    Ok(driver_cli::finish_turn(
        sink,
        closing,
        translator.output(),
        result.and_then(|r| r.usage),
        checkpoint,
    ))
}

/// A failure class from an error text: authentication, rate limits, else a provider error.
pub fn classify_text(text: &str) -> FailureKind {
    let lower = text.to_ascii_lowercase();
    if lower.contains("401")
        || lower.contains("unauthorized")
        || lower.contains("authentication")
        || lower.contains("api key")
    {
        FailureKind::Authentication
    } else if lower.contains("429") || lower.contains("rate limit") {
        FailureKind::RateLimited
    } else {
        FailureKind::Provider
    }
}
