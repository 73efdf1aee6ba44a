//! Thread events: the driver's typed stream, re-sequenced, timestamped and redacted by the core.

use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use driver_spi::{DriverEvent, EventSink, FailureKind};
use run_service::RunId;
use runtime_env::Redactor;
use tokio::sync::{mpsc, oneshot, watch};

use crate::{RunResult, ThreadError};

/// What happened, as part of one run's event stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThreadEventKind {
    /// The run started. Exactly once, first.
    RunStarted,
    /// A piece of assistant text.
    TextDelta {
        /// The text, redacted.
        delta: String,
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
    /// A run service reported an event.
    ServiceEvent {
        /// The service's id.
        service_id: String,
        /// The event name.
        name: String,
        /// Its payload, redacted.
        data: serde_json::Value,
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
/// after the terminal), numbers and timestamps events, and redacts their text.
pub(crate) struct CoreSink {
    run_id: RunId,
    redactor: Redactor,
    seq: AtomicU64,
    started: AtomicBool,
    ended: AtomicBool,
    // One lock orders numbering and delivery, so seq order is delivery order.
    tx: Mutex<mpsc::UnboundedSender<ThreadEvent>>,
}

impl std::fmt::Debug for CoreSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreSink")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl CoreSink {
    pub(crate) fn new(
        run_id: RunId,
        redactor: Redactor,
        tx: mpsc::UnboundedSender<ThreadEvent>,
    ) -> Self {
        Self {
            run_id,
            redactor,
            seq: AtomicU64::new(0),
            started: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            tx: Mutex::new(tx),
        }
    }

    fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// Emits an event of the core's own (service events, or a closing terminal).
    pub(crate) fn push(&self, kind: ThreadEventKind) {
        let Ok(tx) = self.tx.lock() else { return };
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        if !self.started.swap(true, Ordering::SeqCst) && kind != ThreadEventKind::RunStarted {
            self.send(&tx, ThreadEventKind::RunStarted);
        }
        if kind == ThreadEventKind::RunStarted && self.seq.load(Ordering::SeqCst) > 0 {
            return; // a second start is dropped
        }
        if kind.is_terminal() {
            self.ended.store(true, Ordering::SeqCst);
        }
        self.send(&tx, kind);
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

    /// Whether a terminal event was delivered.
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    pub(crate) fn service_event(&self, event: run_service::RunServiceEvent) {
        let data = serde_json::to_string(&event.data)
            .map(|text| {
                let redacted = self.redact(&text);
                serde_json::from_str(&redacted).unwrap_or(serde_json::Value::String(redacted))
            })
            .unwrap_or(serde_json::Value::Null);
        self.push(ThreadEventKind::ServiceEvent {
            service_id: event.service_id,
            name: event.name,
            data,
        });
    }
}

impl EventSink for CoreSink {
    fn emit(&self, event: DriverEvent) {
        let kind = match event {
            DriverEvent::RunStarted => ThreadEventKind::RunStarted,
            DriverEvent::TextDelta { delta } => ThreadEventKind::TextDelta {
                delta: self.redact(&delta),
            },
            DriverEvent::ToolCallStarted { call_id, name } => {
                ThreadEventKind::ToolCallStarted { call_id, name }
            }
            DriverEvent::ToolCallArguments { call_id, delta } => {
                ThreadEventKind::ToolCallArguments {
                    call_id,
                    delta: self.redact(&delta),
                }
            }
            DriverEvent::ToolCallResult {
                call_id,
                output,
                is_error,
            } => ThreadEventKind::ToolCallResult {
                call_id,
                output: self.redact(&output),
                is_error,
            },
            DriverEvent::RunFinished => ThreadEventKind::RunFinished,
            DriverEvent::RunFailed { kind } => ThreadEventKind::RunFailed { kind },
            // Event kinds added to the SPI later are not forwarded until the core maps them.
            _ => return,
        };
        self.push(kind);
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
