//! The judgement of a finished turn: clean, failed (and how), or a session Gemini does not
//! know; and the terminal event.
//!
//! Gemini's exit codes (0.61.0): 0 ok, 41 authentication, 42 input (an unknown `--resume`
//! session among them), 44 sandbox, 52 config, 53 turn limit, 54 fatal tool error, 55
//! untrusted directory, 130 cancelled. A model API error exits with the HTTP status (modulo
//! 256, so 401 exits 145) after a `result` event with `status: "error"`, which is what the
//! classification reads.

use driver_cli::Finished;
use driver_spi::{
    DriverError, EventSink, ExitStatus, FailureKind, Request, Response, ResumeRejectReason,
    RunFailure, SessionState,
};
use driver_stream_json::SessionPlan;

use crate::codec::GEMINI_CODEC;
use crate::events::EventTranslator;

/// A turn whose output ended and whose process exited.
pub(crate) struct Outcome<'a> {
    pub(crate) plan: SessionPlan<'a>,
    pub(crate) translator: EventTranslator,
    pub(crate) finished: Finished,
}

/// Whether Gemini refused the `--resume` session: exit 42 (its input-error code) with a
/// message about the session on stderr ("Error resuming session: Invalid session identifier
/// …"). Other input errors (no prompt, say) are not a rejected session.
pub(crate) fn is_unknown_session(status: ExitStatus, stderr: &str) -> bool {
    status == ExitStatus::Code(42) && stderr.to_ascii_lowercase().contains("session")
}

/// The failure class of an exit status without a `result` event.
pub(crate) fn exit_kind(status: ExitStatus) -> FailureKind {
    match status {
        ExitStatus::Code(41) => FailureKind::Authentication,
        ExitStatus::Code(53) => FailureKind::Limit,
        // Input, config and untrusted-directory errors: the run was refused as asked.
        ExitStatus::Code(42 | 52 | 55) => FailureKind::Other,
        status => driver_cli::failure_kind(status).unwrap_or(FailureKind::Process),
    }
}

/// The failure class of a failed `result` event: its `error.type` and message (or the last
/// `error` event's, when the result has none), and the exit status.
pub(crate) fn classify(error_type: &str, message: &str, status: ExitStatus) -> FailureKind {
    match status {
        ExitStatus::Code(41) => return FailureKind::Authentication,
        ExitStatus::Code(53) => return FailureKind::Limit,
        _ => {}
    }
    if error_type.contains("TurnLimited") {
        return FailureKind::Limit;
    }
    if error_type.contains("Authentication") {
        return FailureKind::Authentication;
    }
    let text = message.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if any(&[
        "401",
        "403",
        "unauthenticated",
        "permission_denied",
        "api key",
    ]) {
        FailureKind::Authentication
    } else if any(&["429", "resource_exhausted", "quota", "rate limit"]) {
        FailureKind::RateLimited
    } else {
        FailureKind::Provider
    }
}

/// Judges a finished turn and emits the terminal event.
///
/// - A session Gemini does not know, before `RunStarted`, is
///   [`ResumeRejected`](DriverError::ResumeRejected) with nothing emitted.
/// - A clean turn is a successful exit, a `success` result and (unless stateless) the
///   session id; its response carries a checkpoint (session id plus guard).
/// - Anything else fails: before `RunStarted` as an error, after it as `RunFailed` and a
///   response whose failure is set (partial output and usage kept).
pub(crate) fn judge(
    request: &Request,
    outcome: Outcome<'_>,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let Outcome {
        plan,
        mut translator,
        finished,
    } = outcome;
    if plan.is_resuming()
        && !translator.started()
        && is_unknown_session(finished.status, &finished.stderr_tail)
    {
        return Err(ResumeRejectReason::UnknownSession.into());
    }
    let result = translator.result().cloned();
    let usage = result.as_ref().and_then(|r| r.usage);
    let clean = finished.status.is_success()
        && result.as_ref().is_some_and(|r| r.success)
        && (plan == SessionPlan::Stateless || translator.session_id().is_some());
    if !clean {
        let (kind, message) = match &result {
            Some(r) if !r.success => {
                let message = if r.message.is_empty() {
                    translator
                        .last_error()
                        .unwrap_or("gemini reported an error")
                } else {
                    &r.message
                };
                (
                    classify(&r.error_type, message, finished.status),
                    message.to_owned(),
                )
            }
            _ => match finished.status {
                ExitStatus::Success => (
                    FailureKind::Protocol,
                    "gemini exited without a successful result".to_owned(),
                ),
                status => {
                    let mut message = format!("gemini ended: {status}");
                    let detail = translator
                        .last_error()
                        .unwrap_or(finished.stderr_tail.as_str());
                    if !detail.trim().is_empty() {
                        message.push('\n');
                        message.push_str(detail);
                    }
                    (exit_kind(status), message)
                }
            },
        };
        return driver_cli::fail_turn(
            sink,
            translator.started(),
            RunFailure::new(kind, message),
            finished.status,
            translator.output(),
            usage,
        );
    }

    let checkpoint = translator
        .session_id()
        .filter(|_| plan != SessionPlan::Stateless)
        .map(|id| driver_cli::checkpoint(request, SessionState::new(id), &GEMINI_CODEC));
    let closing = translator.close_open_calls();
    Ok(driver_cli::finish_turn(
        sink,
        closing,
        translator.output(),
        usage,
        checkpoint,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_classified_by_exit_type_and_text() {
        let status = ExitStatus::Code(1);
        // Verbatim `error.message`s of gemini 0.61.0 against the loopback mock.
        let unauthenticated = r#"[API Error: {"error":{"code":401,"message":"mock failure 401","status":"UNAUTHENTICATED"}}]"#;
        assert_eq!(
            classify("unknown", unauthenticated, ExitStatus::Code(145)),
            FailureKind::Authentication
        );
        let quota = "[API Error: mock failure 429]\nPlease wait and try again later. To increase \
                     your limits, request a quota increase through AI Studio";
        assert_eq!(classify("unknown", quota, status), FailureKind::RateLimited);
        assert_eq!(
            classify("FatalTurnLimitedError", "Reached max", ExitStatus::Code(1)),
            FailureKind::Limit
        );
        assert_eq!(
            classify("unknown", "[API Error: boom]", status),
            FailureKind::Provider
        );
        assert_eq!(
            classify("", "", ExitStatus::Code(41)),
            FailureKind::Authentication
        );
        assert_eq!(classify("", "", ExitStatus::Code(53)), FailureKind::Limit);
    }

    #[test]
    fn exit_codes_and_the_unknown_session() {
        assert_eq!(exit_kind(ExitStatus::Code(41)), FailureKind::Authentication);
        assert_eq!(exit_kind(ExitStatus::Code(53)), FailureKind::Limit);
        assert_eq!(exit_kind(ExitStatus::Code(55)), FailureKind::Other);
        assert_eq!(exit_kind(ExitStatus::Code(1)), FailureKind::Process);
        assert_eq!(exit_kind(ExitStatus::Signal(9)), FailureKind::Process);
        assert_eq!(exit_kind(ExitStatus::TimedOut), FailureKind::Timeout);
        // Verbatim from gemini 0.61.0 (`--resume` of a UUID its namespace does not hold).
        let unknown = "Error resuming session: Invalid session identifier \
                       \"1f9c3813-6aa8-448e-8c61-b9a6080c42ad\".";
        assert!(is_unknown_session(ExitStatus::Code(42), unknown));
        assert!(!is_unknown_session(ExitStatus::Code(1), unknown));
        assert!(!is_unknown_session(
            ExitStatus::Code(42),
            "No input provided via stdin."
        ));
    }
}
