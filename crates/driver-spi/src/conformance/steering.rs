//! STR-01: steering a running turn. A driver that declares
//! [`steer`](crate::Capabilities::steer) gets a turn the factory holds open until a follow-up
//! arrives ([`Factory::script_steered_turn`]); the kit sends [`STEER_TEXT`] into it and
//! expects it acknowledged, the turn clean, and one [`DriverEvent::FollowUp`] with the text
//! redacted (it carries the request's secret). A driver that does not declare it gets an
//! ordinary turn with the same follow-up, which must be refused typed, never acknowledged,
//! and show no event.
//!
//! The kit has no timer of its own: a thread releases a held turn after [`BOUND`], so a
//! driver that declares steering but never takes a follow-up fails the clause rather than
//! stalling the kit (as far as the factory's release reaches).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::*;
use crate::{SteerError, steering};

/// The follow-up the kit sends: it carries the kit's new secret, which the event must not.
pub const STEER_TEXT: &str = "kit follow-up: mind kit-canary-secret-new-a93e27";

/// How long a held turn waits for its follow-up before the kit releases it.
const BOUND: Duration = Duration::from_secs(60);

/// Ends a held turn: the factory's release, called by the kit once the follow-up was
/// answered, or by a timer thread after a bound (60 s).
pub type Release = Arc<dyn Fn() + Send + Sync>;

/// A thread that calls `release` after [`BOUND`] unless stopped first.
struct Timer {
    stopped: Arc<(Mutex<bool>, Condvar)>,
}

impl Timer {
    fn start(release: Release) -> Self {
        let stopped = Arc::new((Mutex::new(false), Condvar::new()));
        let shared = Arc::clone(&stopped);
        std::thread::spawn(move || {
            let (lock, signal) = &*shared;
            let guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
            let (stopped, _) = signal
                .wait_timeout_while(guard, BOUND, |stopped| !*stopped)
                .unwrap_or_else(PoisonError::into_inner);
            if !*stopped {
                release();
            }
        });
        Self { stopped }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let (lock, signal) = &*self.stopped;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        signal.notify_all();
    }
}

/// Polls two futures to completion.
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    let (mut out_a, mut out_b) = (None, None);
    std::future::poll_fn(|cx| {
        if out_a.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            out_a = Some(v);
        }
        if out_b.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            out_b = Some(v);
        }
        match (out_a.take(), out_b.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                (out_a, out_b) = (a, b);
                Poll::Pending
            }
        }
    })
    .await
}

impl Kit<'_> {
    /// STR-01 (see the [module docs](self)).
    pub(super) async fn check_steering(&mut self, declared: bool) {
        let release: Release = if declared {
            match self.factory.script_steered_turn() {
                Some(release) => release,
                None => {
                    self.r.skip(
                        Clause::Str01,
                        "steer is declared but the factory scripts no held turn",
                    );
                    return;
                }
            }
        } else {
            Arc::new(|| {})
        };
        self.runs += 1;
        let (steerer, receiver) = steering();
        let request = self
            .factory
            .prepare(self.request(SessionContext::stateless(), &NEW, steer_profile()))
            .with_steering(receiver);
        let steering = request.steering.clone();
        let timer = Timer::start(Arc::clone(&release));
        let sink = Arc::new(CollectingSink::new());
        let run = async {
            let result = CatchUnwind(Box::pin(self.driver.run(request, sink.clone()))).await;
            // The host's part: nothing waits on a turn that ended.
            steering.close();
            result
        };
        let steer = async {
            let answer = steerer.steer(STEER_TEXT).await;
            release();
            answer
        };
        let (result, answer) = join(run, steer).await;
        drop(timer);
        let turn = Turn {
            label: "steered turn",
            events: sink.events(),
            result,
        };
        self.check_events(&turn);
        let shown: Vec<&str> = turn
            .events
            .iter()
            .filter_map(|e| match e {
                DriverEvent::FollowUp { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let verdict = if declared {
            judge_declared(&turn, answer, &shown)
        } else {
            match answer {
                Ok(()) => {
                    Err("a driver that does not declare steer acknowledged a follow-up".into())
                }
                Err(SteerError::Unsupported | SteerError::TurnEnded) if shown.is_empty() => Ok(()),
                Err(e @ (SteerError::Unsupported | SteerError::TurnEnded)) => {
                    Err(format!("refused ({e}) but a follow-up event was emitted"))
                }
                Err(e) => Err(format!(
                    "refused with {e:?}; expected unsupported (or turn ended)"
                )),
            }
        };
        self.r.check(Clause::Str01, verdict);
    }
}

fn judge_declared(
    turn: &Turn,
    answer: Result<(), SteerError>,
    shown: &[&str],
) -> Result<(), String> {
    answer.map_err(|e| format!("the follow-up was refused: {e:?}"))?;
    match turn.response() {
        Some(response) if response.is_clean() => {}
        _ => return Err(format!("the steered turn ended with {}", turn.outcome())),
    }
    match shown {
        [text] if text.contains(NEW.secret) => {
            Err("the follow-up event shows the request's secret".into())
        }
        [text] if text.starts_with("kit follow-up") => Ok(()),
        _ => Err(format!(
            "expected one follow-up event with the (redacted) text; saw {shown:?}"
        )),
    }
}

fn steer_profile() -> ProfilePayload {
    ProfilePayload::new(
        super::kit_fingerprint("exact-steer"),
        super::kit_fingerprint("session-steer"),
    )
}
