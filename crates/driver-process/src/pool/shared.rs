//! Shared checkouts: a process that several holders (tasks) use at once, such as a worker that
//! multiplexes a namespace's tasks. The rules are in the [pool's docs](super).

use std::future::Future;
use std::sync::Arc;

use driver_spi::ProcessSignature;
use tokio::sync::OnceCell;

use super::{Parts, PoolDecision, PoolError, PoolKey, ProcessPool, Resident, State, log_decision};

/// A shared process with at least one holder (or one starting it).
pub(super) struct Held<K, P> {
    pub(super) id: u64,
    pub(super) key: K,
    signature: ProcessSignature,
    /// The process, once a holder's `start` made it.
    cell: Arc<OnceCell<Arc<P>>>,
    pub(super) holders: usize,
    /// No new holder joins it (it died and was replaced, or the pool closed): its last holder's
    /// letting go shuts it down.
    pub(super) detached: bool,
}

/// One holder's share of a process that several use at once; it derefs to the process.
/// Dropping it lets go: the last holder to let go makes the process idle (or shuts it down
/// when it was replaced or the pool closed since).
///
/// It is not `Clone`: each holder is one task, counted against
/// [`PoolLimits::max_tasks_per_process`](super::PoolLimits::max_tasks_per_process), so a
/// second task checks out its own.
pub struct SharedCheckout<K: PoolKey, P: Resident> {
    // Fields drop in order: this holder's reference to the process goes before `hold` lets
    // go, so the last one to let go leaves the pool the only owner, which can shut it down.
    process: Arc<P>,
    _hold: Hold<K, P>,
    /// What the pool decided for this holder: [`PoolDecision::Reuse`] when it joined a
    /// process (or reused an idle one), else how the process it started came to be.
    pub decision: PoolDecision,
}

impl<K: PoolKey, P: Resident> std::ops::Deref for SharedCheckout<K, P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.process
    }
}

impl<K: PoolKey, P: Resident> std::fmt::Debug for SharedCheckout<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCheckout")
            .field("decision", &self.decision)
            .finish_non_exhaustive()
    }
}

/// One holder's count in its [`Held`]; dropping it lets go.
struct Hold<K: PoolKey, P: Resident> {
    id: u64,
    parts: Parts<K, P>,
}

impl<K: PoolKey, P: Resident> Drop for Hold<K, P> {
    fn drop(&mut self) {
        self.parts.let_go(self.id);
    }
}

/// A holder waiting for its process to start. Fields drop in order: its reference to the
/// cell goes before `hold` lets go (a cancelled start leaves no reference behind).
struct Joining<K: PoolKey, P: Resident> {
    cell: Arc<OnceCell<Arc<P>>>,
    hold: Hold<K, P>,
}

impl<K: PoolKey, P: Resident> Parts<K, P> {
    /// One holder of `id` lets go; the last makes its process idle, or shuts it down when it
    /// is detached.
    fn let_go(&self, id: u64) {
        let mut state = self.lock();
        let Some(at) = state.held.iter().position(|h| h.id == id) else {
            return;
        };
        let held = &mut state.held[at];
        held.holders = held.holders.saturating_sub(1);
        if held.holders > 0 {
            return;
        }
        let Held {
            key,
            signature,
            cell,
            detached,
            ..
        } = state.held.swap_remove(at);
        // Every holder dropped its references before letting go, so these are the last ones;
        // were one still shared, dropping it would end the process group all the same.
        let process = Arc::try_unwrap(cell)
            .ok()
            .and_then(OnceCell::into_inner)
            .and_then(|process| Arc::try_unwrap(process).ok());
        // None: no holder ever started it.
        let Some(process) = process else {
            return;
        };
        if detached {
            drop(state);
            self.end_later(process);
        } else {
            self.park(&mut state, key, signature, process);
        }
    }

    fn joining(&self, id: u64, cell: Arc<OnceCell<Arc<P>>>) -> Joining<K, P> {
        Joining {
            cell,
            hold: Hold {
                id,
                parts: self.clone(),
            },
        }
    }
}

impl<K: PoolKey, P: Resident> ProcessPool<K, P> {
    /// A share of `key`'s process, whose launch must be exactly `signature`, for one task
    /// beside the process's other holders. `start` makes the process when the pool has none
    /// that fits; holders that come while it runs wait for it, and one of them runs its own
    /// `start` if that one fails (or its checkout is dropped). Processes it retires (recycled,
    /// dead and idle, expired, evicted) are shut down first, so a new process never runs
    /// beside the one it replaces.
    ///
    /// # Errors
    /// `start`'s error; or, converted from [`PoolError`]: [`PoolError::TaskCap`] when the
    /// process has [`PoolLimits::max_tasks_per_process`](super::PoolLimits::max_tasks_per_process)
    /// holders; [`PoolError::Held`] when it has holders and another signature;
    /// [`PoolError::Saturated`] when a new process would pass
    /// [`PoolLimits::max_live`](super::PoolLimits::max_live) and no idle one can be evicted.
    pub async fn check_out_shared<E, F, Fut>(
        &self,
        key: &K,
        signature: &ProcessSignature,
        start: F,
    ) -> Result<SharedCheckout<K, P>, E>
    where
        E: From<PoolError>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<P, E>>,
    {
        let (decided, retired) = self
            .decide_then_retire(|state, retired| self.decide_shared(state, key, signature, retired))
            .await;
        let (decision, joining) = decided?;
        let mut ran = false;
        let process = joining
            .cell
            .get_or_try_init(|| {
                ran = true;
                let started = start();
                async { started.await.map(Arc::new) }
            })
            .await
            .map(Arc::clone)?;
        let Joining { cell, hold } = joining;
        drop(cell);
        let decision = match decision {
            _ if !ran => PoolDecision::Reuse,
            // It came to join a process whose start failed, and started its own.
            PoolDecision::Reuse => PoolDecision::Start,
            other => other,
        };
        {
            let mut state = self.parts.lock();
            if ran {
                state.stats.started += 1;
            } else {
                state.stats.reused += 1;
            }
        }
        log_decision(&decision, true, retired);
        Ok(SharedCheckout {
            process,
            _hold: hold,
            decision,
        })
    }

    /// A shared checkout's decision: the holder counted in its [`Held`]; what to retire goes
    /// to `retired`.
    fn decide_shared(
        &self,
        state: &mut State<K, P>,
        key: &K,
        signature: &ProcessSignature,
        retired: &mut Vec<P>,
    ) -> Result<(PoolDecision, Joining<K, P>), PoolError> {
        let limits = self.parts.limits;
        let mut replaced = false;
        if let Some(held) = state.held_mut(key) {
            if held.cell.get().is_some_and(|p| !p.is_alive()) {
                // Its holders keep it until they let go; new ones get a new process.
                held.detached = true;
                replaced = true;
            } else if held.signature != *signature {
                return Err(PoolError::Held {
                    holders: held.holders,
                });
            } else if held.holders >= limits.max_tasks_per_process {
                return Err(PoolError::TaskCap {
                    max: limits.max_tasks_per_process,
                });
            } else {
                held.holders += 1;
                let (id, cell) = (held.id, Arc::clone(&held.cell));
                return Ok((PoolDecision::Reuse, self.parts.joining(id, cell)));
            }
        }
        let (decision, cell) = if replaced {
            state.stats.replaced += 1;
            (PoolDecision::Replace, OnceCell::new())
        } else {
            match state.take_idle(key, signature, retired) {
                Ok(idle) => (
                    PoolDecision::Reuse,
                    OnceCell::new_with(Some(Arc::new(idle))),
                ),
                Err(decision) => (decision, OnceCell::new()),
            }
        };
        if !cell.initialized() {
            state.make_room(limits.max_live, retired)?;
        }
        let id = state.next_held;
        state.next_held += 1;
        let cell = Arc::new(cell);
        state.held.push(Held {
            id,
            key: key.clone(),
            signature: signature.clone(),
            cell: Arc::clone(&cell),
            holders: 1,
            detached: false,
        });
        Ok((decision, self.parts.joining(id, cell)))
    }
}
