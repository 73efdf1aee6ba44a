//! What a host may read of the pool without touching it: whether a key's process lives
//! ([`ProcessPool::holds`]), and a generation bumped whenever processes leave the pool to end
//! ([`ProcessPool::changes`]). A CLI driver answers `ProcessLifecycle::holds_conversation`
//! and `ProcessLifecycle::changes` with them, which an agent's sticky leases follow.

use super::{PoolKey, ProcessPool, Resident, State};

impl<K: PoolKey, P: Resident> State<K, P> {
    /// Processes left the pool to end (evicted, recycled, replaced, retired, closed).
    pub(super) fn ended(&mut self) {
        // `send_modify` updates the value with no receiver too, so a later subscriber sees it.
        self.changes.send_modify(|generation| *generation += 1);
    }
}

impl<K: PoolKey, P: Resident> ProcessPool<K, P> {
    /// Whether a live process is placed under `key` now: idle there (and still running), or
    /// held shared and open to new holders. A process checked out exclusively for a turn is
    /// nobody's place until it is checked in, so it does not count. Read-only: it starts, ends
    /// and reserves nothing, and the answer may be stale by the time it is read.
    ///
    /// ```
    /// use driver_process::pool::{PoolLimits, ProcessPool, Resident};
    ///
    /// struct Idle;
    /// #[async_trait::async_trait]
    /// impl Resident for Idle {
    ///     fn is_alive(&self) -> bool { true }
    ///     async fn shut_down(self) {}
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let pool: ProcessPool<&str, Idle> = ProcessPool::new(PoolLimits::default());
    /// let signature = driver_spi::ProcessSignature::builder().finish();
    /// let changes = pool.changes();
    /// let checkout = pool.check_out(None, &signature).await.unwrap();
    /// assert!(!pool.holds(&"chat-1"));
    /// checkout.check_in("chat-1", Idle).await;
    /// assert!(pool.holds(&"chat-1"));
    /// pool.close().await;
    /// assert!(!pool.holds(&"chat-1"));
    /// assert!(changes.has_changed().unwrap());
    /// # });
    /// ```
    pub fn holds(&self, key: &K) -> bool {
        let state = self.parts.lock();
        state
            .idle
            .iter()
            .any(|i| i.key == *key && i.process.is_alive())
            || state.held.iter().any(|h| !h.detached && h.key == *key)
    }

    /// A receiver of the pool's generation, bumped whenever processes leave the pool to end:
    /// an idle one evicted (idle timeout, a cap, a fork), recycled, found dead, or closed. A
    /// process that dies while idle is seen when the pool next looks at it, or by
    /// [`holds`](Self::holds), which checks that it still runs.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.parts.lock().changes.subscribe()
    }
}
