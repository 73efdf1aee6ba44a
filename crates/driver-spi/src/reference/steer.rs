//! The reference driver's steering: a stalled run ([`Behavior::Stall`](super::Behavior::Stall))
//! takes follow-ups until it is released, acknowledging each as delivered, and its reply then
//! names them. Any other behaviour ends before it looks: what the host sent is refused as the
//! turn ended (the run's request is dropped with it).

use std::future::Future as _;
use std::pin::pin;
use std::task::Poll;

use crate::{EventSink, Redactor, Request, SteerError};

use super::ReferenceBackend;

/// Stalls until released, delivering the follow-ups that arrive meanwhile; their texts, in
/// order.
pub(super) async fn stall(
    backend: &ReferenceBackend,
    request: &Request,
    sink: &dyn EventSink,
    redactor: &Redactor,
) -> Vec<String> {
    let Some(mut follow_ups) = request.steering.take() else {
        backend.stall().await;
        return Vec::new();
    };
    let mut texts = Vec::new();
    let mut stalled = pin!(backend.stall());
    loop {
        // The release first, then the next follow-up (receiving one is cancel-safe).
        let next = {
            let mut next = pin!(follow_ups.next_follow_up());
            std::future::poll_fn(|cx| {
                if stalled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                next.as_mut().poll(cx).map(Some)
            })
            .await
        };
        let Some(follow_up) = next else { break };
        texts.push(follow_up.text().to_owned());
        follow_up.acknowledge(sink, redactor);
    }
    follow_ups.refuse_pending(SteerError::TurnEnded);
    texts
}

/// The reply's tail that names the follow-ups the turn took (nothing when none).
pub(super) fn tail(follow_ups: &[String]) -> Option<String> {
    (!follow_ups.is_empty()).then(|| format!(" [follow-up: {}]", follow_ups.join(" | ")))
}
