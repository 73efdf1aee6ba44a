//! The host's side of hot Threads through a worker: which conversations the worker's
//! resident processes hold ([`Conversations`], what `holds_conversation` and `changes()`
//! answer), and forwarding a run's follow-ups (`runtime.steer`).
//!
//! # Why a cache, and not a change to `ProcessLifecycle`
//! `ProcessLifecycle::holds_conversation` is a sync look-up the agent makes right after a
//! turn and on its renewal sweeps; asking the worker needs a round trip, which a sync fn on
//! an async runtime cannot wait for without blocking a runtime thread. Rather than change
//! the driver-spi signature for every driver, the host keeps, per driver, the conversations
//! the worker last said it holds:
//! - after a clean run of a driver that keeps processes, the host asks `runtime.holds` for
//!   the run's conversation before the run returns, so the agent's look-up right after the
//!   turn reads a fresh answer;
//! - when the worker sends `runtime.processesChanged` (the wrapped driver's `changes()`
//!   fired: a process ended), the host asks again for every conversation it holds, drops
//!   those no longer held, and only then bumps its own `changes()` generation, so a host
//!   watching it reads the new answers;
//! - a worker that died or was shut down holds nothing: its drivers' entries go at once and
//!   their generation is bumped;
//! - a look-up that answers "held" also asks the worker again in the background (one at a
//!   time per driver), and bumps the generation when the answer turned: a process that died
//!   idle inside the worker, which the wrapped pool sees only when asked, is seen by the next
//!   sweep of a host that watches `changes()`, as in process.
//!
//! The answer may be stale by the time it is read, as the trait allows: at worst a lease is
//! kept until the next notification or renewal sweep, and the store's fencing stays the
//! guard.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use driver_process::peer::RpcPeer;
use driver_spi::{DriverEvent, EventSink, FollowUp, Redactor, SteerError};
use serde_json::Value;
use tokio::sync::watch;
use worker_protocol::{ABANDON_STEER, AbandonSteer, HOLDS, Held, Holds, STEER, Steer, SteerAnswer};

/// How long the host waits for `runtime.holds`: a look-up, answered at once.
const HOLDS_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a forwarded follow-up may wait for the worker's answer at most: the host's
/// caller bounds it first (the agent's `Thread::steer` timeout abandons it), and the task's
/// end refuses it sooner.
const STEER_TIMEOUT: Duration = Duration::from_secs(600);

/// The conversations one driver's worker processes hold, as the worker last answered, and
/// the generation that counts their changes.
pub(crate) struct Conversations {
    driver: u64,
    held: Mutex<HashSet<String>>,
    changes: watch::Sender<u64>,
    /// The worker last asked, for the background re-check.
    peer: Mutex<Weak<RpcPeer>>,
    rechecking: AtomicBool,
    /// Counts the workers lost: an answer asked before a loss is not kept after it.
    losses: AtomicU64,
}

impl Conversations {
    pub(crate) fn new(driver: u64) -> Arc<Self> {
        Arc::new(Self {
            driver,
            held: Mutex::default(),
            changes: watch::Sender::new(0),
            peer: Mutex::default(),
            rechecking: AtomicBool::new(false),
            losses: AtomicU64::new(0),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the worker last said it holds `session_id`; when it did, asks again in the
    /// background and bumps the generation if that changed.
    pub(crate) fn holds(self: &Arc<Self>, session_id: &str) -> bool {
        let held = self.held().contains(session_id);
        if held {
            self.recheck(session_id);
        }
        held
    }

    fn recheck(self: &Arc<Self>, session_id: &str) {
        let peer = self
            .peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade();
        let (Some(peer), Ok(runtime)) = (peer, tokio::runtime::Handle::try_current()) else {
            return;
        };
        if self.rechecking.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = Arc::clone(self);
        let session = session_id.to_owned();
        let losses = self.losses.load(Ordering::Acquire);
        runtime.spawn(async move {
            this.ask_since(&peer, &session, losses).await;
            this.rechecking.store(false, Ordering::Release);
            if !this.held().contains(&session) {
                this.bump();
            }
        });
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn bump(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// Asks the worker whether it holds `session_id`, and keeps the answer (no answer: not
    /// held).
    pub(crate) async fn ask(&self, peer: &Arc<RpcPeer>, session_id: &str) {
        let losses = self.losses.load(Ordering::Acquire);
        self.ask_since(peer, session_id, losses).await;
    }

    /// [`ask`](Self::ask) for a question decided before `losses` workers were lost: the
    /// answer is dropped when one was lost since (a worker being shut down still answers).
    async fn ask_since(&self, peer: &Arc<RpcPeer>, session_id: &str, losses: u64) {
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(peer);
        let held = ask_holds(peer, self.driver, session_id).await;
        let mut set = self.held();
        if self.losses.load(Ordering::Acquire) != losses {
            // The worker that answered is gone: what it held went with it.
            return;
        }
        if held {
            set.insert(session_id.to_owned());
        } else {
            set.remove(session_id);
        }
    }

    /// The worker's processes changed: asks again for every conversation held, then bumps.
    async fn refresh(&self, peer: &Arc<RpcPeer>, losses: u64) {
        let sessions: Vec<String> = self.held().iter().cloned().collect();
        for session in sessions {
            self.ask_since(peer, &session, losses).await;
        }
        self.bump();
    }

    /// The worker is gone: nothing is held.
    fn lost(&self) {
        let mut set = self.held();
        self.losses.fetch_add(1, Ordering::AcqRel);
        set.clear();
        drop(set);
        self.bump();
    }
}

async fn ask_holds(peer: &RpcPeer, driver: u64, session_id: &str) -> bool {
    let params = Holds {
        driver,
        session_id: session_id.to_owned(),
    };
    let params = serde_json::to_value(params).unwrap_or(Value::Null);
    match peer.request(HOLDS, params, HOLDS_TIMEOUT).await {
        Ok(answer) => serde_json::from_value::<Held>(answer).is_ok_and(|h| h.held),
        Err(_) => false,
    }
}

/// The drivers configured in one worker whose conversations the host keeps.
#[derive(Default)]
pub(crate) struct Watchers {
    drivers: Mutex<HashMap<u64, Weak<Conversations>>>,
}

impl Watchers {
    fn drivers(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Weak<Conversations>>> {
        self.drivers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(&self, conversations: &Arc<Conversations>) {
        self.drivers()
            .insert(conversations.driver, Arc::downgrade(conversations));
    }

    /// `runtime.processesChanged` for `driver`: refresh its conversations off the dispatcher.
    pub(crate) fn changed(&self, driver: u64, peer: &Weak<RpcPeer>) {
        let conversations = self.drivers().get(&driver).and_then(Weak::upgrade);
        if let (Some(conversations), Some(peer)) = (conversations, peer.upgrade()) {
            let losses = conversations.losses.load(Ordering::Acquire);
            tokio::spawn(async move { conversations.refresh(&peer, losses).await });
        }
    }

    /// The worker ended: every driver configured in it holds nothing now.
    pub(crate) fn lost(&self) {
        let drivers: Vec<Arc<Conversations>> = self
            .drivers()
            .drain()
            .filter_map(|(_, c)| c.upgrade())
            .collect();
        for conversations in drivers {
            conversations.lost();
        }
    }
}

/// How often a forwarded follow-up looks whether its caller stopped waiting (`FollowUp` has
/// no future for it).
const ABANDON_POLL: Duration = Duration::from_millis(50);

/// Forwards one follow-up of the run to its task in the worker and answers it as the worker
/// does. The worker's driver already emitted the turn's `follow_up` event (forwarded with
/// the task's events), so the acknowledgement here emits nothing more. When the caller stops
/// waiting (its bound passed), the host tells the worker (`runtime.abandonSteer`), which
/// abandons the follow-up there as the caller's own timeout does in process.
pub(super) async fn forward_follow_up(
    peer: &RpcPeer,
    handle: u64,
    attempt: u32,
    steer_id: u64,
    follow_up: FollowUp,
) {
    let steer = Steer {
        handle,
        attempt,
        text: follow_up.text().to_owned(),
        steer_id,
    };
    let params = serde_json::to_value(&steer).unwrap_or(Value::Null);
    let request = peer.request(STEER, params, STEER_TIMEOUT);
    tokio::pin!(request);
    let answer = loop {
        tokio::select! {
            answer = &mut request => break answer,
            () = tokio::time::sleep(ABANDON_POLL) => {
                if follow_up.is_abandoned() {
                    let abandon = AbandonSteer { handle, steer_id };
                    let params = serde_json::to_value(abandon).unwrap_or(Value::Null);
                    let _ = peer.request(ABANDON_STEER, params, HOLDS_TIMEOUT).await;
                    return;
                }
            }
        }
    };
    let answer = match answer {
        Ok(answer) => serde_json::from_value::<SteerAnswer>(answer)
            .map_or(Err(SteerError::Refused), SteerAnswer::into_result),
        // The worker is gone: its turn with it.
        Err(_) => Err(SteerError::TurnEnded),
    };
    match answer {
        Ok(()) => {
            follow_up.acknowledge(&Discard, &Redactor::default());
        }
        Err(error) => follow_up.refuse(error),
    }
}

/// A sink for an event already forwarded from the worker.
struct Discard;

impl EventSink for Discard {
    fn emit(&self, _: DriverEvent) {}
}
