//! Steering a running turn: the host sends a follow-up message into a run in flight, and the
//! driver delivers it to its runtime, inside the same turn, or refuses it, typed.
//!
//! [`steering`] makes the two ends. The host keeps the [`Steerer`] (cloneable) and puts the
//! [`SteerReceiver`] into the run's request ([`Request::with_steering`]). A driver that
//! declares [`steer`](crate::Capabilities::steer) takes it ([`Steering::take`]) when its turn
//! is running, and for each [`FollowUp`]:
//! - delivers it to the runtime, then [`acknowledges`](FollowUp::acknowledge) it, which emits
//!   [`DriverEvent::FollowUp`] (redacted by the turn's redactor) before the host learns it was
//!   delivered;
//! - or refuses it ([`FollowUp::refuse`]) with a [`SteerError`]: the runtime cannot take one
//!   ([`Unsupported`](SteerError::Unsupported)), or refused it
//!   ([`Refused`](SteerError::Refused)), or the turn ended first
//!   ([`TurnEnded`](SteerError::TurnEnded)).
//!
//! A follow-up is never dropped silently: one still queued when the run's request is dropped
//! answers [`TurnEnded`](SteerError::TurnEnded). A follow-up the host stopped waiting for (its
//! [`Steerer::steer`] future was dropped, say by a timeout) is
//! [abandoned](FollowUp::is_abandoned): a driver skips it rather than deliver it late.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use compat_fingerprint::{Fingerprint, Kind};
//! use driver_spi::{steering, CollectingSink, DriverEvent, ProfilePayload, Redactor, Request, SteerError};
//! use run_service::RunId;
//!
//! # const K: Kind = Kind::new("example 2026-12-05 profile v1");
//! # let fp = Fingerprint::of(K, |e| e.str("p"));
//! let (steerer, receiver) = steering();
//! let request = Request::new(RunId::new("r1"), "fix the bug", ProfilePayload::new(fp, fp))
//!     .with_steering(receiver);
//!
//! // The driver's side, while its turn runs.
//! let sink = CollectingSink::new();
//! let driver = async {
//!     let mut follow_ups = request.steering.take().expect("the host attached steering");
//!     let first = follow_ups.next_follow_up().await;
//!     assert_eq!(first.text(), "only touch src/");
//!     first.acknowledge(&sink, &Redactor::default());
//!     follow_ups.refuse_pending(SteerError::TurnEnded);
//! };
//! let (answer, ()) = tokio::join!(steerer.steer("only touch src/"), driver);
//! assert_eq!(answer, Ok(()));
//! assert_eq!(sink.take(), [DriverEvent::FollowUp { text: "only touch src/".into() }]);
//!
//! // Once the request is gone, nothing can take a follow-up.
//! drop(request);
//! assert_eq!(steerer.steer("too late").await, Err(SteerError::TurnEnded));
//! # });
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::{DriverEvent, EventSink, Redactor};

#[cfg(doc)]
use crate::Request;

/// Why a follow-up was not delivered into the running turn.
///
/// No variant carries provider text: a runtime's refusal message could hold anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SteerError {
    /// The driver's runtime (in its current mode) cannot take a follow-up into a running
    /// turn: it does not declare [`steer`](crate::Capabilities::steer).
    #[error("this runtime cannot take a follow-up into a running turn in its current mode")]
    Unsupported,
    /// No turn is running to take it.
    #[error("no turn is running")]
    NoTurn,
    /// The turn ended before the follow-up was delivered; nothing reached the runtime.
    #[error("the turn ended before the follow-up was delivered")]
    TurnEnded,
    /// The runtime refused the follow-up (Codex answered `turn/steer` with an error, or the
    /// runtime's process could not be written to).
    #[error("the runtime refused the follow-up")]
    Refused,
    /// No acknowledgement came within the host's bound. The follow-up may still have reached
    /// the runtime (it was being written when the time ran out); a driver that has not begun
    /// delivering it skips it.
    #[error("the follow-up was not acknowledged within {after:?}")]
    TimedOut {
        /// The bound.
        after: Duration,
    },
    /// The follow-up's text is empty (or only whitespace).
    #[error("the follow-up is empty")]
    Empty,
}

/// One follow-up message for the running turn, as the driver receives it. It must be
/// [acknowledged](Self::acknowledge) or [refused](Self::refuse); dropped unanswered, the host
/// gets [`SteerError::TurnEnded`].
pub struct FollowUp {
    text: String,
    ack: oneshot::Sender<Result<(), SteerError>>,
}

/// The text is left out: it is the host's words, which may hold a secret until redacted.
impl std::fmt::Debug for FollowUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowUp")
            .field("chars", &self.text.chars().count())
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

impl FollowUp {
    /// The message, as the host wrote it (the runtime gets it so; events get it redacted).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the host stopped waiting for the answer (its bound passed, or it was
    /// cancelled): a driver that has not delivered it yet skips it.
    pub fn is_abandoned(&self) -> bool {
        self.ack.is_closed()
    }

    /// The follow-up reached the runtime: emits [`DriverEvent::FollowUp`] with the text
    /// redacted by `redactor` (the turn's), then tells the host. Returns whether the host was
    /// still waiting.
    pub fn acknowledge(self, sink: &dyn EventSink, redactor: &Redactor) -> bool {
        sink.emit(DriverEvent::FollowUp {
            text: redactor.redact(&self.text).into_owned(),
        });
        self.ack.send(Ok(())).is_ok()
    }

    /// The follow-up was not delivered: the host gets `error`.
    pub fn refuse(self, error: SteerError) {
        let _ = self.ack.send(Err(error));
    }
}

/// The host's end: sends follow-ups into the run whose request holds the paired
/// [`SteerReceiver`]. Clone it to steer from anywhere.
#[derive(Clone)]
pub struct Steerer {
    tx: mpsc::UnboundedSender<FollowUp>,
}

impl std::fmt::Debug for Steerer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steerer")
            .field("closed", &self.tx.is_closed())
            .finish()
    }
}

impl Steerer {
    /// Sends `text` into the running turn and waits until the driver delivered it to the
    /// runtime or refused it. It has no bound of its own: the host bounds it (the `agent`
    /// core's `Thread::steer` answers [`SteerError::TimedOut`]); dropping the future abandons
    /// the follow-up ([`FollowUp::is_abandoned`]).
    ///
    /// # Errors
    /// [`SteerError::Empty`] for an empty text, [`SteerError::TurnEnded`] when the run's
    /// request is gone, and whatever the driver refused it with.
    pub async fn steer(&self, text: impl Into<String>) -> Result<(), SteerError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(SteerError::Empty);
        }
        let (ack, answer) = oneshot::channel();
        self.tx
            .send(FollowUp { text, ack })
            .map_err(|_| SteerError::TurnEnded)?;
        answer.await.unwrap_or(Err(SteerError::TurnEnded))
    }

    /// Whether the run's request is gone, so no follow-up can be taken any more.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A pair of ends for one run: the host's [`Steerer`] and the [`SteerReceiver`] that goes
/// into the run's [`Request`] ([`Request::with_steering`]).
pub fn steering() -> (Steerer, SteerReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Steerer { tx },
        SteerReceiver {
            rx: Some(rx),
            home: None,
        },
    )
}

type Slot = Arc<Mutex<Option<mpsc::UnboundedReceiver<FollowUp>>>>;

/// The driver's end: the follow-ups of one run, in the order the host sent them.
///
/// Taken from a request ([`Steering::take`]), it goes back into the request when dropped, so
/// a second attempt of the same run (the core's start-over after a rejected resume) takes it
/// again, with what is still queued.
#[derive(Debug)]
pub struct SteerReceiver {
    rx: Option<mpsc::UnboundedReceiver<FollowUp>>,
    /// The request's slot it was taken from.
    home: Option<Slot>,
}

impl SteerReceiver {
    /// The next follow-up the host is still waiting for (abandoned ones are skipped). Once no
    /// host can send any more it never resolves, so it fits a `select!` branch as it is.
    pub async fn next_follow_up(&mut self) -> FollowUp {
        while let Some(rx) = self.rx.as_mut() {
            match rx.recv().await {
                Some(follow_up) if follow_up.is_abandoned() => {}
                Some(follow_up) => return follow_up,
                None => break,
            }
        }
        std::future::pending().await
    }

    /// The next follow-up already queued that the host is still waiting for, without waiting.
    pub fn try_next(&mut self) -> Option<FollowUp> {
        let rx = self.rx.as_mut()?;
        while let Ok(follow_up) = rx.try_recv() {
            if !follow_up.is_abandoned() {
                return Some(follow_up);
            }
        }
        None
    }

    /// Refuses every follow-up queued now with `error` (the turn ended:
    /// [`SteerError::TurnEnded`]; the runtime cannot take one: [`SteerError::Unsupported`]).
    pub fn refuse_pending(&mut self, error: SteerError) {
        while let Some(follow_up) = self.try_next() {
            follow_up.refuse(error);
        }
    }
}

impl Drop for SteerReceiver {
    fn drop(&mut self) {
        if let (Some(home), Some(rx)) = (self.home.take(), self.rx.take()) {
            *home.lock().unwrap_or_else(PoisonError::into_inner) = Some(rx);
        }
    }
}

/// Where a [`Request`] carries its run's follow-ups ([`Request::steering`]): empty unless the
/// host attached a [`SteerReceiver`]. Clones of a request share it; one holder at a time
/// takes the receiver.
#[derive(Clone, Default)]
pub struct Steering {
    slot: Option<Slot>,
}

impl std::fmt::Debug for Steering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steering")
            .field("attached", &self.is_attached())
            .finish()
    }
}

impl Steering {
    /// Steering with this receiver.
    pub(crate) fn new(receiver: SteerReceiver) -> Self {
        let mut receiver = receiver;
        Self {
            slot: Some(Arc::new(Mutex::new(receiver.rx.take()))),
        }
    }

    /// Whether the host attached a receiver (it may be taken right now).
    pub fn is_attached(&self) -> bool {
        self.slot.is_some()
    }

    /// Takes the run's follow-ups, for a turn that is running: `None` when the host attached
    /// none, or another holder has them. Dropping the receiver puts it back.
    pub fn take(&self) -> Option<SteerReceiver> {
        let slot = self.slot.as_ref()?;
        let rx = slot.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Some(SteerReceiver {
            rx: Some(rx),
            home: Some(Arc::clone(slot)),
        })
    }

    /// Ends the run's steering, for the host once the run's driver returned: every follow-up
    /// queued now or sent later is refused as [`SteerError::TurnEnded`] (a copy of the
    /// request kept elsewhere, a recorded one say, keeps nothing waiting). A receiver a
    /// driver still holds is not reached.
    pub fn close(&self) {
        let Some(slot) = &self.slot else { return };
        let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(mut rx) = taken {
            rx.close();
            while let Ok(follow_up) = rx.try_recv() {
                follow_up.refuse(SteerError::TurnEnded);
            }
        }
    }

    /// Refuses every follow-up with `error` as it arrives, until dropped: for a driver (or a
    /// mode of one) that cannot deliver follow-ups, run beside its turn (in a `select!`), so
    /// the host learns at once rather than when the run ends. It never resolves; it only
    /// waits when nothing is attached or another holder has the receiver.
    pub async fn refuse_all(&self, error: SteerError) -> std::convert::Infallible {
        if let Some(mut receiver) = self.take() {
            loop {
                receiver.next_follow_up().await.refuse(error);
            }
        }
        std::future::pending().await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::CollectingSink;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_follow_up_queued_when_the_receiver_is_dropped_ends_with_the_turn() {
        runtime().block_on(async {
            let (steerer, receiver) = steering();
            let steering = Steering::new(receiver);
            let waiting = tokio::spawn({
                let steerer = steerer.clone();
                async move { steerer.steer("later").await }
            });
            tokio::task::yield_now().await;
            drop(steering);
            assert_eq!(waiting.await.unwrap(), Err(SteerError::TurnEnded));
            assert!(steerer.is_closed());
        });
    }

    #[test]
    fn closing_refuses_what_is_queued_and_what_comes_later_though_a_copy_lives() {
        runtime().block_on(async {
            let (steerer, receiver) = steering();
            let steering = Steering::new(receiver);
            let kept = steering.clone();
            let queued = tokio::spawn({
                let steerer = steerer.clone();
                async move { steerer.steer("queued").await }
            });
            tokio::task::yield_now().await;
            steering.close();
            assert_eq!(queued.await.unwrap(), Err(SteerError::TurnEnded));
            assert_eq!(steerer.steer("later").await, Err(SteerError::TurnEnded));
            assert!(kept.take().is_none());
        });
    }

    #[test]
    fn a_taken_receiver_goes_back_and_keeps_what_is_queued() {
        runtime().block_on(async {
            let (steerer, receiver) = steering();
            let steering = Steering::new(receiver);
            let first = steering.take().unwrap();
            assert!(steering.take().is_none(), "one holder at a time");
            drop(first);
            let asked = tokio::spawn({
                let steerer = steerer.clone();
                async move { steerer.steer("again").await }
            });
            tokio::task::yield_now().await;
            let mut second = steering.take().expect("given back on drop");
            let follow_up = second.try_next().unwrap();
            assert_eq!(follow_up.text(), "again");
            follow_up.refuse(SteerError::Refused);
            assert_eq!(asked.await.unwrap(), Err(SteerError::Refused));
        });
    }

    #[test]
    fn an_abandoned_follow_up_is_skipped_and_empty_text_is_refused_at_once() {
        runtime().block_on(async {
            let (steerer, mut receiver) = steering();
            assert_eq!(steerer.steer("  ").await, Err(SteerError::Empty));
            // The host gives up before the driver looks.
            let abandoned = steerer.steer("stale");
            tokio::select! {
                biased;
                _ = abandoned => unreachable!("nobody answers it"),
                () = tokio::task::yield_now() => {}
            }
            assert!(
                receiver.try_next().is_none(),
                "the abandoned one is skipped"
            );
            let sink = CollectingSink::new();
            let fresh = async {
                let follow_up = receiver.next_follow_up().await;
                assert!(format!("{follow_up:?}").contains("chars: 5"));
                assert!(!format!("{follow_up:?}").contains("fresh"));
                follow_up.acknowledge(&sink, &Redactor::default())
            };
            let (answer, delivered) = tokio::join!(steerer.steer("fresh"), fresh);
            assert_eq!(answer, Ok(()));
            assert!(delivered);
        });
    }

    #[test]
    fn refuse_all_answers_each_follow_up_as_it_arrives() {
        runtime().block_on(async {
            let (steerer, receiver) = steering();
            let steering = Steering::new(receiver);
            let refusing = steering.refuse_all(SteerError::Unsupported);
            tokio::pin!(refusing);
            for _ in 0..2 {
                let answer = tokio::select! {
                    answer = steerer.steer("go left") => answer,
                    never = &mut refusing => match never {},
                };
                assert_eq!(answer, Err(SteerError::Unsupported));
            }
        });
    }

    #[test]
    fn the_event_is_redacted_and_precedes_the_acknowledgement() {
        runtime().block_on(async {
            let (steerer, mut receiver) = steering();
            let redactor = Redactor::from_iter([run_service::SecretString::from(
                "steer-canary-81kd".to_owned(),
            )]);
            let sink = CollectingSink::new();
            let driver = async {
                let follow_up = receiver.next_follow_up().await;
                assert_eq!(follow_up.text(), "use steer-canary-81kd now");
                follow_up.acknowledge(&sink, &redactor);
            };
            let (answer, ()) = tokio::join!(steerer.steer("use steer-canary-81kd now"), driver);
            assert_eq!(answer, Ok(()));
            assert_eq!(
                sink.take(),
                [DriverEvent::FollowUp {
                    text: "use [REDACTED] now".into()
                }]
            );
        });
    }
}
