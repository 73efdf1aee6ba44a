//! Sticky leases ([`AgentBuilder::sticky_leases`](crate::AgentBuilder::sticky_leases)): the
//! agent keeps a Thread's lease between turns for as long as the driver's resident process
//! holds the Thread's conversation, so a hot Thread's turn is one durable commit (resolve,
//! then finalize-and-renew) instead of two (acquire, then finalize-and-release).
//!
//! Per Thread key the agent keeps the lease and a local deadline: the lease's store expiry as
//! this host can vouch for it, from a monotonic clock read taken *before* the commit that set
//! the expiry (a store's expiry runs from a moment after it), minus [`MARGIN`] of the TTL
//! against clock-rate drift.
//! - A run takes the Thread's entry out (so a second run of the same Thread on this agent
//!   acquires with its own owner and gets `Busy`, as without sticky leases). With at least
//!   [`HOT`] of the TTL left it skips the acquire ([`Held::Hot`]); otherwise it re-acquires
//!   under the same owner ([`Held::Cold`]), which the store accepts while the lease is ours.
//! - A clean, persisted turn of a Thread the driver still holds
//!   ([`ProcessLifecycle::holds_conversation`](driver_spi::ProcessLifecycle::holds_conversation))
//!   finalizes with `renew_leases` and puts the entry back; any other turn releases as before.
//!   A driver that cannot answer keeps today's behaviour.
//! - A task off the turn path renews every kept lease at a third of the TTL, and releases the
//!   lease of a Thread the driver no longer holds (idle eviction, recycling, death), at once
//!   when the driver announces a change ([`ProcessLifecycle::changes`](driver_spi::ProcessLifecycle::changes)),
//!   else at the next renewal. A lost lease is dropped, never released (it is not ours).
//! - [`Sticky::close`] (from `Agent::close`) releases every kept lease; a turn that ends after
//!   it releases its own.
//!
//! Fencing is the store's, unchanged: a hot turn presents its kept lease to the finalize,
//! which writes nothing when the lease is no longer current.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use driver_spi::Driver;
use thread_store::{Lease, StoreError, ThreadStore};

use crate::thread::Thread;

/// A hot turn needs at least this share of the TTL left: the run's own renewals start a
/// third of the TTL after it begins.
const HOT: (u32, u32) = (1, 2);
/// The share of the TTL a local deadline keeps in reserve against clock-rate drift.
const MARGIN: (u32, u32) = (1, 10);

fn share(ttl: Duration, (num, den): (u32, u32)) -> Duration {
    ttl * num / den
}

/// What a run starts with for its Thread's lease.
#[derive(Debug)]
pub(crate) enum Held {
    /// The kept lease, with enough time left: no acquire.
    Hot(Lease),
    /// A kept lease too close to its deadline: re-acquire under this owner.
    Cold(String),
}

/// The pipeline's three hooks. A fork takes and releases its leases as before: it holds two
/// (the new key's and its parent's).
fn of(thread: &Thread) -> Option<&Sticky> {
    thread
        .agent
        .inner
        .sticky
        .as_ref()
        .filter(|_| thread.fork_from.is_none())
}

/// The Thread's kept lease, for a run to start with ([`Sticky::take`]).
pub(crate) fn take(thread: &Thread) -> Option<Held> {
    of(thread)?.take(&thread.key)
}

/// The TTL a clean turn renews its lease to, or `None` to release ([`Sticky::renewal`]).
pub(crate) fn renewal(thread: &Thread, conversation: &str) -> Option<Duration> {
    of(thread)?.renewal(conversation)
}

/// Keeps the turn's lease after a renewing finalize committed after `before`.
pub(crate) async fn keep(thread: &Thread, leases: Vec<Lease>, before: Instant, conversation: &str) {
    if let (Some(sticky), [lease]) = (of(thread), leases.as_slice()) {
        sticky
            .keep(&thread.key, lease.clone(), before, conversation)
            .await;
    }
}

/// One kept lease.
struct Entry {
    lease: Lease,
    /// Until when this host can vouch for the lease (see the module docs).
    deadline: Instant,
    /// The conversation the driver holds for the Thread (the checkpoint's resume id).
    conversation: String,
    /// The renewal task is releasing it: a run may re-acquire under its owner, never use it.
    releasing: bool,
}

/// The agent's kept leases and the task that renews them.
pub(crate) struct Sticky {
    shared: Arc<Shared>,
    renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

struct Shared {
    store: Arc<dyn ThreadStore>,
    driver: Arc<dyn Driver>,
    ttl: Duration,
    entries: Mutex<HashMap<String, Entry>>,
    closed: AtomicBool,
}

impl Drop for Sticky {
    fn drop(&mut self) {
        // Dropped without close: the kept leases expire after their TTL.
        if let Some(task) = lock(&self.renewer).take() {
            task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section below is a plain map update that cannot leave it half done.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sticky {
    pub(crate) fn new(store: Arc<dyn ThreadStore>, driver: Arc<dyn Driver>, ttl: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                driver,
                ttl,
                entries: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
            }),
            renewer: Mutex::new(None),
        }
    }

    /// Takes the Thread's kept lease for a run, if there is one.
    pub(crate) fn take(&self, key: &str) -> Option<Held> {
        let entry = lock(&self.shared.entries).remove(key)?;
        let left = entry.deadline.saturating_duration_since(Instant::now());
        Some(if !entry.releasing && left >= share(self.shared.ttl, HOT) {
            Held::Hot(entry.lease)
        } else {
            Held::Cold(entry.lease.owner)
        })
    }

    /// The TTL a clean turn's finalize renews its lease to, when the driver holds the
    /// Thread's `conversation`; `None`: release as usual.
    pub(crate) fn renewal(&self, conversation: &str) -> Option<Duration> {
        (!self.shared.closed.load(Ordering::SeqCst) && self.shared.holds(conversation))
            .then_some(self.shared.ttl)
    }

    /// Keeps `lease` after a finalize that renewed it, committed after `before`. After close
    /// it is released instead.
    pub(crate) async fn keep(&self, key: &str, lease: Lease, before: Instant, conversation: &str) {
        let kept = {
            let mut entries = lock(&self.shared.entries);
            // Checked under the lock that close drains under: no entry outlives a close.
            if self.shared.closed.load(Ordering::SeqCst) {
                false
            } else {
                entries.insert(
                    key.to_owned(),
                    Entry {
                        lease: lease.clone(),
                        deadline: self.shared.deadline(before),
                        conversation: conversation.to_owned(),
                        releasing: false,
                    },
                );
                true
            }
        };
        if kept {
            self.start_renewer();
        } else {
            let _ = self.shared.store.release_lease(&lease).await;
        }
    }

    /// Releases every kept lease; later turns release their own.
    pub(crate) async fn close(&self) {
        let drained: Vec<Entry> = {
            let mut entries = lock(&self.shared.entries);
            self.shared.closed.store(true, Ordering::SeqCst);
            entries.drain().map(|(_, e)| e).collect()
        };
        if let Some(task) = lock(&self.renewer).take() {
            task.abort();
        }
        let released = drained.len();
        for entry in drained {
            let _ = self.shared.store.release_lease(&entry.lease).await;
        }
        if released > 0 {
            tracing::debug!(released, "sticky leases released on close");
        }
    }

    fn start_renewer(&self) {
        let mut renewer = lock(&self.renewer);
        if renewer.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to renew on: each kept lease is used or re-acquired on its deadline.
            return;
        };
        let changes = self
            .shared
            .driver
            .process_lifecycle()
            .and_then(driver_spi::ProcessLifecycle::changes);
        *renewer = Some(runtime.spawn(renew_loop(Arc::downgrade(&self.shared), changes)));
    }
}

impl Shared {
    fn holds(&self, conversation: &str) -> bool {
        self.driver
            .process_lifecycle()
            .is_some_and(|l| l.holds_conversation(conversation))
    }

    fn deadline(&self, before: Instant) -> Instant {
        before + self.ttl.saturating_sub(share(self.ttl, MARGIN))
    }

    /// Whether `key`'s entry is still the one for `lease` (a run may have taken it since).
    fn is_current(entries: &HashMap<String, Entry>, key: &str, lease: &Lease) -> bool {
        entries.get(key).is_some_and(|e| e.lease == *lease)
    }

    /// One pass: releases the leases of Threads the driver no longer holds, and with `renew`
    /// renews the others.
    async fn sweep(&self, renew: bool) {
        let snapshot: Vec<(String, Lease, String)> = lock(&self.entries)
            .iter()
            .filter(|(_, e)| !e.releasing)
            .map(|(k, e)| (k.clone(), e.lease.clone(), e.conversation.clone()))
            .collect();
        for (key, lease, conversation) in snapshot {
            if !self.holds(&conversation) {
                self.release(&key, &lease).await;
            } else if renew {
                self.renew(&key, &lease).await;
            }
        }
    }

    /// Releases `key`'s kept lease, unless a run took it meanwhile.
    async fn release(&self, key: &str, lease: &Lease) {
        {
            let mut entries = lock(&self.entries);
            match entries.get_mut(key) {
                Some(e) if e.lease == *lease => e.releasing = true,
                _ => return,
            }
        }
        let _ = self.store.release_lease(lease).await;
        let mut entries = lock(&self.entries);
        if Self::is_current(&entries, key, lease) {
            entries.remove(key);
        }
        tracing::debug!("sticky lease released: the driver no longer holds the Thread");
    }

    async fn renew(&self, key: &str, lease: &Lease) {
        let before = Instant::now();
        let renewed = self.store.renew_lease(lease, self.ttl).await;
        let mut entries = lock(&self.entries);
        if !Self::is_current(&entries, key, lease) {
            return;
        }
        match renewed {
            Ok(_) => {
                if let Some(e) = entries.get_mut(key) {
                    e.deadline = self.deadline(before);
                }
            }
            Err(StoreError::LeaseLost { .. }) => {
                entries.remove(key);
                tracing::warn!("sticky lease lost while the Thread was idle; dropped");
            }
            // A transient failure: the next pass retries; the deadline decides hot or cold.
            Err(_) => tracing::debug!("sticky lease renewal failed; retrying"),
        }
    }
}

/// Renews kept leases at a third of the TTL, and looks again whenever the driver announces
/// that processes ended; ends with the agent.
async fn renew_loop(shared: Weak<Shared>, mut changes: Option<tokio::sync::watch::Receiver<u64>>) {
    let Some(ttl) = shared.upgrade().map(|s| s.ttl) else {
        return;
    };
    let mut tick = tokio::time::interval(ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        let renew = tokio::select! {
            _ = tick.tick() => true,
            changed = async {
                match changes.as_mut() {
                    Some(rx) => rx.changed().await,
                    None => std::future::pending().await,
                }
            } => {
                if changed.is_err() {
                    // The driver's pool is gone: poll on the timer only.
                    changes = None;
                }
                false
            }
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        shared.sweep(renew).await;
    }
}
