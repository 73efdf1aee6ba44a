//! Thread events: the driver's typed stream, re-sequenced, timestamped and redacted by the core.

use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use driver_spi::{DriverEvent, EventSink, FailureKind, PlanEntry};
use redaction::Redactor;
use run_service::RunId;
use tokio::sync::{mpsc, oneshot, watch};

use crate::json_redact::redact_value;
use crate::stream_redact::{Stream, Streams};
use crate::{RunResult, ThreadError};

/// What happened, as part of one run's event stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThreadEventKind {
    /// The run started. Exactly once, first.
    RunStarted,
    /// A piece of assistant text. The deltas of a run join to its text, redacted as a whole:
    /// text that may begin a secret is held back until it is decided, so a delta can arrive
    /// after tool-call events that the driver emitted later than that text.
    TextDelta {
        /// The text, redacted.
        delta: String,
    },
    /// A piece of the model's visible reasoning ("thinking") text; not part of the run's
    /// output. The deltas of a run join to its reasoning, redacted as a whole like
    /// [`TextDelta`](Self::TextDelta)s.
    ReasoningDelta {
        /// The reasoning text, redacted.
        delta: String,
    },
    /// The agent's current plan, whole: it replaces any earlier plan of the run.
    Plan {
        /// The plan's entries, in the agent's order; each entry's content redacted.
        entries: Vec<PlanEntry>,
    },
    /// A tool call began.
    ToolCallStarted {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's arguments.
    ToolCallArguments {
        /// The call's id.
        call_id: String,
        /// The arguments text, redacted.
        delta: String,
    },
    /// A tool call's result.
    ToolCallResult {
        /// The call's id.
        call_id: String,
        /// The output, redacted.
        output: String,
        /// Whether the tool reported an error.
        is_error: bool,
    },
    /// The runtime asks the host to approve an action; the host's
    /// [`ApprovalHandler`](driver_spi::ApprovalHandler) has its ticket.
    ApprovalRequested {
        /// Unique within the run.
        approval_id: String,
        /// The tool call it approves, when the runtime names one.
        call_id: Option<String>,
        /// The kind of action.
        action: driver_spi::Action,
        /// The tool or command name, redacted.
        tool: String,
        /// The arguments, redacted.
        arguments: String,
    },
    /// A follow-up the host sent into the running turn ([`Thread::steer`](crate::Thread::steer))
    /// was delivered to the runtime; the rest of the turn answers the prompt and it.
    FollowUp {
        /// The follow-up, redacted.
        text: String,
    },
    /// An approval request ended.
    ApprovalResolved {
        /// The request.
        approval_id: String,
        /// How it ended.
        outcome: driver_spi::ApprovalOutcome,
    },
    /// A run service reported an event.
    ServiceEvent {
        /// The service's id.
        service_id: String,
        /// The event name.
        name: String,
        /// Its payload, redacted.
        data: serde_json::Value,
    },
    /// Something the host should know that did not fail the run, named by a stable `code`
    /// (for example [`NotPersisted::CODE`](crate::NotPersisted::CODE)).
    Warning {
        /// A stable machine-readable code.
        code: String,
        /// A human-readable explanation, redacted.
        message: String,
    },
    /// The run finished. Terminal.
    RunFinished,
    /// The run failed. Terminal.
    RunFailed {
        /// The failure class.
        kind: FailureKind,
    },
}

impl ThreadEventKind {
    /// Whether this ends the stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::RunFinished | Self::RunFailed { .. })
    }
}

/// One event of a run, with a sequence number and timestamp set by the core (never by the
/// driver): `seq` starts at 0 and increases by one per event of the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ThreadEvent {
    /// Position in the run's stream.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when the core received it.
    pub at_ms: i64,
    /// The run.
    pub run_id: RunId,
    /// What happened.
    pub kind: ThreadEventKind,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The sink the core hands to the driver: it enforces the order (one start first, nothing
/// after the terminal), numbers and timestamps events, and redacts their text, streams as
/// streams: a secret split across deltas, or printed in halves around a tool call, is
/// redacted whole in the joined deltas (see [`crate::stream_redact`] and
/// `redaction::StreamRedactor`).
pub(crate) struct CoreSink {
    run_id: RunId,
    seq: AtomicU64,
    started: AtomicBool,
    ended: AtomicBool,
    // One lock orders redaction, numbering and delivery, so seq order is delivery order.
    state: Mutex<SinkState>,
}

struct SinkState {
    tx: mpsc::UnboundedSender<ThreadEvent>,
    streams: Streams,
    /// The driver's terminal event arrived: the driver may emit nothing more, and the core
    /// sends the run's terminal event itself once the run's outcome (persistence included) is
    /// known ([`CoreSink::finish`]).
    driver_done: bool,
}

impl std::fmt::Debug for CoreSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreSink")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl CoreSink {
    /// A sink for `run_id` whose text is redacted by `redactor`.
    pub(crate) fn new(
        run_id: RunId,
        redactor: Redactor,
        tx: mpsc::UnboundedSender<ThreadEvent>,
    ) -> Self {
        Self {
            run_id,
            seq: AtomicU64::new(0),
            started: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            state: Mutex::new(SinkState {
                tx,
                streams: Streams::new(redactor),
                driver_done: false,
            }),
        }
    }

    /// Emits an event of the core's own (a service event, a warning); not a terminal one,
    /// which only [`finish`](Self::finish) sends.
    pub(crate) fn push(&self, kind: ThreadEventKind) {
        if kind.is_terminal() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        self.deliver(&mut state, kind);
    }

    /// Ends the stream with the run's terminal event, chosen by the core once the outcome is
    /// known (the driver's own terminal event is held back until then). Idempotent.
    pub(crate) fn finish(&self, terminal: ThreadEventKind) {
        if !terminal.is_terminal() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.driver_done = true;
        self.deliver(&mut state, terminal);
    }

    /// Delivers one event: interrupts the open stream first when the event is not its
    /// continuation (a terminal event ends every stream), then numbers and sends it.
    fn deliver(&self, state: &mut SinkState, kind: ThreadEventKind) {
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        if !self.started.swap(true, Ordering::SeqCst) && kind != ThreadEventKind::RunStarted {
            self.send(&state.tx, ThreadEventKind::RunStarted);
        }
        if kind == ThreadEventKind::RunStarted && self.seq.load(Ordering::SeqCst) > 0 {
            return; // a second start is dropped
        }
        let kind = match kind {
            ThreadEventKind::TextDelta { delta } => {
                self.stream_piece(state, Stream::Text, &delta);
                return;
            }
            ThreadEventKind::ReasoningDelta { delta } => {
                self.stream_piece(state, Stream::Reasoning, &delta);
                return;
            }
            ThreadEventKind::ToolCallArguments { call_id, delta } => {
                self.stream_piece(state, Stream::Arguments(call_id), &delta);
                return;
            }
            other => other,
        };
        if kind.is_terminal() {
            for rest in state.streams.finish() {
                self.send_stream(&state.tx, rest);
            }
            self.ended.store(true, Ordering::SeqCst);
        } else if let Some(interrupted) = state.streams.interrupt() {
            self.send_stream(&state.tx, interrupted);
        }
        self.send(&state.tx, kind);
    }

    /// A driver's event: nothing after its terminal event, which is held for
    /// [`finish`](Self::finish).
    fn deliver_driver_event(&self, state: &mut SinkState, kind: ThreadEventKind) {
        if state.driver_done {
            return;
        }
        if kind.is_terminal() {
            state.driver_done = true;
            for rest in state.streams.finish() {
                self.send_stream(&state.tx, rest);
            }
            return;
        }
        self.deliver(state, kind);
    }

    fn stream_piece(&self, state: &mut SinkState, stream: Stream, delta: &str) {
        let (interrupted, ready) = state.streams.push(stream.clone(), delta);
        if let Some(interrupted) = interrupted {
            self.send_stream(&state.tx, interrupted);
        }
        self.send_stream(&state.tx, (stream, ready));
    }

    /// Sends redacted stream text as its delta event; empty text sends nothing.
    fn send_stream(
        &self,
        tx: &mpsc::UnboundedSender<ThreadEvent>,
        (stream, text): (Stream, String),
    ) {
        if text.is_empty() {
            return;
        }
        let kind = match stream {
            Stream::Text => ThreadEventKind::TextDelta { delta: text },
            Stream::Reasoning => ThreadEventKind::ReasoningDelta { delta: text },
            Stream::Arguments(call_id) => ThreadEventKind::ToolCallArguments {
                call_id,
                delta: text,
            },
        };
        self.send(tx, kind);
    }

    fn send(&self, tx: &mpsc::UnboundedSender<ThreadEvent>, kind: ThreadEventKind) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        // A closed receiver means nobody listens any more; the run goes on.
        let _ = tx.send(ThreadEvent {
            seq,
            at_ms: now_ms(),
            run_id: self.run_id.clone(),
            kind,
        });
    }

    pub(crate) fn service_event(&self, event: run_service::RunServiceEvent) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let data = redact_value(state.streams.redactor(), event.data);
        let kind = ThreadEventKind::ServiceEvent {
            service_id: state.streams.redact(&event.service_id),
            name: state.streams.redact(&event.name),
            data,
        };
        self.deliver(&mut state, kind);
    }
}

impl EventSink for CoreSink {
    fn emit(&self, event: DriverEvent) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        // Ids and names pass the known-secret pass too; the same input always gives the same
        // output, so a call's events still share one id.
        let r = |text: &str| state.streams.redact(text);
        let kind = match event {
            DriverEvent::RunStarted => ThreadEventKind::RunStarted,
            DriverEvent::TextDelta { delta } => ThreadEventKind::TextDelta { delta },
            DriverEvent::ReasoningDelta { delta } => ThreadEventKind::ReasoningDelta { delta },
            DriverEvent::Plan { entries } => ThreadEventKind::Plan {
                entries: entries
                    .into_iter()
                    .map(|mut entry| {
                        entry.content = r(&entry.content);
                        entry
                    })
                    .collect(),
            },
            DriverEvent::ToolCallStarted { call_id, name } => ThreadEventKind::ToolCallStarted {
                call_id: r(&call_id),
                name: r(&name),
            },
            DriverEvent::ToolCallArguments { call_id, delta } => {
                ThreadEventKind::ToolCallArguments {
                    call_id: r(&call_id),
                    delta,
                }
            }
            DriverEvent::ToolCallResult {
                call_id,
                output,
                is_error,
            } => ThreadEventKind::ToolCallResult {
                call_id: r(&call_id),
                output: r(&output),
                is_error,
            },
            DriverEvent::ApprovalRequested {
                approval_id,
                call_id,
                action,
                tool,
                arguments,
            } => ThreadEventKind::ApprovalRequested {
                approval_id: r(&approval_id),
                call_id: call_id.as_deref().map(r),
                action,
                tool: r(&tool),
                arguments: r(&arguments),
            },
            DriverEvent::ApprovalResolved {
                approval_id,
                outcome,
            } => ThreadEventKind::ApprovalResolved {
                approval_id: r(&approval_id),
                outcome,
            },
            DriverEvent::FollowUp { text } => ThreadEventKind::FollowUp { text: r(&text) },
            DriverEvent::RunFinished => ThreadEventKind::RunFinished,
            DriverEvent::RunFailed { kind } => ThreadEventKind::RunFailed { kind },
            // Event kinds added to the SPI later are not forwarded until the core maps them.
            _ => return,
        };
        self.deliver_driver_event(&mut state, kind);
    }
}

/// A run in flight: its events as they happen, then its result.
///
/// Dropping the stream before the result cancels the run (leases are released and providers
/// detached; nothing is persisted).
#[derive(Debug)]
pub struct RunStream {
    run_id: RunId,
    events: mpsc::UnboundedReceiver<ThreadEvent>,
    result: Option<oneshot::Receiver<Result<RunResult, ThreadError>>>,
    cancel: watch::Sender<bool>,
}

impl RunStream {
    pub(crate) fn new(
        run_id: RunId,
        events: mpsc::UnboundedReceiver<ThreadEvent>,
        result: oneshot::Receiver<Result<RunResult, ThreadError>>,
        cancel: watch::Sender<bool>,
    ) -> Self {
        Self {
            run_id,
            events,
            result: Some(result),
            cancel,
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The next event, or `None` when the stream ended.
    pub async fn next_event(&mut self) -> Option<ThreadEvent> {
        self.events.recv().await
    }

    /// Waits for the run to end and returns its result; events not read yet are in
    /// [`RunResult::events`].
    pub async fn result(mut self) -> Result<RunResult, ThreadError> {
        let Some(rx) = self.result.take() else {
            return Err(ThreadError::Cancelled);
        };
        let outcome = rx.await.unwrap_or(Err(ThreadError::Cancelled));
        let mut rest = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            rest.push(event);
        }
        outcome.map(|mut result| {
            rest.extend(std::mem::take(&mut result.events));
            result.events = rest;
            result
        })
    }

    /// Cancels the run.
    pub fn cancel(&self) {
        let _ = self.cancel.send(true);
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if self.result.is_some() {
            let _ = self.cancel.send(true);
        }
    }
}

impl futures_core::Stream for RunStream {
    type Item = ThreadEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ThreadEvent>> {
        self.events.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests;
