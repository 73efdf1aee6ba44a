//! Exclusive checkouts: one turn per process, the process out of the pool while it serves.
//! The rules are in the [pool's docs](super).

use driver_spi::ProcessSignature;

use super::{Parts, PoolDecision, PoolError, PoolKey, ProcessPool, Resident, State, log_decision};

/// One exclusively checked-out place in the pool: the process to reuse, if any, and the place
/// a new one takes. [`check_in`](Self::check_in) returns the process for the next turn;
/// dropping the checkout frees the place.
pub struct Checkout<K: PoolKey, P: Resident> {
    /// What the pool decided.
    pub decision: PoolDecision,
    /// The process to reuse ([`PoolDecision::Reuse`]); `None` when the caller starts one.
    pub process: Option<P>,
    signature: ProcessSignature,
    generation: u64,
    parts: Parts<K, P>,
    returned: bool,
}

impl<K: PoolKey, P: Resident> std::fmt::Debug for Checkout<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkout")
            .field("decision", &self.decision)
            .field("reused", &self.process.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: PoolKey, P: Resident> Checkout<K, P> {
    /// Returns `process` to the pool after its turn, idle under `key` for the next checkout
    /// (for a CLI, the conversation the turn started or continued, which a new process only
    /// knows after its first turn), quieted ([`Resident::quiet`]). When the pool was closed
    /// since the checkout, it is shut down instead.
    pub async fn check_in(mut self, key: K, process: P) {
        self.returned = true;
        let refused = {
            let mut state = self.parts.lock();
            state.unreserve();
            if state.generation == self.generation {
                let signature = self.signature.clone();
                self.parts.park(&mut state, key, signature, process);
                None
            } else {
                Some(process)
            }
        };
        if let Some(process) = refused {
            process.shut_down().await;
        }
    }
}

impl<K: PoolKey, P: Resident> Drop for Checkout<K, P> {
    fn drop(&mut self) {
        if !self.returned {
            self.parts.lock().unreserve();
        }
    }
}

impl<K: PoolKey, P: Resident> ProcessPool<K, P> {
    /// An exclusive place for one turn of `key` (`None` for a turn whose key is known only
    /// after it, such as a new conversation), whose process must have exactly `signature`.
    /// Processes it retires (recycled, dead, expired, evicted) are shut down before it
    /// returns, so a new process never runs beside the one it replaces.
    ///
    /// # Errors
    /// [`PoolError::Saturated`] when starting a process would pass
    /// [`PoolLimits::max_live`](super::PoolLimits::max_live) and no idle one can be evicted;
    /// [`PoolError::Held`] when `key`'s process is held shared.
    pub async fn check_out(
        &self,
        key: Option<&K>,
        signature: &ProcessSignature,
    ) -> Result<Checkout<K, P>, PoolError> {
        let (decided, retired) = self
            .decide_then_retire(|state, retired| self.decide(state, key, signature, retired))
            .await;
        let (decision, process, generation) = decided?;
        log_decision(&decision, false, retired);
        Ok(Checkout {
            decision,
            process,
            signature: signature.clone(),
            generation,
            parts: self.parts.clone(),
            returned: false,
        })
    }

    /// An exclusive checkout's decision: what to hand out; what to retire goes to `retired`.
    fn decide(
        &self,
        state: &mut State<K, P>,
        key: Option<&K>,
        signature: &ProcessSignature,
        retired: &mut Vec<P>,
    ) -> Result<(PoolDecision, Option<P>, u64), PoolError> {
        let generation = state.generation;
        let decision = match key {
            Some(key) => {
                if let Some(held) = state.held_mut(key) {
                    return Err(PoolError::Held {
                        holders: held.holders,
                    });
                }
                match state.take_idle(key, signature, retired) {
                    Ok(process) => {
                        state.busy += 1;
                        state.stats.reused += 1;
                        return Ok((PoolDecision::Reuse, Some(process), generation));
                    }
                    Err(decision) => decision,
                }
            }
            None => PoolDecision::Start,
        };
        state.make_room(self.parts.limits.max_live, retired)?;
        state.busy += 1;
        state.stats.started += 1;
        Ok((decision, None, generation))
    }
}
