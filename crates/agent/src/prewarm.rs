//! Pre-warmed first turns: [`Thread::prewarm`] and [`Agent::prewarm`], and the attachments an
//! agent keeps for the pre-warmed Threads' next runs.
//!
//! A pre-warm runs the whole pre-launch path of a run (the contract, the providers'
//! attachments, the endpoint policy, the compatibility decision with its resume guard and
//! `resume_only`), then asks the driver to start the run's process and open its session
//! without a prompt ([`Driver::prewarm`](driver_spi::Driver::prewarm)). It takes no lease and
//! writes nothing to the store.
//!
//! # The kept attachment
//! The run must find the process configured exactly as it will be (its
//! [`ProcessSignature`](driver_spi::ProcessSignature)), and a provider may hand out a fresh
//! port and token on every attach. So the pre-warm's attachment is kept, per Thread key, and
//! the Thread's next run takes it instead of attaching again (it is detached after that run,
//! under the pre-warm's run id). A kept attachment is detached without a run when the
//! driver's process would have expired ([`Prewarmed::expires_after`]), when a later pre-warm
//! of the same key replaces it, and by [`Agent::close`]; dropping the agent detaches in the
//! background when a Tokio runtime is there to do it.
//!
//! [`Prewarmed::expires_after`]: driver_spi::Prewarmed::expires_after

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use driver_spi::PrewarmTicket;
use run_service::{RunAttachment, RunId};
use tokio::sync::watch;

use crate::pipeline;
use crate::{Agent, Thread, ThreadError, Verdict};

/// What a pre-warm left ready for the Thread's next run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Prewarm {
    /// What that run will do with the stored conversation, as [`Thread::explain`] says.
    pub verdict: Verdict,
    /// Whether a live idle process already fit (the driver started nothing).
    pub reused: bool,
    /// How long the process stays ready unused, when the driver says; the kept attachment is
    /// detached then.
    pub expires_after: Option<Duration>,
}

/// A kept attachment: what the pre-warm attached, under which run id, and the driver's ticket.
pub(crate) struct Warm {
    pub(crate) run_id: RunId,
    pub(crate) attached: pipeline::warm::Attached,
    pub(crate) attachments: Vec<RunAttachment>,
    pub(crate) ticket: Option<PrewarmTicket>,
}

struct Slot {
    id: u64,
    warm: Warm,
}

/// The kept attachments of an agent, by Thread key.
#[derive(Default)]
pub(crate) struct Slots {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
    next: AtomicU64,
}

impl Slots {
    /// Takes `key`'s kept attachment, for its run.
    pub(crate) fn take(&self, key: &str) -> Option<Warm> {
        lock(&self.slots).remove(key).map(|slot| slot.warm)
    }

    /// Keeps `warm` for `key`'s next run, until `expires_after`; detaches the one it replaces.
    async fn keep(
        &self,
        key: String,
        warm: Warm,
        expires_after: Option<Duration>,
        budget: Duration,
    ) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let replaced = lock(&self.slots).insert(key.clone(), Slot { id, warm });
        if let (Some(after), Ok(runtime)) = (expires_after, tokio::runtime::Handle::try_current()) {
            runtime.spawn(expire(Arc::downgrade(&self.slots), key, id, after, budget));
        }
        if let Some(old) = replaced {
            pipeline::warm::release(old.warm, budget).await;
        }
    }

    /// Detaches every kept attachment (the agent closes).
    pub(crate) async fn release_all(&self, budget: Duration) {
        let all: Vec<Slot> = lock(&self.slots).drain().map(|(_, slot)| slot).collect();
        for slot in all {
            pipeline::warm::release(slot.warm, budget).await;
        }
    }
}

impl Drop for Slots {
    /// A backstop: what is still kept is detached in the background, when there is a runtime.
    fn drop(&mut self) {
        let all: Vec<Slot> = lock(&self.slots).drain().map(|(_, slot)| slot).collect();
        if let (false, Ok(runtime)) = (all.is_empty(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                for slot in all {
                    pipeline::warm::release(slot.warm, Duration::from_secs(5)).await;
                }
            });
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Detaches `key`'s kept attachment `id` after `after`, unless a run took it or a later
/// pre-warm replaced it.
async fn expire(
    slots: Weak<Mutex<HashMap<String, Slot>>>,
    key: String,
    id: u64,
    after: Duration,
    budget: Duration,
) {
    tokio::time::sleep(after).await;
    let Some(slots) = slots.upgrade() else {
        return;
    };
    let expired = {
        let mut slots = lock(&slots);
        match slots.get(&key) {
            Some(slot) if slot.id == id => slots.remove(&key),
            _ => None,
        }
    };
    if let Some(slot) = expired {
        tracing::debug!("a pre-warmed Thread's attachment expired unused");
        pipeline::warm::release(slot.warm, budget).await;
    }
}

impl Thread {
    /// Gets this Thread's next run ready before its prompt exists: the whole pre-launch path
    /// of a run (the contract, the providers' attachments, the endpoint policy, the
    /// compatibility decision with its resume guard and [`resume_only`](Self::resume_only)),
    /// then the driver starts the run's process and opens (or resumes) its session without a
    /// prompt ([`Driver::prewarm`](driver_spi::Driver::prewarm)). The next
    /// [`run`](Self::run) of this key on this agent finds it ready, including a Thread with
    /// no stored session yet. It takes no lease and writes nothing to the store.
    ///
    /// The attachment is kept for that run, so a provider that hands out a fresh endpoint
    /// per attach does not make the run's process configuration differ; it is detached after
    /// that run, when the driver's process would have expired unused
    /// ([`Prewarm::expires_after`]), when a later pre-warm of the key replaces it, and by
    /// [`Agent::close`]. Anything that does differ at the run (a rotated secret, another
    /// permission policy on the handle, an output schema passed at launch) recycles the
    /// process before the prompt, as for any resident turn.
    ///
    /// # Errors
    /// Exactly the error the run would fail with before its driver runs (`Incompatible`,
    /// `NotFound` under `resume_only`, `Foreign`, `EndpointRefused`, `RunService`, …), before
    /// any process starts; [`ThreadError::Unsupported`] with
    /// [`Unsupported::Prewarm`](driver_spi::Unsupported::Prewarm) when the driver keeps no
    /// process (one process per turn); the driver's failure to start the process; and
    /// [`ThreadError::Closed`] after [`Agent::close`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agent::{Agent, ThreadError, Unsupported};
    /// # use driver_spi::reference::ReferenceDriver;
    /// # use thread_store::memory::MemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .build()
    ///     .unwrap();
    /// // The reference driver keeps no real process: it refuses, as a per-turn CLI driver does.
    /// let refused = agent.thread("support/42").prewarm().await;
    /// assert!(matches!(refused, Err(ThreadError::Unsupported(Unsupported::Prewarm))));
    /// # }
    /// ```
    pub async fn prewarm(&self) -> Result<Prewarm, ThreadError> {
        let run_id = RunId::new(format!("prewarm-{}", uuid::Uuid::now_v7().simple()));
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let registration = self.agent.register(run_id.clone(), cancel_tx)?;
        let warmed = pipeline::prewarm(self, &run_id, cancel_rx).await;
        drop(registration);
        let (prewarm, warm) = warmed?;
        let inner = &self.agent.inner;
        inner
            .prewarmed
            .keep(
                self.key.clone(),
                warm,
                prewarm.expires_after,
                inner.teardown_budget,
            )
            .await;
        if self.agent.is_closed() {
            // Closed meanwhile: what close released missed this one.
            inner.prewarmed.release_all(inner.teardown_budget).await;
            return Err(ThreadError::Closed);
        }
        Ok(prewarm)
    }
}

impl Agent {
    /// Pre-warms the Threads of `keys` ([`Thread::prewarm`] of `self.thread(key)` each, at
    /// once), for a host that knows which conversations its users are about to open. Each
    /// key's outcome, in the order given.
    pub async fn prewarm<I, K>(&self, keys: I) -> Vec<(String, Result<Prewarm, ThreadError>)>
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        let mut tasks = tokio::task::JoinSet::new();
        for (at, key) in keys.iter().enumerate() {
            let thread = self.thread(key.clone());
            tasks.spawn(async move { (at, thread.prewarm().await) });
        }
        let mut outcomes: Vec<Option<Result<Prewarm, ThreadError>>> =
            keys.iter().map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            if let Ok((at, outcome)) = joined {
                outcomes[at] = Some(outcome);
            }
        }
        keys.into_iter()
            .zip(outcomes)
            .map(|(key, outcome)| (key, outcome.unwrap_or(Err(ThreadError::Cancelled))))
            .collect()
    }
}
