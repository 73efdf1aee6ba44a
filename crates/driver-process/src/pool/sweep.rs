//! The sweeper: the task that ends idle processes when their idle time is up, without
//! waiting for another checkout.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::{PoolKey, Resident, State};

/// Ends idle processes when their idle time is up, as long as the pool holds any (and exists):
/// sleeps until the oldest expires, shuts down every expired one, and again. A flooded one
/// (already ended by its reader) goes at the same time.
pub(super) async fn sweep_expired<K: PoolKey, P: Resident>(
    state: Weak<Mutex<State<K, P>>>,
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
            let mut ended = Vec::new();
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .expire(timeout, true, &mut ended);
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
