//! The resident-process pool: processes that outlive a turn (or a task), kept in places named
//! by a key for the next checkout whose launch configuration is exactly theirs.
//!
//! The pool knows nothing of a protocol: a dialect's resident process (Codex's app-server, a
//! stream-json process fed on stdin, an ACP agent, a worker) implements [`Resident`]. A
//! [`PoolKey`] says *which place* a process takes (a CLI's resident process: its
//! conversation, [`ConversationKey`]; a worker that serves a credential namespace: the
//! namespace); the exact, private [`ProcessSignature`] it was launched with says *whether*
//! the idle process there still fits. Decisions ([`PoolDecision`]):
//! - **reuse** the key's live process when its signature is equal;
//! - **recycle** it when the signature differs: it is shut down *before* the new one starts,
//!   and the reason is the list of changed component names, never a value;
//! - **replace** it when it died;
//! - **start** one otherwise; when that would pass [`PoolLimits::max_live`], the least
//!   recently used idle process is **evicted** first, and with none idle the checkout fails
//!   ([`PoolError::Saturated`]).
//!
//! Two ways to check a process out:
//! - **exclusive** ([`ProcessPool::check_out`]), one turn per process: the [`Checkout`] holds
//!   its place, [`Checkout::check_in`] returns the process idle under its key (a new
//!   conversation's key is known only after its first turn), and dropping the checkout
//!   without checking in frees its place (the caller ends a process it could not trust, for
//!   example after a failed turn);
//! - **shared** ([`ProcessPool::check_out_shared`]), for a process that multiplexes tasks:
//!   each holder (one task) has its own [`SharedCheckout`], which derefs to the process. The
//!   first holder's `start` starts it (holders that come meanwhile wait for that start, and
//!   one of them starts it if that start fails); while any holder has it, it is neither idle
//!   nor evicted; the last holder to let go makes it idle. A checkout with another signature
//!   while holders remain fails ([`PoolError::Held`]) instead of waiting, since tasks have no
//!   bound the pool knows; it recycles the process once no holder remains. A dead process is
//!   replaced at once: the new one takes the key, the dead one is shut down when its last
//!   holder lets go. A key's process is used one way: an exclusive checkout of a key held
//!   shared fails with [`PoolError::Held`] too.
//!
//! # Limits
//!
//! Each limit of [`PoolLimits`] counts something no other one does, so none makes another
//! irrelevant at its default (the one interplay: an `idle_timeout` of zero ends a process as
//! soon as it is idle, which leaves `max_idle_output` nothing to count):
//! - [`max_live`](PoolLimits::max_live) counts processes (idle, checked out, held shared):
//!   a new one past it evicts the least recently used idle process, or fails
//!   [`PoolError::Saturated`] when none is idle;
//! - [`max_tasks_per_process`](PoolLimits::max_tasks_per_process) counts the holders of one
//!   shared process: one more fails [`PoolError::TaskCap`] until a holder lets go (it never
//!   starts a second process for the key);
//! - [`idle_timeout`](PoolLimits::idle_timeout) counts time idle: the sweeper (a task the pool
//!   runs while it holds idle processes) shuts a process down when it is up, without waiting
//!   for a checkout;
//! - [`max_idle_output`](PoolLimits::max_idle_output) counts bytes written while idle: the
//!   pool quiets a process when it becomes idle ([`Resident::quiet`]), and the process's
//!   reader ends it past that budget ([`PoolStats::flooded`]).
//!
//! [`ProcessPool::close`] shuts down every idle process now, and every one checked out or held
//! before it when it is checked in or its last holder lets go; the pool serves again
//! afterwards (a closed agent's driver may run again, per `ProcessLifecycle`).
//!
//! The pool logs its decisions and counts, never a key: a key may hold provider text.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use driver_spi::ProcessSignature;

mod exclusive;
mod key;
mod shared;
mod sweep;
mod watch;

pub use exclusive::Checkout;
pub use key::{ConversationKey, PoolKey};
use shared::Held;
pub use shared::SharedCheckout;

/// A process the pool keeps between turns (or tasks). It is `Sync` because the holders of a
/// shared process use it at once, through `&self`.
#[async_trait::async_trait]
pub trait Resident: Send + Sync + 'static {
    /// Whether it still runs; a dead process is never handed out, nor joined by a shared
    /// holder.
    fn is_alive(&self) -> bool;

    /// Whether it was ended for writing past [`PoolLimits::max_idle_output`] while idle.
    fn flooded(&self) -> bool {
        false
    }

    /// It becomes idle (checked in, or let go by its last shared holder): what it writes
    /// from now on is nobody's, and past [`PoolLimits::max_idle_output`] bytes it must end.
    fn quiet(&mut self) {}

    /// Ends it (its whole process group) and waits for it to exit.
    async fn shut_down(self);
}

/// The bounds of a resident-process pool (such as a CLI driver's in its resident mode). Each
/// counts something of its own (see the [module docs](self#limits)).
///
/// ```
/// use std::time::Duration;
/// use driver_process::pool::PoolLimits;
///
/// let limits = PoolLimits::default().with_idle_timeout(Duration::from_secs(60));
/// assert_eq!(limits.max_live, 8);
/// assert_eq!(limits.max_tasks_per_process, 16);
/// assert_eq!(limits.idle_timeout, Duration::from_secs(60));
/// assert_eq!(limits.max_idle_output, 1 << 20);
/// assert_eq!(PoolLimits::default().with_max_live(0).max_live, 1);
/// assert_eq!(PoolLimits::default().with_max_tasks_per_process(0).max_tasks_per_process, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolLimits {
    /// Most live processes (idle, checked out and held shared) of the pool (default 8). A
    /// checkout that needs a new process past it evicts the least recently used idle one, or
    /// fails with [`PoolError::Saturated`] when none is idle (a CLI driver reports
    /// [`FailureKind::Limit`](driver_spi::FailureKind::Limit)).
    pub max_live: usize,
    /// Most holders of one shared process at once (default 16): the next
    /// [`check_out_shared`](ProcessPool::check_out_shared) of its key fails with
    /// [`PoolError::TaskCap`] until one lets go. An exclusive checkout is one turn per
    /// process, whatever this says.
    pub max_tasks_per_process: usize,
    /// How long an idle process is kept before it is shut down (default 10 minutes). It is
    /// shut down when the time is up, without waiting for another checkout.
    pub idle_timeout: Duration,
    /// The most bytes a process may write while idle (default 1 MiB). What it writes then is
    /// read and dropped; past this it is ended ([`PoolStats::flooded`]).
    pub max_idle_output: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self {
            max_live: 8,
            max_tasks_per_process: 16,
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

    /// Sets [`max_tasks_per_process`](Self::max_tasks_per_process) (at least 1).
    pub fn with_max_tasks_per_process(mut self, max: usize) -> Self {
        self.max_tasks_per_process = max.max(1);
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
    /// The key's live process has the wanted signature: it serves (for a shared checkout:
    /// joins its holders).
    Reuse,
    /// No process for the key: a new one starts.
    Start,
    /// The key's idle process had another signature: it was shut down, a new one starts.
    /// The changed component names, never a value.
    Recycle {
        /// [`ProcessSignature::changed_components`].
        changed: Vec<String>,
    },
    /// The key's process had died: a new one starts.
    Replace,
}

/// Why a checkout failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// A new process would pass [`PoolLimits::max_live`], and no idle one can be evicted.
    #[error("the process pool is full: every process is checked out")]
    Saturated,
    /// The key's process already has [`PoolLimits::max_tasks_per_process`] holders.
    #[error("the process serves its most tasks at once ({max})")]
    TaskCap {
        /// [`PoolLimits::max_tasks_per_process`].
        max: usize,
    },
    /// The key's process is held shared, and this checkout cannot join it: it wants another
    /// signature (the process is recycled once no holder remains), or it is exclusive.
    #[error("the process is held by {holders} tasks under another launch configuration")]
    Held {
        /// Its holders now.
        holders: usize,
    },
}

/// What a pool holds and has decided so far: counts only, for hosts' metrics and tests
/// (`CliDriver::pool_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Idle processes now.
    pub idle: usize,
    /// Processes checked out now, exclusively or held shared.
    pub busy: usize,
    /// Holders of shared processes now.
    pub holders: usize,
    /// Checkouts served by a live process (for a shared one: holders that joined it).
    pub reused: u64,
    /// Processes started (first checkouts, recycles and replacements included).
    pub started: u64,
    /// Processes retired because the next checkout's signature differed.
    pub recycled: u64,
    /// Dead processes found and replaced.
    pub replaced: u64,
    /// Idle processes shut down for a cap, the idle timeout or a fork.
    pub evicted: u64,
    /// Idle processes ended for writing past [`PoolLimits::max_idle_output`].
    pub flooded: u64,
}

/// Resident processes keyed by `K` and their exact signature.
pub struct ProcessPool<K: PoolKey, P: Resident> {
    parts: Parts<K, P>,
}

impl<K: PoolKey, P: Resident> Drop for ProcessPool<K, P> {
    /// Processes checked out or held now are shut down when they come back, not kept idle in
    /// a pool nobody can reach.
    fn drop(&mut self) {
        // Dropping the idle ones ends their process groups.
        let idle = self.parts.lock().close();
        drop(idle);
        self.parts.wake.notify_one();
    }
}

/// Shutdowns running in tasks of their own (a cancelled turn's process), which
/// [`ProcessPool::close`] waits for.
pub type Endings = Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>;

impl<K: PoolKey, P: Resident> std::fmt::Debug for ProcessPool<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (idle, busy) = self.counts();
        f.debug_struct("ProcessPool")
            .field("limits", &self.parts.limits)
            .field("idle", &idle)
            .field("busy", &busy)
            .finish()
    }
}

/// What the pool, its checkouts and their holders share.
struct Parts<K, P> {
    limits: PoolLimits,
    state: Arc<Mutex<State<K, P>>>,
    endings: Endings,
    /// Wakes the sweeper early: the pool closed or is gone.
    wake: Arc<tokio::sync::Notify>,
}

impl<K, P> Clone for Parts<K, P> {
    fn clone(&self) -> Self {
        Self {
            limits: self.limits,
            state: Arc::clone(&self.state),
            endings: Arc::clone(&self.endings),
            wake: Arc::clone(&self.wake),
        }
    }
}

struct Idle<K, P> {
    key: K,
    signature: ProcessSignature,
    since: Instant,
    process: P,
}

struct State<K, P> {
    idle: Vec<Idle<K, P>>,
    /// Exclusively checked-out places.
    busy: usize,
    /// Shared processes with at least one holder (or one starting).
    held: Vec<Held<K, P>>,
    /// The id of the next held process.
    next_held: u64,
    /// Bumped by each close: a process checked out before it is shut down on check-in.
    generation: u64,
    /// Whether the task that ends expired idle processes runs.
    sweeping: bool,
    stats: PoolStats,
    /// Bumped whenever processes leave the pool to end ([`ProcessPool::changes`]).
    changes: tokio::sync::watch::Sender<u64>,
}

impl<K: PoolKey, P: Resident> State<K, P> {
    fn live(&self) -> usize {
        self.idle.len() + self.busy + self.held.len()
    }

    /// Moves idle processes past `timeout` to `retired`, and with `flooded` those ended for
    /// writing past their idle budget too (a checkout leaves its own key's to replace).
    fn expire(&mut self, timeout: Duration, flooded: bool, retired: &mut Vec<P>) {
        let now = Instant::now();
        let mut at = 0;
        while at < self.idle.len() {
            let idle = &self.idle[at];
            let flooded = flooded && idle.process.flooded();
            if flooded || now.duration_since(idle.since) >= timeout {
                if flooded {
                    self.stats.flooded += 1;
                } else {
                    self.stats.evicted += 1;
                }
                retired.push(self.idle.swap_remove(at).process);
                self.ended();
            } else {
                at += 1;
            }
        }
    }

    /// The held process of `key` that new holders may join, if any.
    fn held_mut(&mut self, key: &K) -> Option<&mut Held<K, P>> {
        self.held.iter_mut().find(|h| !h.detached && h.key == *key)
    }

    /// Takes `key`'s idle process out and decides what to do with it: reuse it (returned), or
    /// retire it to `retired` and start a new one (the decision).
    fn take_idle(
        &mut self,
        key: &K,
        signature: &ProcessSignature,
        retired: &mut Vec<P>,
    ) -> Result<P, PoolDecision> {
        let Some(at) = self.idle.iter().position(|i| i.key == *key) else {
            return Err(PoolDecision::Start);
        };
        let idle = self.idle.swap_remove(at);
        if !idle.process.is_alive() {
            self.stats.replaced += 1;
            if idle.process.flooded() {
                self.stats.flooded += 1;
            }
            retired.push(idle.process);
            self.ended();
            return Err(PoolDecision::Replace);
        }
        if idle.signature == *signature {
            return Ok(idle.process);
        }
        let changed = idle.signature.changed_components(signature);
        self.stats.recycled += 1;
        retired.push(idle.process);
        self.ended();
        Err(PoolDecision::Recycle { changed })
    }

    /// Makes room for one more process within `max_live`: evicts least recently used idle
    /// processes to `retired`.
    fn make_room(&mut self, max_live: usize, retired: &mut Vec<P>) -> Result<(), PoolError> {
        while self.live() >= max_live {
            let at = self
                .idle
                .iter()
                .enumerate()
                .min_by_key(|(_, i)| i.since)
                .map(|(at, _)| at)
                .ok_or(PoolError::Saturated)?;
            self.stats.evicted += 1;
            retired.push(self.idle.swap_remove(at).process);
            self.ended();
        }
        Ok(())
    }

    fn unreserve(&mut self) {
        self.busy = self.busy.saturating_sub(1);
    }

    /// Closes: what is checked out or held now is shut down when it comes back (a new
    /// generation; held processes detached). The idle processes, for the caller to end.
    fn close(&mut self) -> Vec<Idle<K, P>> {
        self.generation += 1;
        for held in &mut self.held {
            held.detached = true;
        }
        self.ended();
        std::mem::take(&mut self.idle)
    }
}

impl<K: PoolKey, P: Resident> Parts<K, P> {
    fn lock(&self) -> MutexGuard<'_, State<K, P>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `process` idle under `key`, quiet, and starts the sweeper if it does not run
    /// (with no runtime to run it in, the next checkout ends what expired).
    fn park(&self, state: &mut State<K, P>, key: K, signature: ProcessSignature, mut process: P) {
        process.quiet();
        state.idle.push(Idle {
            key,
            signature,
            since: Instant::now(),
            process,
        });
        if state.sweeping {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            state.sweeping = true;
            runtime.spawn(sweep::sweep_expired(
                Arc::downgrade(&self.state),
                Arc::clone(&self.wake),
                self.limits.idle_timeout,
            ));
        }
    }

    /// Shuts `process` down in a task that [`ProcessPool::close`] waits for (from a `Drop`,
    /// which cannot wait); with no runtime, dropping it ends its process group.
    fn end_later(&self, process: P) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let ending = runtime.spawn(process.shut_down());
        let mut endings = self.endings.lock().unwrap_or_else(PoisonError::into_inner);
        endings.retain(|e| !e.is_finished());
        endings.push(ending);
    }
}

/// Logs one decision: a recycle with its changed component names, the others by name.
fn log_decision(decision: &PoolDecision, shared: bool, retired: usize) {
    match decision {
        PoolDecision::Recycle { changed } => tracing::info!(
            decision = "recycle",
            changed = ?changed,
            shared,
            retired,
            "process pool"
        ),
        other => tracing::debug!(decision = ?other, shared, retired, "process pool"),
    }
}

impl<K: PoolKey, P: Resident> ProcessPool<K, P> {
    /// An empty pool within `limits`.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            parts: Parts {
                limits,
                state: Arc::new(Mutex::new(State {
                    idle: Vec::new(),
                    busy: 0,
                    held: Vec::new(),
                    next_held: 0,
                    generation: 0,
                    sweeping: false,
                    stats: PoolStats::default(),
                    changes: tokio::sync::watch::Sender::new(0),
                })),
                endings: Endings::default(),
                wake: Arc::default(),
            },
        }
    }

    /// The pool's limits.
    pub fn limits(&self) -> PoolLimits {
        self.parts.limits
    }

    /// Where a shutdown running in a task of its own registers, so that
    /// [`close`](Self::close) waits for it.
    pub fn endings(&self) -> Endings {
        Arc::clone(&self.parts.endings)
    }

    /// (idle, checked out or held) process counts.
    pub fn counts(&self) -> (usize, usize) {
        let stats = self.stats();
        (stats.idle, stats.busy)
    }

    /// The counts and decisions so far.
    pub fn stats(&self) -> PoolStats {
        let state = self.parts.lock();
        PoolStats {
            idle: state.idle.len(),
            busy: state.busy + state.held.len(),
            holders: state.held.iter().map(|h| h.holders).sum(),
            ..state.stats
        }
    }

    /// Counts a replacement the caller made itself: a reused process that turned out to be
    /// gone before anything was delivered to it.
    pub fn note_replaced(&self) {
        let mut state = self.parts.lock();
        state.stats.replaced += 1;
        state.stats.started += 1;
        tracing::debug!(decision = "replace", "process pool");
    }

    /// Shuts down the idle process of `key`, if there is one (a fork frees its parent
    /// conversation's this way, so no other process holds the parent's session).
    pub async fn retire(&self, key: &K) {
        let retired = {
            let mut state = self.parts.lock();
            let at = state.idle.iter().position(|i| i.key == *key);
            at.map(|at| {
                state.stats.evicted += 1;
                state.ended();
                state.idle.swap_remove(at).process
            })
        };
        if let Some(process) = retired {
            tracing::debug!(decision = "evict", reason = "fork", "process pool");
            process.shut_down().await;
        }
    }

    /// Runs `decide` under the lock, once expired idle processes are out, then shuts down
    /// what it retired (on an error too: nothing taken out of the pool is left running
    /// unowned) before the caller goes on, so a new process never runs beside the one it
    /// replaces. Also how many it retired.
    async fn decide_then_retire<T>(
        &self,
        decide: impl FnOnce(&mut State<K, P>, &mut Vec<P>) -> T,
    ) -> (T, usize) {
        let mut retired = Vec::new();
        let decided = {
            let mut state = self.parts.lock();
            state.expire(self.parts.limits.idle_timeout, false, &mut retired);
            decide(&mut state, &mut retired)
        };
        let count = retired.len();
        for old in retired {
            old.shut_down().await;
        }
        (decided, count)
    }

    /// Shuts down every idle process now, every exclusively checked-out one when it is
    /// checked in, and every shared one when its last holder lets go. Later checkouts start
    /// new processes. Idempotent.
    pub async fn close(&self) {
        let idle = self.parts.lock().close();
        // Nothing idle is left to sweep: the sweeper ends now rather than at its next expiry.
        self.parts.wake.notify_one();
        for idle in idle {
            idle.process.shut_down().await;
        }
        let endings = std::mem::take(
            &mut *self
                .parts
                .endings
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for ending in endings {
            let _ = ending.await;
        }
    }
}
