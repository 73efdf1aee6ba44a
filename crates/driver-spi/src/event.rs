//! The typed event stream a driver emits through an [`EventSink`], and the order rules it
//! obeys ([`check_sequence`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::{Action, ApprovalOutcome, FailureKind};

/// One event of a run, as a driver emits it.
///
/// Events carry no sequence number and no timestamp: the core assigns both when it receives
/// them, so a driver cannot get them wrong.
///
/// # Order
/// A run emits either nothing (it failed before starting and returns an error), or:
/// 1. [`RunStarted`](Self::RunStarted), exactly once, first;
/// 2. any number of [`TextDelta`](Self::TextDelta)s,
///    [`ReasoningDelta`](Self::ReasoningDelta)s, [`Plan`](Self::Plan)s (each replaces the
///    run's earlier plan) and tool-call lifecycles:
///    [`ToolCallStarted`](Self::ToolCallStarted), then its
///    [`ToolCallArguments`](Self::ToolCallArguments), then its
///    [`ToolCallResult`](Self::ToolCallResult);
///    and approvals: [`ApprovalRequested`](Self::ApprovalRequested), then its one
///    [`ApprovalResolved`](Self::ApprovalResolved) (all resolved before `RunFinished`);
///    and [`FollowUp`](Self::FollowUp)s, one per follow-up delivered into the turn;
/// 3. exactly one terminal event, last: [`RunFinished`](Self::RunFinished) when `run` returns
///    a clean response (every tool call closed by then), otherwise
///    [`RunFailed`](Self::RunFailed).
///
/// If the run future is dropped (cancellation), the stream simply stops; the core closes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DriverEvent {
    /// The run started.
    RunStarted,
    /// A piece of assistant text; never empty.
    TextDelta {
        /// The text.
        delta: String,
    },
    /// A piece of the model's visible reasoning ("thinking") text, as the runtime shows it
    /// (ACP `agent_thought_chunk`); never empty. It is not part of the run's output.
    ReasoningDelta {
        /// The reasoning text.
        delta: String,
    },
    /// The agent's current plan, whole (ACP `plan`): it replaces any earlier plan of the run.
    Plan {
        /// The plan's entries, in the agent's order.
        entries: Vec<PlanEntry>,
    },
    /// A tool call began.
    ToolCallStarted {
        /// Id unique within the run.
        call_id: String,
        /// Tool name.
        name: String,
    },
    /// A piece of a started tool call's arguments; never empty.
    ToolCallArguments {
        /// The call.
        call_id: String,
        /// The piece.
        delta: String,
    },
    /// A started tool call's result; closes the call.
    ToolCallResult {
        /// The call.
        call_id: String,
        /// The result text.
        output: String,
        /// Whether the tool reported an error.
        is_error: bool,
    },
    /// The runtime asks the host to approve an action (see
    /// [`Approvals::ask`](crate::Approvals::ask)).
    ApprovalRequested {
        /// Unique within the run.
        approval_id: String,
        /// The tool call it approves, when the runtime names one.
        call_id: Option<String>,
        /// The kind of action.
        action: Action,
        /// The tool or command name, redacted.
        tool: String,
        /// The arguments, redacted.
        arguments: String,
    },
    /// A follow-up message the host sent while the turn ran was delivered into it
    /// ([`Steering`](crate::Steering)); the rest of the turn answers the prompt and it.
    FollowUp {
        /// The message, redacted by the turn's redactor.
        text: String,
    },
    /// An approval request ended; closes it.
    ApprovalResolved {
        /// The request.
        approval_id: String,
        /// How it ended.
        outcome: ApprovalOutcome,
    },
    /// Terminal: the run finished cleanly.
    RunFinished,
    /// Terminal: the run failed.
    RunFailed {
        /// The failure class.
        kind: FailureKind,
    },
}

impl DriverEvent {
    /// A [`DriverEvent::TextDelta`].
    pub fn text(delta: impl Into<String>) -> Self {
        Self::TextDelta {
            delta: delta.into(),
        }
    }

    /// A [`DriverEvent::ReasoningDelta`].
    pub fn reasoning(delta: impl Into<String>) -> Self {
        Self::ReasoningDelta {
            delta: delta.into(),
        }
    }

    /// A [`DriverEvent::Plan`].
    pub fn plan(entries: impl Into<Vec<PlanEntry>>) -> Self {
        Self::Plan {
            entries: entries.into(),
        }
    }

    /// A [`DriverEvent::ToolCallStarted`].
    pub fn tool_call_started(call_id: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ToolCallStarted {
            call_id: call_id.into(),
            name: name.into(),
        }
    }

    /// A [`DriverEvent::ToolCallArguments`].
    pub fn tool_call_arguments(call_id: impl Into<String>, delta: impl Into<String>) -> Self {
        Self::ToolCallArguments {
            call_id: call_id.into(),
            delta: delta.into(),
        }
    }

    /// A [`DriverEvent::ToolCallResult`].
    pub fn tool_call_result(
        call_id: impl Into<String>,
        output: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolCallResult {
            call_id: call_id.into(),
            output: output.into(),
            is_error,
        }
    }

    /// Whether this is a terminal event.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::RunFinished | Self::RunFailed { .. })
    }
}

/// One entry of a [`DriverEvent::Plan`]: a task the agent means to do, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PlanEntry {
    /// What the task is, in the agent's words.
    pub content: String,
    /// How far it got.
    pub status: PlanStatus,
    /// How important the agent says it is.
    pub priority: PlanPriority,
}

impl PlanEntry {
    /// An entry.
    pub fn new(content: impl Into<String>, status: PlanStatus, priority: PlanPriority) -> Self {
        Self {
            content: content.into(),
            status,
            priority,
        }
    }
}

/// How far a [`PlanEntry`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// How important a [`PlanEntry`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanPriority {
    /// High.
    High,
    /// Medium.
    Medium,
    /// Low.
    Low,
}

/// Where a driver emits its events. Object-safe; the core's implementation stamps sequence
/// numbers and timestamps and forwards them to the caller.
///
/// `emit` must not block for long: a driver calls it from its run future.
pub trait EventSink: Send + Sync {
    /// Receives one event.
    fn emit(&self, event: DriverEvent);
}

/// An [`EventSink`] that keeps every event, for tests.
#[derive(Debug, Default)]
pub struct CollectingSink {
    events: Mutex<Vec<DriverEvent>>,
}

impl CollectingSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the events received so far.
    pub fn events(&self) -> Vec<DriverEvent> {
        self.lock().clone()
    }

    /// Removes and returns the events received so far.
    pub fn take(&self) -> Vec<DriverEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// How many events were received.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no event was received.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<DriverEvent>> {
        // A panic while pushing leaves a valid Vec: keep going with it.
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventSink for CollectingSink {
    fn emit(&self, event: DriverEvent) {
        self.lock().push(event);
    }
}

/// How an event sequence breaks the order rules of [`DriverEvent`]. Indices count from 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// There is no `RunStarted`.
    #[error("no run-started event")]
    MissingStart,
    /// The first event is not `RunStarted`.
    #[error("event {index} comes before run-started")]
    StartNotFirst {
        /// The offending event.
        index: usize,
    },
    /// A second `RunStarted`.
    #[error("event {index} is a second run-started")]
    DuplicateStart {
        /// The offending event.
        index: usize,
    },
    /// There is no terminal event.
    #[error("no terminal event")]
    MissingTerminal,
    /// A second terminal event.
    #[error("event {index} is a second terminal event")]
    DuplicateTerminal {
        /// The offending event.
        index: usize,
    },
    /// A non-terminal event after the terminal one.
    #[error("event {index} comes after the terminal event")]
    AfterTerminal {
        /// The offending event.
        index: usize,
    },
    /// An empty text, reasoning or argument delta.
    #[error("event {index} has an empty delta")]
    EmptyDelta {
        /// The offending event.
        index: usize,
    },
    /// A tool-call id that is empty or already used.
    #[error("event {index} starts a tool call with an empty or reused id")]
    BadToolCallId {
        /// The offending event.
        index: usize,
    },
    /// Arguments or a result for a tool call that is not open.
    #[error("event {index} refers to a tool call that is not open")]
    ToolCallNotOpen {
        /// The offending event.
        index: usize,
    },
    /// `RunFinished` while a tool call is still open.
    #[error("run finished with {open} tool call(s) still open")]
    UnclosedToolCall {
        /// How many were open.
        open: usize,
    },
    /// An approval request with an empty or reused id, or a resolution of a request that is
    /// not pending.
    #[error("event {index} breaks an approval request's lifecycle")]
    ApprovalLifecycle {
        /// The offending event.
        index: usize,
    },
    /// `RunFinished` while an approval request is pending.
    #[error("run finished with {pending} approval request(s) pending")]
    PendingApproval {
        /// How many were pending.
        pending: usize,
    },
}

impl SequenceError {
    /// Which rule was broken: `start`, `terminal`, `after_terminal` or `lifecycle`.
    pub fn rule(&self) -> SequenceRule {
        match self {
            Self::MissingStart | Self::StartNotFirst { .. } | Self::DuplicateStart { .. } => {
                SequenceRule::Start
            }
            Self::MissingTerminal | Self::DuplicateTerminal { .. } => SequenceRule::Terminal,
            Self::AfterTerminal { .. } => SequenceRule::AfterTerminal,
            Self::EmptyDelta { .. }
            | Self::BadToolCallId { .. }
            | Self::ToolCallNotOpen { .. }
            | Self::UnclosedToolCall { .. }
            | Self::ApprovalLifecycle { .. }
            | Self::PendingApproval { .. } => SequenceRule::Lifecycle,
        }
    }
}

/// The rule a [`SequenceError`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SequenceRule {
    /// Exactly one `RunStarted`, first.
    Start,
    /// Exactly one terminal event.
    Terminal,
    /// Nothing after the terminal event.
    AfterTerminal,
    /// Deltas (text, reasoning, arguments) are non-empty; tool calls open once, then get arguments and one result, and are
    /// all closed before `RunFinished`; so are approval requests, resolved once each.
    Lifecycle,
}

/// Checks a complete event sequence against the order rules of [`DriverEvent`] and returns the
/// first violation, by rule in this order: start, terminal count, nothing after the terminal,
/// lifecycles.
///
/// An empty sequence is a [`SequenceError::MissingStart`]; callers that accept "no events"
/// for a run that failed before starting check for that first.
///
/// ```
/// use driver_spi::{check_sequence, DriverEvent, SequenceError};
///
/// let good = [DriverEvent::RunStarted, DriverEvent::text("hi"), DriverEvent::RunFinished];
/// assert_eq!(check_sequence(&good), Ok(()));
/// let late = [DriverEvent::RunStarted, DriverEvent::RunFinished, DriverEvent::text("late")];
/// assert_eq!(check_sequence(&late), Err(SequenceError::AfterTerminal { index: 2 }));
/// ```
pub fn check_sequence(events: &[DriverEvent]) -> Result<(), SequenceError> {
    check_start(events)?;
    let terminal = check_terminal(events)?;
    if terminal + 1 < events.len() {
        return Err(SequenceError::AfterTerminal {
            index: terminal + 1,
        });
    }
    check_lifecycles(events)
}

pub(crate) fn check_start(events: &[DriverEvent]) -> Result<(), SequenceError> {
    let mut starts = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, DriverEvent::RunStarted))
        .map(|(i, _)| i);
    match starts.next() {
        None => Err(SequenceError::MissingStart),
        Some(0) => match starts.next() {
            Some(index) => Err(SequenceError::DuplicateStart { index }),
            None => Ok(()),
        },
        Some(_) => Err(SequenceError::StartNotFirst { index: 0 }),
    }
}

/// Returns the index of the single terminal event.
pub(crate) fn check_terminal(events: &[DriverEvent]) -> Result<usize, SequenceError> {
    let mut terminals = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_terminal())
        .map(|(i, _)| i);
    let first = terminals.next().ok_or(SequenceError::MissingTerminal)?;
    match terminals.next() {
        Some(index) => Err(SequenceError::DuplicateTerminal { index }),
        None => Ok(first),
    }
}

pub(crate) fn check_lifecycles(events: &[DriverEvent]) -> Result<(), SequenceError> {
    #[derive(PartialEq)]
    enum Call {
        Open,
        Closed,
    }
    let mut calls: BTreeMap<&str, Call> = BTreeMap::new();
    let mut approvals: BTreeMap<&str, Call> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        match event {
            DriverEvent::ApprovalRequested { approval_id, .. }
                if approval_id.is_empty()
                    || approvals.insert(approval_id, Call::Open).is_some() =>
            {
                return Err(SequenceError::ApprovalLifecycle { index });
            }
            DriverEvent::ApprovalResolved { approval_id, .. } => {
                match approvals.get_mut(approval_id.as_str()) {
                    Some(state @ Call::Open) => *state = Call::Closed,
                    _ => return Err(SequenceError::ApprovalLifecycle { index }),
                }
            }
            DriverEvent::TextDelta { delta } | DriverEvent::ReasoningDelta { delta }
                if delta.is_empty() =>
            {
                return Err(SequenceError::EmptyDelta { index });
            }
            DriverEvent::ToolCallStarted { call_id, .. }
                if call_id.is_empty() || calls.insert(call_id, Call::Open).is_some() =>
            {
                return Err(SequenceError::BadToolCallId { index });
            }
            DriverEvent::ToolCallArguments { call_id, delta } => {
                if calls.get(call_id.as_str()) != Some(&Call::Open) {
                    return Err(SequenceError::ToolCallNotOpen { index });
                }
                if delta.is_empty() {
                    return Err(SequenceError::EmptyDelta { index });
                }
            }
            DriverEvent::ToolCallResult { call_id, .. } => match calls.get_mut(call_id.as_str()) {
                Some(state @ Call::Open) => *state = Call::Closed,
                _ => return Err(SequenceError::ToolCallNotOpen { index }),
            },
            DriverEvent::RunFinished => {
                let open = calls.values().filter(|c| **c == Call::Open).count();
                if open > 0 {
                    return Err(SequenceError::UnclosedToolCall { open });
                }
                let pending = approvals.values().filter(|c| **c == Call::Open).count();
                if pending > 0 {
                    return Err(SequenceError::PendingApproval { pending });
                }
            }
            _ => {}
        }
    }
    Ok(())
}
