//! The worker's side of hot Threads: `runtime.prewarm`, `runtime.steer`, `runtime.holds`,
//! and the `runtime.processesChanged` notification each configured driver's
//! `ProcessLifecycle::changes` drives.
//!
//! Each names its driver or task as `runtime.startTask` does, and a worker's configured
//! drivers all live in its one namespace: a number no `runtime.configure` built here is
//! `NOT_CONFIGURED`, a handle no task had is `UNKNOWN_HANDLE`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use driver_spi::{ApprovalTicket, Approvals, Driver, SteerError};
use serde_json::Value;
use worker_protocol::{
    AbandonSteer, Abandoned, Held, Holds, PROCESSES_CHANGED, Prewarm, PrewarmAnswer,
    ProcessesChanged, ProtocolError, Steer, SteerAnswer,
};

use super::{Out, Worker, params};

fn to_value(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The configured driver `driver`.
fn driver(worker: &Worker, driver: u64) -> Result<Arc<dyn Driver>, ProtocolError> {
    worker
        .drivers()
        .get(&driver)
        .map(|c| Arc::clone(&c.driver))
        .ok_or(ProtocolError::NotConfigured)
}

/// Validates a `runtime.prewarm`; the returned closure, given the request's id, runs the
/// driver's pre-warm and answers with its outcome.
pub(super) fn prewarm(
    worker: &Arc<Worker>,
    raw: Value,
) -> Result<impl FnOnce(Value) + use<>, ProtocolError> {
    let Prewarm {
        driver: number,
        request,
        ..
    } = params(raw)?;
    let driver = driver(worker, number)?;
    // The run's request carries a handler when the host has one; a pre-warm asks nothing, but
    // its request says the same, so it is refused or accepted as the run will be.
    let approvals = if request.body.approvals {
        Approvals::new(Arc::new(DenyAll)).with_timeout(request.approval_timeout())
    } else {
        Approvals::none()
    };
    let request = request.into_request(approvals)?;
    let worker = Arc::clone(worker);
    Ok(move |id: Value| {
        tokio::spawn(async move {
            let result = driver.prewarm(request).await;
            let answer = PrewarmAnswer::from_result(&result);
            let _ = worker.peer.respond(id, to_value(answer)).await;
        });
    })
}

/// A pre-warm's approval handler: nothing runs in a pre-warm, so nothing is asked.
struct DenyAll;

impl driver_spi::ApprovalHandler for DenyAll {
    fn on_request(&self, ticket: ApprovalTicket) {
        let _ = ticket.deny("a pre-warm runs no tool: denied");
    }
}

/// Hands a `runtime.steer` to the task's steering; the answer is written through the task's
/// ordered writer once the driver acknowledged or refused it, so an acknowledgement follows
/// the task's `follow_up` event. A task that is gone, or of another attempt, refuses it as
/// the turn ended; a handle no task ever had is unknown.
pub(super) fn steer(worker: &Arc<Worker>, id: Value, raw: Value) -> Result<(), ProtocolError> {
    let Steer {
        handle,
        attempt,
        text,
        steer_id,
    } = params(raw)?;
    known(worker, handle)?;
    let (abandon, abandoned) = tokio::sync::oneshot::channel::<()>();
    let task = worker
        .tasks()
        .get_mut(&handle)
        .filter(|task| task.attempt == attempt)
        .map(|task| {
            if steer_id != 0 {
                task.steers.insert(steer_id, abandon);
            }
            (task.steerer.clone(), task.events.clone())
        });
    let worker = Arc::clone(worker);
    tokio::spawn(async move {
        let Some((steerer, events)) = task else {
            let refused = SteerAnswer::from_result(Err(SteerError::TurnEnded));
            let _ = worker.peer.respond(id, to_value(refused)).await;
            return;
        };
        // Dropping the steer future abandons the follow-up: the driver skips it unless it
        // began delivering it.
        let result = tokio::select! {
            result = steerer.steer(text) => result,
            Ok(()) = abandoned => Err(SteerError::TimedOut { after: Duration::ZERO }),
        };
        if let Some(task) = worker.tasks().get_mut(&handle) {
            task.steers.remove(&steer_id);
        }
        let answer = to_value(SteerAnswer::from_result(result));
        // Through the writer, after the events before it; straight out once the task ended.
        if let Err(tokio::sync::mpsc::error::SendError(Out::Answer(id, answer))) =
            events.send(Out::Answer(id, answer))
        {
            let _ = worker.peer.respond(id, answer).await;
        }
    });
    Ok(())
}

/// A handle some task had (a task that ended since included).
fn known(worker: &Worker, handle: u64) -> Result<(), ProtocolError> {
    let next = worker.next_handle.load(Ordering::Relaxed);
    if handle == 0 || handle >= next {
        return Err(ProtocolError::UnknownHandle);
    }
    Ok(())
}

/// `runtime.abandonSteer`: abandons a pending follow-up the host stopped waiting for.
pub(super) fn abandon(worker: &Worker, raw: Value) -> Result<Value, ProtocolError> {
    let AbandonSteer { handle, steer_id } = params(raw)?;
    known(worker, handle)?;
    let pending = worker
        .tasks()
        .get_mut(&handle)
        .and_then(|task| task.steers.remove(&steer_id));
    let abandoned = pending.is_some_and(|abandon| abandon.send(()).is_ok());
    Ok(to_value(Abandoned { abandoned }))
}

/// `runtime.holds`: the configured driver's `holds_conversation`.
pub(super) fn holds(worker: &Worker, raw: Value) -> Result<Value, ProtocolError> {
    let Holds {
        driver: number,
        session_id,
    } = params(raw)?;
    let driver = driver(worker, number)?;
    let held = driver
        .process_lifecycle()
        .is_some_and(|lifecycle| lifecycle.holds_conversation(&session_id));
    Ok(to_value(Held { held }))
}

/// Sends `runtime.processesChanged` for the configured driver `number` whenever its
/// `changes()` fires, until the driver (its sender) or the worker is gone.
pub(super) fn watch_changes(worker: &Arc<Worker>, number: u64, driver: &dyn Driver) {
    let Some(mut changes) = driver.process_lifecycle().and_then(|l| l.changes()) else {
        return;
    };
    let worker: Weak<Worker> = Arc::downgrade(worker);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let generation = *changes.borrow_and_update();
            let Some(worker) = worker.upgrade() else {
                return;
            };
            let params = to_value(ProcessesChanged {
                driver: number,
                generation,
            });
            if worker.peer.notify(PROCESSES_CHANGED, params).await.is_err() {
                return;
            }
        }
    });
}
