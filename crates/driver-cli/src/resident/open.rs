//! Opening a turn's session on a resident process: the protocol's call, with what the
//! process replays meanwhile read and dropped (never the turn's), and its refusal judged.

use driver_process::peer::{Incoming, RpcError};
use driver_spi::{DriverError, FailureKind, ResumeRejectReason, RunFailure};
use serde_json::Value;
use tokio::time::Instant;

use super::{Call, InFlight, Rejection, Replay, ResidentProcess, ResidentProtocol, rpc_failure};
use crate::dialect::Turn;

/// Sends `call` (which opens a session) and reads what the process replays meanwhile, and,
/// with a settle time, after the answer until it has been quiet that long; every message is
/// dropped (a request refused). The answer, and how many replayed messages were history.
async fn read_replay(
    process: &mut ResidentProcess,
    protocol: &dyn ResidentProtocol,
    call: &Call,
    replay: Replay,
) -> (Result<Value, RpcError>, usize) {
    // Queued for this reader (tagged with a turn of their own), never for the turn.
    process.peer.begin_turn();
    let limit = process.limits.idle_timeout;
    let deadline = Instant::now() + limit;
    let ResidentProcess { peer, incoming, .. } = process;
    let mut history = 0;
    let drop_one = async |message: Incoming, history: &mut usize| match message {
        Incoming::Notification { method, params } => {
            *history += usize::from(protocol.is_history(&method, &params));
        }
        Incoming::Request { id, .. } => {
            let _ = peer
                .respond_error(id, -32601, "not supported while a session opens")
                .await;
        }
    };
    let answer = {
        let sent = async {
            if call.notification {
                return peer
                    .notify(call.method, call.wire_params())
                    .await
                    .map(|()| Value::Null);
            }
            peer.request(call.method, call.wire_params(), limit).await
        };
        let mut sent = std::pin::pin!(sent);
        loop {
            tokio::select! {
                biased;
                answer = &mut sent => break answer,
                message = incoming.recv() => match message {
                    Some(message) => drop_one(message, &mut history).await,
                    // Closed: the request fails with it.
                    None => break sent.await,
                },
            }
        }
    };
    // What was queued before the answer, then, with a settle time, what follows it.
    while let Some(message) = incoming.try_recv() {
        drop_one(message, &mut history).await;
    }
    if let (Ok(_), Some(settle)) = (&answer, replay.settle) {
        loop {
            let wait = settle.min(deadline.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(wait, incoming.recv()).await {
                Ok(Some(message)) if Instant::now() < deadline => {
                    drop_one(message, &mut history).await;
                }
                _ => break,
            }
        }
    }
    // A turn of its own: nothing read so far reaches it.
    peer.begin_turn();
    (answer, history)
}

/// Why a session could not be opened.
pub(super) enum Opened {
    /// The process is gone (its output ended, or writing to it failed): nothing reached it.
    Gone(RunFailure),
    /// The process answered, and the answer ends the turn.
    Refused(DriverError),
}

/// Opens the turn's session on the flight's process, unless it has it loaded or it was named
/// at launch; `None` while the events have not named it.
pub(super) async fn open(
    flight: &mut InFlight,
    protocol: &dyn ResidentProtocol,
    turn: &Turn<'_>,
) -> Result<Option<String>, Opened> {
    let loaded = flight.process().loaded.clone();
    let Some(call) = protocol.open(turn, loaded.as_deref()) else {
        return Ok(loaded);
    };
    if let Some(wait) = protocol.wait_before_open(turn, call.method) {
        tracing::debug!(
            ?wait,
            method = call.method,
            "waiting before the session opens"
        );
        tokio::time::sleep(wait).await;
    }
    // What the process sends while the session opens (ACP's `session/load` replays the whole
    // history, Codex's `thread/resume` its totals) is never the turn's.
    let answer = match protocol.replay(call.method) {
        None => {
            flight.process().peer.begin_opening();
            let answer = flight.process().send(&call).await;
            flight.process().peer.begin_turn();
            answer
        }
        Some(replay) => {
            let (answer, history) = read_replay(flight.process(), protocol, &call, replay).await;
            if answer.is_ok() && replay.empty_is_unknown && history == 0 && turn.plan.is_resuming()
            {
                return Err(Opened::Refused(ResumeRejectReason::UnknownSession.into()));
            }
            answer
        }
    };
    match answer {
        Ok(answer) => protocol.opened(turn, &answer).map(Some).map_err(|_| {
            Opened::Refused(DriverError::Failed(RunFailure::new(
                FailureKind::Protocol,
                format!("resident process: malformed answer to `{}`", call.method),
            )))
        }),
        Err(RpcError::Remote { code, message })
            if turn.plan.is_resuming()
                && protocol.rejection(call.method, code, &message.0)
                    == Rejection::UnknownSession =>
        {
            Err(Opened::Refused(ResumeRejectReason::UnknownSession.into()))
        }
        Err(err @ (RpcError::Write(_) | RpcError::Closed)) => {
            Err(Opened::Gone(rpc_failure(protocol, call.method, err)))
        }
        Err(err) => Err(Opened::Refused(DriverError::Failed(rpc_failure(
            protocol,
            call.method,
            err,
        )))),
    }
}
