//! The peer's side of what the process starts: the bounded [`Inbox`] the driver reads, and
//! [`Listening`], the reader's state that decides what reaches it (this turn's messages),
//! what is dropped (a session's replay, anything between turns) and when a process that
//! will not stop writing between turns is ended.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use super::Incoming;

/// How many messages the peer may have started that the driver has not read yet; past it the
/// reader waits, and so does the peer on its full pipe.
pub(super) const QUEUE: usize = 256;

/// Whether the peer is serving a turn, which turn, and what it wrote while quiet.
pub(super) struct Listening {
    /// The turn being served: bumped by each `RpcPeer::begin_turn`.
    pub(super) turn: AtomicU64,
    /// Between turns: lines are dropped and counted.
    pub(super) quiet: AtomicBool,
    /// While a session opens: the messages the peer starts are dropped (answers still reach
    /// their requests), however many (a session's history replayed).
    pub(super) opening: AtomicBool,
    /// Bytes read while quiet since the last turn ended.
    pub(super) quiet_bytes: AtomicUsize,
    /// The most bytes the peer may write while quiet.
    pub(super) budget: AtomicUsize,
    /// Whether the peer passed its budget (and was ended).
    pub(super) flooded: AtomicBool,
    /// What ends the peer when it floods.
    pub(super) on_flood: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Listening {
    pub(super) fn new() -> Self {
        Self {
            turn: AtomicU64::new(0),
            quiet: AtomicBool::new(false),
            opening: AtomicBool::new(false),
            quiet_bytes: AtomicUsize::new(0),
            budget: AtomicUsize::new(usize::MAX),
            flooded: AtomicBool::new(false),
            on_flood: Mutex::new(None),
        }
    }

    /// Counts `bytes` read while quiet; `true` (once, after ending the peer) when they pass the
    /// budget.
    pub(super) fn flood(&self, bytes: usize) -> bool {
        let read = self
            .quiet_bytes
            .fetch_add(bytes, Ordering::SeqCst)
            .saturating_add(bytes);
        if read <= self.budget.load(Ordering::SeqCst) {
            return false;
        }
        self.flooded.store(true, Ordering::SeqCst);
        let end = self
            .on_flood
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(end) = end {
            end();
        }
        true
    }
}

/// What the peer started, as the driver reads it: in order, only messages read during the
/// current turn (earlier ones are skipped), ending when the peer's output does.
pub struct Inbox {
    pub(super) rx: mpsc::Receiver<(u64, Incoming)>,
    pub(super) listening: Arc<Listening>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").finish_non_exhaustive()
    }
}

impl Inbox {
    /// The next message of the current turn; `None` when the peer's output ended.
    /// Cancel-safe: nothing is awaited after a message is taken.
    pub async fn recv(&mut self) -> Option<Incoming> {
        loop {
            let (turn, message) = self.rx.recv().await?;
            if turn == self.listening.turn.load(Ordering::SeqCst) {
                return Some(message);
            }
            tracing::debug!("a message read before this turn began was dropped");
        }
    }

    /// Drops everything queued, so a reader waiting for room goes on (and, quiet, drops what
    /// it reads next).
    pub fn clear(&mut self) {
        while self.rx.try_recv().is_ok() {}
    }

    /// The next message of the current turn if one is queued now.
    pub fn try_recv(&mut self) -> Option<Incoming> {
        loop {
            let (turn, message) = self.rx.try_recv().ok()?;
            if turn == self.listening.turn.load(Ordering::SeqCst) {
                return Some(message);
            }
        }
    }
}
