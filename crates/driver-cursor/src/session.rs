//! Sessions: the Cursor session codec, the plan of one invocation, recognising a chat Cursor
//! does not know, and the judgement of a finished turn.

use driver_cli::Finished;
use driver_spi::{
    CodecError, DriverError, EventSink, ExitStatus, FailureKind, GuardedCodec, Request, Response,
    ResumeRejectReason, RunFailure, SessionCodec, SessionGuard, SessionMode, SessionState,
    Unsupported,
};

use crate::events::EventTranslator;

/// The codec name, part of every Cursor Thread's fingerprint.
pub const CODEC_NAME: &str = "cursor/v1";

fn validate_chat_id(id: &str) -> Result<(), CodecError> {
    if driver_cli::is_safe_id(id) {
        Ok(())
    } else {
        Err(CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of the Cursor driver, named [`CODEC_NAME`]: the chat id (the
/// `session_id` of Cursor's events, which `--resume` takes) and the
/// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored. The codec keeps
/// any id that is safe as one argv element ([`driver_cli::is_safe_id`]); the driver resumes
/// only UUIDs, the shape Cursor documents for `session_id`.
///
/// ```
/// use driver_cursor::CURSOR_CODEC;
/// use driver_spi::{SessionCodec, SessionState};
///
/// let state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
/// let params = CURSOR_CODEC.to_params(Some(&state)).unwrap().unwrap();
/// assert_eq!(params.display_id, state.resume_id);
/// assert!(CURSOR_CODEC.to_params(Some(&SessionState::new("--continue"))).is_err());
/// ```
pub const CURSOR_CODEC: GuardedCodec = GuardedCodec::new(CODEC_NAME, validate_chat_id);

/// What one invocation does with sessions. Cursor has no fork and no "do not persist" flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan<'a> {
    /// A new chat; its id is captured from the events.
    Start,
    /// A new chat whose id is not returned (Cursor still stores it).
    Stateless,
    /// Continue this stored chat (`--resume <id>`).
    Resume(&'a str),
}

/// The plan of `request`. A stored state must be accepted by the codec, be a UUID, and pass
/// the request's guard; this is checked before anything is spawned.
///
/// # Errors
/// [`DriverError::ResumeRejected`] with `MissingState`, `InvalidState` or `GuardMismatch`,
/// and [`Unsupported`] for a fork or an unknown mode.
pub(crate) fn plan(request: &Request) -> Result<Plan<'_>, DriverError> {
    let session = &request.session;
    Ok(match session.mode {
        SessionMode::Stateless => Plan::Stateless,
        SessionMode::ContinueOrStart if session.state.is_none() => Plan::Start,
        SessionMode::ContinueOrStart | SessionMode::ContinueOnly => {
            let state = session
                .state
                .as_ref()
                .ok_or(ResumeRejectReason::MissingState)?;
            if CURSOR_CODEC.to_params(Some(state)).is_err()
                || !driver_cli::is_uuid(&state.resume_id)
            {
                return Err(ResumeRejectReason::InvalidState.into());
            }
            SessionGuard::for_request(request).check(state)?;
            Plan::Resume(state.resume_id.as_str())
        }
        SessionMode::Fork => return Err(Unsupported::Fork.into()),
        _ => return Err(Unsupported::Resume.into()),
    })
}

/// Phrases that say a chat id is unknown, lower-cased.
///
/// Unverified: Cursor documents no message for `--resume` with an unknown id, only that a
/// failed run "exits with a non-zero code and writes an error message to stderr". These are
/// the wordings other CLIs and third-party Cursor wrappers match; the fake CLI prints the
/// first one. Replace them with the real text once a transcript exists.
const UNKNOWN_CHAT: &[&str] = &[
    "chat not found",
    "no chat found",
    "chat does not exist",
    "session not found",
    "no session found",
    "conversation not found",
    "no conversation found",
];

/// Whether `text` (Cursor's stderr) says the chat is unknown.
pub(crate) fn is_unknown_chat(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    UNKNOWN_CHAT.iter().any(|p| lower.contains(p))
}

/// The failure class of a failed turn's text: authentication, rate limits, else `fallback`.
fn classify(text: &str, fallback: FailureKind) -> FailureKind {
    match driver_stream_json::classify_text(text) {
        FailureKind::Provider => fallback,
        kind => kind,
    }
}

/// Judges a turn whose output ended and whose process exited, and emits the terminal event.
///
/// - An unknown chat reported before `RunStarted` is
///   [`ResumeRejected`](DriverError::ResumeRejected) with nothing emitted.
/// - A clean turn is a successful exit, a `success` result that is not `is_error`, and a chat
///   id (unless stateless); its response carries a valid checkpoint (chat id plus guard).
/// - Anything else fails: before `RunStarted` as an error, after it as `RunFailed` and a
///   response whose failure is set (partial output kept).
pub(crate) fn judge(
    request: &Request,
    plan: Plan<'_>,
    translator: &mut EventTranslator,
    finished: Finished,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    if matches!(plan, Plan::Resume(_))
        && !translator.started()
        && is_unknown_chat(&finished.stderr_tail)
    {
        return Err(ResumeRejectReason::UnknownSession.into());
    }
    let result = translator.result().cloned();
    let clean = finished.status.is_success()
        && result.as_ref().is_some_and(|r| r.is_success())
        && (plan == Plan::Stateless || translator.session_id().is_some());
    if !clean {
        let (kind, message) = match (&result, finished.status) {
            (Some(r), _) if !r.is_success() => {
                let text = if r.text.is_empty() {
                    finished.stderr_tail.clone()
                } else {
                    r.text.clone()
                };
                (classify(&text, FailureKind::Provider), text)
            }
            (_, ExitStatus::Success) => (
                FailureKind::Protocol,
                "cursor-agent exited without a successful result and chat id".to_owned(),
            ),
            (_, status) => {
                let fallback = driver_cli::failure_kind(status).unwrap_or(FailureKind::Process);
                let kind = if matches!(status, ExitStatus::Code(_)) {
                    classify(&finished.stderr_tail, fallback)
                } else {
                    fallback
                };
                (kind, finished.stderr_tail.clone())
            }
        };
        // Cursor reports no usage.
        return driver_cli::fail_turn(
            sink,
            translator.started(),
            RunFailure::new(kind, message),
            finished.status,
            translator.output(),
            None,
        );
    }

    let checkpoint = translator
        .session_id()
        .filter(|_| plan != Plan::Stateless)
        .map(|id| driver_cli::checkpoint(request, SessionState::new(id), &CURSOR_CODEC));
    let closing = translator.close_open_calls();
    Ok(driver_cli::finish_turn(
        sink,
        closing,
        translator.output(),
        None,
        checkpoint,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_chat_phrases() {
        assert!(is_unknown_chat(
            "Error: Chat not found: 1f9c3813-6aa8-448e-8c61-b9a6080c42ad"
        ));
        assert!(is_unknown_chat("No conversation found with id x"));
        assert!(!is_unknown_chat("Error: network unreachable"));
        assert!(!is_unknown_chat(""));
    }

    #[test]
    fn classification_keeps_the_fallback_for_plain_errors() {
        assert_eq!(
            classify("401 Unauthorized", FailureKind::Process),
            FailureKind::Authentication
        );
        assert_eq!(
            classify("rate limit exceeded", FailureKind::Process),
            FailureKind::RateLimited
        );
        assert_eq!(
            classify("segfault", FailureKind::Process),
            FailureKind::Process
        );
    }
}
