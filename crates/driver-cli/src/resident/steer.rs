//! Follow-ups into a running resident turn ([`ResidentProtocol::steer`]), for the turn's read
//! loop: taken from the request's [`Steering`](driver_spi::Steering) once the prompt was
//! answered (a notification prompt: once written), delivered one at a time, and acknowledged
//! when delivered: a request when answered, a notification when written. A protocol that
//! cannot steer refuses each at once ([`SteerError::Unsupported`]); one that could not be
//! written or was answered with an error is [`SteerError::Refused`]; what is still queued
//! when the turn's reading ends is [`SteerError::TurnEnded`]. None is dropped silently.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use driver_process::peer::{RpcError, RpcPeer};
use driver_spi::{EventSink, FollowUp, Redactor, Request, SteerError, SteerReceiver};
use serde_json::Value;

use super::ResidentProtocol;
use crate::dialect::Translator;
use crate::dialect::events::Tracked;

type Answering = Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send>>;

/// What the follow-ups of a turn asked of the read loop.
pub(super) enum Steered {
    /// The host sent one: deliver it ([`FollowUps::deliver`]).
    Next(FollowUp),
    /// The process answered the request that delivered one.
    Answered(FollowUp, Result<Value, RpcError>),
}

/// The follow-ups of one resident turn.
pub(super) struct FollowUps {
    receiver: Option<SteerReceiver>,
    /// A follow-up sent as a request, awaiting its answer: one at a time.
    answering: Option<(FollowUp, Answering)>,
    steers: bool,
    /// The prompt was delivered: what is left at the end is refused as the turn ended.
    /// Before that (a prompt that could not be written, sent again on a new process) the
    /// receiver goes back to the request with what is queued.
    delivered: bool,
}

impl FollowUps {
    /// The follow-ups of `request`'s turn, spoken by `protocol`.
    pub(super) fn new(request: &Request, protocol: &dyn ResidentProtocol) -> Self {
        Self {
            receiver: request.steering.take(),
            answering: None,
            steers: protocol.steers(),
            delivered: false,
        }
    }

    /// The prompt was delivered.
    pub(super) fn prompt_delivered(&mut self) {
        self.delivered = true;
    }

    /// Whether [`next`](Self::next) may resolve: a receiver, and the turn `running` (its
    /// prompt answered and its `RunStarted` emitted, so a follow-up's event comes after it;
    /// a protocol that cannot steer refuses at once) or an answer awaited.
    pub(super) fn active(&self, running: bool) -> bool {
        self.receiver.is_some() && (running || !self.steers || self.answering.is_some())
    }

    /// The next thing to do about follow-ups (cancel-safe: an awaited answer stays here).
    pub(super) async fn next(&mut self) -> Steered {
        if let Some((_, answer)) = &mut self.answering {
            let result = answer.as_mut().await;
            if let Some((follow_up, _)) = self.answering.take() {
                return Steered::Answered(follow_up, result);
            }
        }
        match &mut self.receiver {
            Some(receiver) => Steered::Next(receiver.next_follow_up().await),
            None => std::future::pending().await,
        }
    }

    /// Sends `follow_up` into the turn with the protocol's call: acknowledged when written,
    /// for a notification; for a request, once [`answered`](Self::answered).
    #[allow(
        clippy::too_many_arguments,
        reason = "one turn's parts, borrowed separately"
    )]
    pub(super) async fn deliver<T: Translator>(
        &mut self,
        follow_up: FollowUp,
        peer: &RpcPeer,
        protocol: &dyn ResidentProtocol,
        (session, turn_id): (Option<&str>, Option<&str>),
        timeout: Duration,
        translator: &mut Tracked<T>,
        (sink, redactor): (&dyn EventSink, &Redactor),
    ) {
        let Some(call) = protocol.steer(session, turn_id, follow_up.text()) else {
            follow_up.refuse(SteerError::Unsupported);
            return;
        };
        if call.notification {
            match peer.notify(call.method, call.wire_params()).await {
                Ok(()) => {
                    translator.steered();
                    follow_up.acknowledge(sink, redactor);
                }
                Err(_) => follow_up.refuse(SteerError::Refused),
            }
            return;
        }
        match peer.send_request(call.method, call.wire_params()).await {
            Ok(answer) => self.answering = Some((follow_up, Box::pin(answer.wait(timeout)))),
            Err(_) => follow_up.refuse(SteerError::Refused),
        }
    }

    /// The turn ended: an answer to a follow-up that already arrived (written with the
    /// turn's last messages) still counts; one that did not is left to [`Drop`].
    pub(super) fn settle<T: Translator>(
        &mut self,
        translator: &mut Tracked<T>,
        shown: (&dyn EventSink, &Redactor),
    ) {
        let Some((_, answer)) = &mut self.answering else {
            return;
        };
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(result) = answer.as_mut().poll(&mut cx)
            && let Some((follow_up, _)) = self.answering.take()
        {
            Self::answered(follow_up, result, translator, shown);
        }
    }

    /// The process answered the request that delivered `follow_up`.
    pub(super) fn answered<T: Translator>(
        follow_up: FollowUp,
        result: Result<Value, RpcError>,
        translator: &mut Tracked<T>,
        (sink, redactor): (&dyn EventSink, &Redactor),
    ) {
        match result {
            Ok(_) => {
                translator.steered();
                follow_up.acknowledge(sink, redactor);
            }
            Err(RpcError::Timeout { timeout, .. }) => {
                follow_up.refuse(SteerError::TimedOut { after: timeout });
            }
            // The refusal's text stays out of logs: it is the runtime's.
            Err(_) => {
                tracing::debug!("the runtime refused a follow-up");
                follow_up.refuse(SteerError::Refused);
            }
        }
    }
}

impl Drop for FollowUps {
    fn drop(&mut self) {
        if !self.delivered {
            return;
        }
        if let Some((follow_up, _)) = self.answering.take() {
            follow_up.refuse(SteerError::TurnEnded);
        }
        if let Some(receiver) = &mut self.receiver {
            receiver.refuse_pending(SteerError::TurnEnded);
        }
    }
}
