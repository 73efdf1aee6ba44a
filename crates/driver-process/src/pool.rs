//! The resident-process pool: runtime processes that outlive a turn, kept for the next turn of
//! the same conversation whose launch configuration is exactly theirs.
//!
//! The pool knows nothing of a protocol: a dialect's resident process (Codex's app-server, a
//! stream-json process fed on stdin, an ACP agent, a worker) implements [`Resident`], and the
//! driver asks the pool before each turn. Decisions:
//! - **reuse** an idle, live process of the conversation with an equal
//!   [`ProcessSignature`] (exact, private, in memory);
//! - **recycle** it when the signature differs: it is shut down *before* the new one starts,
//!   and the reason is the list of changed component names, never a value;
//! - **replace** it when it died between turns;
//! - **start** one otherwise; when that would pass [`PoolLimits::max_live`], the least
//!   recently used idle process is **evicted** first, and with none idle the checkout fails
//!   ([`PoolError::Saturated`]).
//!
//! A driver's pool serves one credential namespace (the driver's), so it has one cap on live
//! processes; the namespace stays part of each process's key.
//!
//! A checked-out process serves one turn; [`Checkout::check_in`] returns it, and dropping the
//! [`Checkout`] without checking in frees its place (the caller ends a process it could not
//! trust, for example after a failed turn). Idle processes past [`PoolLimits::idle_timeout`]
//! are shut down when their time is up, by a task the pool runs while it holds idle
//! processes (and at the next checkout, whichever comes first). A process that writes more
//! than [`PoolLimits::max_idle_output`] while idle is ended by its reader at once and counted
//! as [`PoolStats::flooded`]. [`ProcessPool::close`] shuts down every idle process
//! and every one checked out before it when it is checked in; the pool serves again
//! afterwards (a closed agent's driver may run again, per `ProcessLifecycle`).

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use driver_spi::ProcessSignature;

/// A process the pool keeps between turns.
#[async_trait::async_trait]
pub trait Resident: Send + 'static {
    /// Whether it still runs; a dead process is never handed out.
    fn is_alive(&mut self) -> bool;

    /// Whether it was ended for writing past [`PoolLimits::max_idle_output`] while idle.
    fn flooded(&self) -> bool {
        false
    }

    /// Ends it (its whole process group) and waits for it to exit.
    async fn shut_down(self);
}

/// The bounds of a resident-process pool (such as a CLI driver's in its resident mode).
///
/// ```
/// use std::time::Duration;
/// use driver_process::pool::PoolLimits;
///
/// let limits = PoolLimits::default().with_idle_timeout(Duration::from_secs(60));
/// assert_eq!(limits.max_live, 8);
/// assert_eq!(limits.idle_timeout, Duration::from_secs(60));
/// assert_eq!(limits.max_idle_output, 1 << 20);
/// assert_eq!(PoolLimits::default().with_max_live(0).max_live, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolLimits {
    /// Most live processes (idle and serving a turn) of the driver (default 8). A turn that
    /// needs a new process past it evicts the least recently used idle one, or fails with
    /// [`FailureKind::Limit`](driver_spi::FailureKind::Limit) when none is idle.
    pub max_live: usize,
    /// How long an idle process is kept before it is shut down (default 10 minutes). It is
    /// shut down when the time is up, without waiting for another turn.
    pub idle_timeout: Duration,
    /// The most bytes a process may write between turns (default 1 MiB). What it writes then
    /// is read and dropped; past this it is ended ([`PoolStats::flooded`]).
    pub max_idle_output: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self {
            max_live: 8,
            idle_timeout: Duration::from_secs(600),
            max_idle_output: 1 << 20,
        }
    }
}

impl PoolLimits {
    /// Sets [`max_live`](Self::max_live) (at least 1).
    pub fn with_max_live(mut self, max: usize) -> Self {
        self.max_live = max.max(1);
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`max_idle_output`](Self::max_idle_output).
    pub fn with_max_idle_output(mut self, bytes: usize) -> Self {
        self.max_idle_output = bytes;
        self
    }
}

/// What the pool decided for one checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolDecision {
    /// The conversation's idle process has the wanted signature: it serves the turn.
    Reuse,
    /// No idle process for the conversation: the caller starts one.
    Start,
    /// The conversation's idle process had another signature: it was shut down; the caller
    /// starts a new one. The changed component names, never a value.
    Recycle {
        /// [`ProcessSignature::changed_components`].
        changed: Vec<String>,
    },
    /// The conversation's idle process had died: the caller starts a new one.
    Replace,
}

/// Why a checkout failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// Every place is taken by a process serving a turn.
    #[error("the process pool is full: every process is serving a turn")]
    Saturated,
}

/// Resident processes keyed by namespace, conversation and exact signature.
pub struct ProcessPool<P: Resident> {
    limits: PoolLimits,
    state: Arc<Mutex<State<P>>>,
    endings: Endings,
    /// Wakes the sweeper early: the pool closed or is gone.
    wake: Arc<tokio::sync::Notify>,
}

impl<P: Resident> Drop for ProcessPool<P> {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// Shutdowns running in tasks of their own (a cancelled turn's process), which
/// [`ProcessPool::close`] waits for.
pub type Endings = Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>;

impl<P: Resident> std::fmt::Debug for ProcessPool<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (idle, busy) = self.counts();
        f.debug_struct("ProcessPool")
            .field("limits", &self.limits)
            .field("idle", &idle)
            .field("busy", &busy)
            .finish()
    }
}

struct Idle<P> {
    namespace: String,
    conversation: String,
    signature: ProcessSignature,
    since: Instant,
    process: P,
}

struct State<P> {
    idle: Vec<Idle<P>>,
    /// Checked-out places.
    busy: usize,
    /// Bumped by each close: a process checked out before it is shut down on check-in.
    generation: u64,
    /// Whether the task that ends expired idle processes runs.
    sweeping: bool,
    stats: PoolStats,
}

/// What a driver's resident-process pool holds and has decided so far: counts only, for
/// hosts' metrics and tests (`CliDriver::pool_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Idle processes now.
    pub idle: usize,
    /// Processes serving a turn now.
    pub busy: usize,
    /// Turns served by a live idle process.
    pub reused: u64,
    /// Processes started (first turns, recycles and replacements included).
    pub started: u64,
    /// Processes retired because the next turn's signature differed.
    pub recycled: u64,
    /// Dead processes found and replaced.
    pub replaced: u64,
    /// Idle processes shut down for a cap or the idle timeout.
    pub evicted: u64,
    /// Idle processes ended for writing past [`PoolLimits::max_idle_output`].
    pub flooded: u64,
}

impl<P> State<P> {
    fn live(&self) -> usize {
        self.idle.len() + self.busy
    }

    /// Removes the least recently used idle process.
    fn evict_lru(&mut self) -> Option<P> {
        let at = self
            .idle
            .iter()
            .enumerate()
            .min_by_key(|(_, i)| i.since)
            .map(|(at, _)| at)?;
        Some(self.idle.swap_remove(at).process)
    }

    fn unreserve(&mut self) {
        self.busy = self.busy.saturating_sub(1);
    }
}

/// One checked-out place in the pool: the process to reuse, if any, and the place a new one
/// takes. [`check_in`](Self::check_in) returns the process for the next turn; dropping the
/// checkout frees the place.
pub struct Checkout<P: Resident> {
    /// What the pool decided.
    pub decision: PoolDecision,
    /// The process to reuse ([`PoolDecision::Reuse`]); `None` when the caller starts one.
    pub process: Option<P>,
    namespace: String,
    signature: ProcessSignature,
    generation: u64,
    idle_timeout: Duration,
    state: Arc<Mutex<State<P>>>,
    wake: Arc<tokio::sync::Notify>,
    returned: bool,
}

impl<P: Resident> std::fmt::Debug for Checkout<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkout")
            .field("decision", &self.decision)
            .field("reused", &self.process.is_some())
            .finish_non_exhaustive()
    }
}

impl<P: Resident> Checkout<P> {
    /// Returns `process` to the pool after its turn, idle for the conversation's next turn
    /// (`conversation` is the session the turn started or continued, which a new process only
    /// knows after its first turn). When the pool was closed since the checkout, it is shut
    /// down instead.
    pub async fn check_in(mut self, conversation: &str, process: P) {
        self.returned = true;
        let (refused, sweep) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.unreserve();
            if state.generation != self.generation {
                (Some(process), false)
            } else {
                state.idle.push(Idle {
                    namespace: std::mem::take(&mut self.namespace),
                    conversation: conversation.to_owned(),
                    signature: self.signature.clone(),
                    since: Instant::now(),
                    process,
                });
                (None, !std::mem::replace(&mut state.sweeping, true))
            }
        };
        if sweep {
            tokio::spawn(sweep_expired(
                Arc::downgrade(&self.state),
                Arc::clone(&self.wake),
                self.idle_timeout,
            ));
        }
        if let Some(process) = refused {
            process.shut_down().await;
        }
    }
}

impl<P: Resident> Drop for Checkout<P> {
    fn drop(&mut self) {
        if !self.returned {
            self.state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .unreserve();
        }
    }
}

impl<P: Resident> ProcessPool<P> {
    /// An empty pool within `limits`.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            limits,
            state: Arc::new(Mutex::new(State {
                idle: Vec::new(),
                busy: 0,
                generation: 0,
                sweeping: false,
                stats: PoolStats::default(),
            })),
            endings: Endings::default(),
            wake: Arc::default(),
        }
    }

    /// The pool's limits.
    pub fn limits(&self) -> PoolLimits {
        self.limits
    }

    /// Where a shutdown running in a task of its own registers, so that
    /// [`close`](Self::close) waits for it.
    pub fn endings(&self) -> Endings {
        Arc::clone(&self.endings)
    }

    /// (idle, checked out) process counts.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (state.idle.len(), state.busy)
    }

    /// The counts and decisions so far.
    pub fn stats(&self) -> PoolStats {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        PoolStats {
            idle: state.idle.len(),
            busy: state.busy,
            ..state.stats
        }
    }

    /// Counts a replacement the caller made itself: a reused process that turned out to be
    /// gone before anything was delivered to it.
    pub fn note_replaced(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.stats.replaced += 1;
        state.stats.started += 1;
        tracing::debug!(decision = "replace", "process pool");
    }

    /// Shuts down the idle process of `conversation` in `namespace`, if there is one (a
    /// fork frees its parent this way, so no other process holds the parent's session).
    pub async fn retire(&self, namespace: &str, conversation: &str) {
        let retired = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let at = state
                .idle
                .iter()
                .position(|i| i.namespace == namespace && i.conversation == conversation);
            at.map(|at| {
                state.stats.evicted += 1;
                state.idle.swap_remove(at).process
            })
        };
        if let Some(process) = retired {
            tracing::debug!(decision = "evict", reason = "fork", "process pool");
            process.shut_down().await;
        }
    }

    /// The place for the next turn of `conversation` (`None` for a turn that starts a new
    /// one) in `namespace`, whose process must have exactly `signature`. Processes it retires
    /// (recycled, dead, expired, evicted) are shut down before it returns, so a new process
    /// never runs beside the one it replaces.
    ///
    /// # Errors
    /// [`PoolError::Saturated`] when starting a process would pass a limit and no idle one can
    /// be evicted.
    pub async fn check_out(
        &self,
        namespace: &str,
        conversation: Option<&str>,
        signature: &ProcessSignature,
    ) -> Result<Checkout<P>, PoolError> {
        let mut retired = Vec::new();
        let decided = self.decide(namespace, conversation, signature, &mut retired);
        let evicted = retired.len();
        for old in retired {
            old.shut_down().await;
        }
        let (decision, process, generation) = decided?;
        match &decision {
            PoolDecision::Recycle { changed } => tracing::info!(
                decision = "recycle",
                changed = ?changed,
                retired = evicted,
                "process pool"
            ),
            other => tracing::debug!(decision = ?other, retired = evicted, "process pool"),
        }
        Ok(Checkout {
            decision,
            process,
            namespace: namespace.to_owned(),
            signature: signature.clone(),
            generation,
            idle_timeout: self.limits.idle_timeout,
            state: Arc::clone(&self.state),
            wake: Arc::clone(&self.wake),
            returned: false,
        })
    }

    /// The decision, under the lock: what to hand out; what to retire goes to `retired`
    /// (on an error too: nothing taken out of the pool is left running unowned).
    fn decide(
        &self,
        namespace: &str,
        conversation: Option<&str>,
        signature: &ProcessSignature,
        retired: &mut Vec<P>,
    ) -> Result<(PoolDecision, Option<P>, u64), PoolError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = state.generation;
        // Expired idle processes go first.
        let now = Instant::now();
        let timeout = self.limits.idle_timeout;
        let mut at = 0;
        while at < state.idle.len() {
            if now.duration_since(state.idle[at].since) >= timeout {
                state.stats.evicted += 1;
                retired.push(state.idle.swap_remove(at).process);
            } else {
                at += 1;
            }
        }
        let mine = conversation.and_then(|c| {
            state
                .idle
                .iter()
                .position(|i| i.namespace == namespace && i.conversation == c)
        });
        let mine = mine.map(|at| {
            let mut idle = state.idle.swap_remove(at);
            let alive = idle.process.is_alive();
            (idle, alive)
        });
        let decision = match mine {
            Some((idle, false)) => {
                state.stats.replaced += 1;
                if idle.process.flooded() {
                    state.stats.flooded += 1;
                }
                retired.push(idle.process);
                PoolDecision::Replace
            }
            Some((idle, true)) if idle.signature == *signature => {
                state.busy += 1;
                state.stats.reused += 1;
                return Ok((PoolDecision::Reuse, Some(idle.process), generation));
            }
            Some((idle, true)) => {
                let changed = idle.signature.changed_components(signature);
                state.stats.recycled += 1;
                retired.push(idle.process);
                PoolDecision::Recycle { changed }
            }
            None => PoolDecision::Start,
        };
        while state.live() >= self.limits.max_live {
            match state.evict_lru() {
                Some(old) => {
                    state.stats.evicted += 1;
                    retired.push(old);
                }
                None => return Err(PoolError::Saturated),
            }
        }
        state.busy += 1;
        state.stats.started += 1;
        Ok((decision, None, generation))
    }

    /// Shuts down every idle process now, and every checked-out one when it is checked in.
    /// Later checkouts start new processes. Idempotent.
    pub async fn close(&self) {
        let idle = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.generation += 1;
            std::mem::take(&mut state.idle)
        };
        // Nothing idle is left to sweep: the sweeper ends now rather than at its next expiry.
        self.wake.notify_one();
        for idle in idle {
            idle.process.shut_down().await;
        }
        let endings =
            std::mem::take(&mut *self.endings.lock().unwrap_or_else(PoisonError::into_inner));
        for ending in endings {
            let _ = ending.await;
        }
    }
}

/// Ends idle processes when their idle time is up, as long as the pool holds any (and exists):
/// sleeps until the oldest expires, shuts down every expired one, and again. A flooded one
/// (already ended by its reader) goes at the same time.
async fn sweep_expired<P: Resident>(
    state: Weak<Mutex<State<P>>>,
    wake: Arc<tokio::sync::Notify>,
    timeout: Duration,
) {
    loop {
        let next = {
            let Some(state) = state.upgrade() else {
                return;
            };
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            match state.idle.iter().map(|i| i.since).min() {
                Some(oldest) => oldest.checked_add(timeout),
                None => {
                    state.sweeping = false;
                    return;
                }
            }
        };
        let Some(next) = next else {
            // A timeout past the end of time: nothing ever expires.
            let Some(state) = state.upgrade() else {
                return;
            };
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .sweeping = false;
            return;
        };
        tokio::select! {
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(next)) => {}
            // Closed or dropped: look again (an empty or gone pool ends the sweeper).
            () = wake.notified() => continue,
        }
        let ended = {
            let Some(state) = state.upgrade() else {
                return;
            };
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let mut ended = Vec::new();
            let mut at = 0;
            while at < state.idle.len() {
                let idle = &state.idle[at];
                let expired = now.duration_since(idle.since) >= timeout;
                let flooded = idle.process.flooded();
                if expired || flooded {
                    if flooded {
                        state.stats.flooded += 1;
                    } else {
                        state.stats.evicted += 1;
                    }
                    ended.push(state.idle.swap_remove(at).process);
                } else {
                    at += 1;
                }
            }
            ended
        };
        if !ended.is_empty() {
            tracing::debug!(
                decision = "evict",
                reason = "idle",
                retired = ended.len(),
                "process pool"
            );
        }
        for process in ended {
            process.shut_down().await;
        }
    }
}
