//! Following one task on the host: its events forwarded in order, its approval requests
//! relayed to the request's `Approvals`, until its terminal event or its worker's end.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};

use driver_process::peer::RpcPeer;
use driver_spi::{
    ApprovalOutcome, ApprovalQuery, DriverError, DriverEvent, EventSink, FailureKind, FollowUp,
    Request, Response, RunFailure, SteerError, SteerReceiver,
};
use serde_json::Value;
use tokio::sync::mpsc;
use worker_protocol::{Approve, ApproveResult, TaskEvent, WireDecision};

use super::process::Message;

/// How following a task ended other than with a response.
pub(super) enum Ended {
    /// The worker's terminal event was a failure or a stop.
    Error(DriverError),
    /// The worker broke the protocol (an event out of order): the task is still running there.
    Broken(DriverError),
    /// The worker's output ended before the terminal event.
    Lost {
        /// Whether `RunStarted` was forwarded.
        started: bool,
        /// Tool calls started without their result.
        open_calls: usize,
    },
}

type Relay<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What the run's follow-ups do: forwarded to the task (`runtime.steer`) when the wrapped
/// driver steers, refused as unsupported otherwise.
pub(super) struct FollowUps {
    pub(super) receiver: Option<SteerReceiver>,
    pub(super) forward: bool,
}

/// What came next while following a task.
#[allow(
    clippy::large_enum_variant,
    reason = "one value at a time, moved straight out of the follow loop's poll"
)]
enum Next {
    Message(Option<Message>),
    FollowUp(FollowUp),
}

/// Forwards a task's events to `sink`, relays its approval requests and its run's
/// follow-ups, until its terminal event or the worker's end. The relays run inside this
/// future, so dropping it (the run cancelled) closes every open approval request and
/// follow-up at once: a later answer is refused.
pub(super) async fn follow(
    peer: &RpcPeer,
    handle: u64,
    attempt: u32,
    mut messages: mpsc::UnboundedReceiver<Message>,
    request: &Request,
    sink: &dyn EventSink,
    mut follow_ups: FollowUps,
) -> Result<Response, Ended> {
    let mut expected = 0;
    let mut started = false;
    let mut open: HashSet<String> = HashSet::new();
    let mut relays: Vec<Relay<'_>> = Vec::new();
    let mut steer_ids = 0;
    loop {
        let next = std::future::poll_fn(|cx| {
            relays.retain_mut(|relay| relay.as_mut().poll(cx).is_pending());
            if let std::task::Poll::Ready(message) = messages.poll_recv(cx) {
                return std::task::Poll::Ready(Next::Message(message));
            }
            // Receiving a follow-up is cancel-safe: a fresh future each poll loses none.
            match follow_ups.receiver.as_mut() {
                Some(receiver) => std::pin::pin!(receiver.next_follow_up())
                    .poll(cx)
                    .map(Next::FollowUp),
                None => std::task::Poll::Pending,
            }
        })
        .await;
        let next = match next {
            Next::Message(message) => message,
            Next::FollowUp(follow_up) if follow_ups.forward => {
                steer_ids += 1;
                relays.push(Box::pin(super::hot::forward_follow_up(
                    peer, handle, attempt, steer_ids, follow_up,
                )));
                continue;
            }
            Next::FollowUp(follow_up) => {
                follow_up.refuse(SteerError::Unsupported);
                continue;
            }
        };
        let event = match next {
            None => break,
            Some(Message::Approve { id, approve }) => {
                relays.push(Box::pin(relay(peer, id, approve, attempt, request)));
                continue;
            }
            Some(Message::Event(event)) => event,
        };
        if event.seq != expected || event.handle != handle {
            return Err(Ended::Broken(DriverError::Failed(RunFailure::new(
                FailureKind::Protocol,
                format!("worker: event {} where {expected} was due", event.seq),
            ))));
        }
        expected += 1;
        match event.event {
            TaskEvent::Driver { event } => {
                match &event {
                    DriverEvent::RunStarted => started = true,
                    DriverEvent::ToolCallStarted { call_id, .. } => {
                        open.insert(call_id.clone());
                    }
                    DriverEvent::ToolCallResult { call_id, .. } => {
                        open.remove(call_id);
                    }
                    _ => {}
                }
                sink.emit(event);
            }
            TaskEvent::Completed { response } => return Ok(response),
            TaskEvent::Failed { error } => return Err(Ended::Error(error.into_driver_error())),
            _ => return Err(Ended::Error(DriverError::Cancelled)),
        }
    }
    Err(Ended::Lost {
        started,
        open_calls: open.len(),
    })
}

/// Asks the request's `Approvals` about one `runtime.approve` and answers it. The worker's
/// driver already emitted the request's events, so this asks with a sink that only notes the
/// outcome: a timeout is answered `timed_out`, which the worker's own timer turns into its
/// `timed_out` denial.
async fn relay(peer: &RpcPeer, id: Value, approve: Approve, attempt: u32, request: &Request) {
    if approve.attempt != attempt {
        let decision = WireDecision::Deny {
            reason: "an approval request of another attempt: denied".to_owned(),
        };
        answer(peer, id, &approve, decision).await;
        return;
    }
    let mut query = ApprovalQuery::new(approve.action, approve.tool.clone())
        .with_arguments(approve.arguments.clone());
    if let Some(call) = &approve.call_id {
        query = query.with_call_id(call.clone());
    }
    if approve.answerable {
        query = query.answerable();
    }
    let outcome = Outcome::default();
    let decision = request.approvals.ask(request, &outcome, query).await;
    let decision = match outcome.get() {
        Some(ApprovalOutcome::TimedOut) => WireDecision::TimedOut,
        _ => decision.into(),
    };
    answer(peer, id, &approve, decision).await;
}

async fn answer(peer: &RpcPeer, id: Value, approve: &Approve, decision: WireDecision) {
    let result = ApproveResult {
        approval_id: approve.approval_id.clone(),
        attempt: approve.attempt,
        decision,
    };
    let _ = peer
        .respond(id, serde_json::to_value(result).unwrap_or(Value::Null))
        .await;
}

/// A sink that keeps only how the approval request ended.
#[derive(Default)]
struct Outcome(Mutex<Option<ApprovalOutcome>>);

impl Outcome {
    fn get(&self) -> Option<ApprovalOutcome> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventSink for Outcome {
    fn emit(&self, event: DriverEvent) {
        if let DriverEvent::ApprovalResolved { outcome, .. } = event {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        }
    }
}
