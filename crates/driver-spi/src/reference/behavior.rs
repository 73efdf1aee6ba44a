//! What a reference run does: [`Behavior`], queued per run or scripted by the prompt.

#[cfg(doc)]
use crate::{DriverError, reference::ReferenceBackend};
use crate::{DriverEvent, FailureKind, ResumeRejectReason};

/// What one run of the reference driver does. Queue them with
/// [`ReferenceBackend::push_behavior`]; a run with an empty queue replies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Behavior {
    /// Reply `reference turn <n>: <prompt>` in two text deltas (a third, ` [earlier: …]`, names
    /// the session's latest earlier prompts), with a valid checkpoint.
    Reply,
    /// Call a tool (start, arguments, result), then reply.
    CallTool {
        /// Tool name.
        name: String,
        /// Arguments text (no arguments event when empty).
        arguments: String,
        /// Result text.
        result: String,
    },
    /// Use a tool that takes `action`, as the request's policy says: allowed, it runs
    /// ([`ReferenceBackend::performed`]) and its result is `<tool> done`; denied by the
    /// policy, it does not run and its result is an error, without asking; asked, the host
    /// decides (approved: it runs; denied: an error result with the host's reason; answered:
    /// the host's text is the result). Then reply. The tool call is answerable.
    UseTool {
        /// The kind of action.
        action: crate::Action,
        /// Tool name.
        tool: String,
        /// Arguments text.
        arguments: String,
    },
    /// Answer with exactly this text (one delta; none when empty), with a valid checkpoint:
    /// a structured answer, or a malformed one, for a request with an output schema.
    Answer(String),
    /// Start, then fail: emits `RunFailed` and returns [`DriverError::Failed`].
    Fail(FailureKind),
    /// Start, then return a response whose failure is set, exit code 1 and an invalid
    /// checkpoint.
    FailedResponse(FailureKind),
    /// Start, then wait until [`ReferenceBackend::release_stalled`] (then reply) or until the
    /// run future is dropped. Follow-ups the host sends meanwhile
    /// ([`Steering`](crate::Steering)) are delivered and acknowledged, and the reply ends
    /// with ` [follow-up: <text> | …]`.
    Stall,
    /// Reject the resume with this reason before emitting anything.
    RejectResume(ResumeRejectReason),
    /// Emit exactly these events, in order (even if they break the rules), and return a
    /// response whose output is their text; the checkpoint is valid when the last event is
    /// `RunFinished`.
    Events(Vec<DriverEvent>),
}

/// The behaviour a scripted prompt asks for: `/tool <action> <tool> [arguments]` uses a tool,
/// `/answer <text>` answers exactly the text.
pub(super) fn prompt_tool(prompt: &str) -> Option<Behavior> {
    if let Some(text) = prompt.trim().strip_prefix("/answer ") {
        return Some(Behavior::Answer(text.to_owned()));
    }
    let rest = prompt.trim().strip_prefix("/tool ")?;
    let mut words = rest.trim_start().splitn(3, ' ');
    let action = words.next()?.parse().ok()?;
    let tool = words.next().filter(|t| !t.is_empty())?.to_owned();
    let arguments = words.next().unwrap_or("").trim().to_owned();
    Some(Behavior::UseTool {
        action,
        tool,
        arguments,
    })
}
