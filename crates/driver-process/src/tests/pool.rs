//! The resident-process pool's decisions, with a fake resident that records its shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use driver_spi::ProcessSignature;
use run_service::EnvBinding;

use crate::pool::{PoolDecision, PoolError, PoolLimits, ProcessPool, Resident};

/// A fake process: an id, whether it is alive, and a shared count of shutdowns.
#[derive(Debug)]
struct Fake {
    id: usize,
    alive: Arc<AtomicBool>,
    stopped: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Resident for Fake {
    fn is_alive(&mut self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }
    async fn shut_down(self) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

struct Fixture {
    stopped: Arc<AtomicUsize>,
    next: AtomicUsize,
}

impl Fixture {
    fn new() -> Self {
        Self {
            stopped: Arc::new(AtomicUsize::new(0)),
            next: AtomicUsize::new(1),
        }
    }
    fn spawn(&self) -> (Fake, Arc<AtomicBool>) {
        let alive = Arc::new(AtomicBool::new(true));
        let fake = Fake {
            id: self.next.fetch_add(1, Ordering::SeqCst),
            alive: Arc::clone(&alive),
            stopped: Arc::clone(&self.stopped),
        };
        (fake, alive)
    }
    /// A new process, checked out for a new conversation in `namespace` and checked in idle
    /// as `thread`'s; its switch of life.
    async fn park(
        &self,
        pool: &ProcessPool<Fake>,
        namespace: &str,
        thread: &str,
        sig: &ProcessSignature,
    ) -> Arc<AtomicBool> {
        let (process, alive) = self.spawn();
        let checkout = pool.check_out(namespace, None, sig).await.unwrap();
        checkout.check_in(thread, process).await;
        alive
    }
    fn stopped(&self) -> usize {
        self.stopped.load(Ordering::SeqCst)
    }
}

fn signature(token: &str) -> ProcessSignature {
    ProcessSignature::builder()
        .command("codex", ["app-server"])
        .secret_env([&EnvBinding::new("UI_TOKEN", token.to_owned())])
        .finish()
}

#[tokio::test]
async fn a_conversation_reuses_its_process_until_its_signature_changes() {
    let fx = Fixture::new();
    let pool = ProcessPool::new(PoolLimits::default());
    let sig = signature("token-a");

    let first = pool.check_out("ns", None, &sig).await.unwrap();
    assert_eq!(first.decision, PoolDecision::Start);
    let (process, _) = fx.spawn();
    first.check_in("thread-1", process).await;
    assert_eq!(pool.counts(), (1, 0));

    let second = pool.check_out("ns", Some("thread-1"), &sig).await.unwrap();
    assert_eq!(second.decision, PoolDecision::Reuse);
    assert_eq!(second.process.as_ref().map(|p| p.id), Some(1));
    assert_eq!(pool.counts(), (0, 1));
    let mut second = second;
    let process = second.process.take().unwrap();
    second.check_in("thread-1", process).await;

    // A rotated token: the old process is shut down before the caller starts a new one, and
    // the reason names the component, not the value.
    let rotated = pool
        .check_out("ns", Some("thread-1"), &signature("token-b"))
        .await
        .unwrap();
    assert_eq!(
        rotated.decision,
        PoolDecision::Recycle {
            changed: vec!["secret_env:UI_TOKEN".to_owned()]
        }
    );
    assert!(rotated.process.is_none());
    assert_eq!(fx.stopped(), 1);
    assert!(!format!("{:?}", rotated.decision).contains("token-"));
}

#[tokio::test]
async fn a_process_that_died_between_turns_is_replaced_and_other_conversations_start_their_own() {
    let fx = Fixture::new();
    let pool = ProcessPool::new(PoolLimits::default());
    let sig = signature("t");
    let alive = fx.park(&pool, "ns", "thread-1", &sig).await;
    alive.store(false, Ordering::SeqCst);
    let replaced = pool.check_out("ns", Some("thread-1"), &sig).await.unwrap();
    assert_eq!(replaced.decision, PoolDecision::Replace);
    assert_eq!(fx.stopped(), 1, "the dead process is reaped");
    let other = pool.check_out("ns", Some("thread-2"), &sig).await.unwrap();
    assert_eq!(other.decision, PoolDecision::Start);
    // The same conversation in another namespace is another process.
    let elsewhere = pool
        .check_out("other", Some("thread-1"), &sig)
        .await
        .unwrap();
    assert_eq!(elsewhere.decision, PoolDecision::Start);
}

#[tokio::test]
async fn limits_evict_the_least_recently_used_idle_process_and_refuse_when_all_are_busy() {
    let fx = Fixture::new();
    let pool = ProcessPool::new(PoolLimits::default().with_max_live(2));
    let sig = signature("t");
    for thread in ["a", "b"] {
        fx.park(&pool, "ns", thread, &sig).await;
    }
    assert_eq!(pool.counts(), (2, 0));
    // A third conversation evicts the oldest idle one ("a").
    let third = pool.check_out("ns", Some("c"), &sig).await.unwrap();
    assert_eq!(third.decision, PoolDecision::Start);
    assert_eq!(fx.stopped(), 1);
    let b = pool.check_out("ns", Some("b"), &sig).await.unwrap();
    assert_eq!(b.decision, PoolDecision::Reuse);
    // Both places serve turns: a fourth is refused, and nothing was shut down for it.
    let err = pool.check_out("ns", Some("d"), &sig).await.unwrap_err();
    assert_eq!(err, PoolError::Saturated);
    assert_eq!(fx.stopped(), 1);
    // Dropping a checkout without checking in frees its place.
    drop(third);
    assert!(pool.check_out("ns", Some("d"), &sig).await.is_ok());
}

#[tokio::test]
async fn the_default_pool_holds_max_live_processes_of_one_namespace() {
    // A driver's pool serves its one namespace: the documented eight are eight, not four.
    let limits = PoolLimits::default();
    let pool = ProcessPool::<Fake>::new(limits);
    let sig = signature("t");
    let mut busy = Vec::new();
    for _ in 0..limits.max_live {
        busy.push(pool.check_out("ns", None, &sig).await.unwrap());
    }
    assert_eq!(
        pool.check_out("ns", None, &sig).await.unwrap_err(),
        PoolError::Saturated,
        "and not one more"
    );
}

#[tokio::test]
async fn idle_processes_expire_and_close_ends_every_process() {
    let fx = Fixture::new();
    let pool = ProcessPool::new(PoolLimits::default().with_idle_timeout(Duration::ZERO));
    let sig = signature("t");
    fx.park(&pool, "ns", "a", &sig).await;
    let again = pool.check_out("ns", Some("a"), &sig).await.unwrap();
    assert_eq!(again.decision, PoolDecision::Start, "the idle one expired");
    assert_eq!(fx.stopped(), 1);

    let pool = ProcessPool::new(PoolLimits::default());
    fx.park(&pool, "ns", "a", &sig).await;
    let busy = pool.check_out("ns", Some("b"), &sig).await.unwrap();
    pool.close().await;
    assert_eq!(fx.stopped(), 2, "the idle process ends at close");
    let (late, _) = fx.spawn();
    busy.check_in("b", late).await;
    assert_eq!(fx.stopped(), 3, "a process checked in after close ends too");
    let after = pool.check_out("ns", None, &sig).await.unwrap();
    assert_eq!(after.decision, PoolDecision::Start, "the pool serves again");
    let (next, _) = fx.spawn();
    after.check_in("c", next).await;
    assert_eq!(fx.stopped(), 3, "a process checked out after close is kept");
    assert_eq!(pool.stats().idle, 1);
    pool.close().await;
    assert_eq!(fx.stopped(), 4);
    assert_eq!(pool.counts(), (0, 0));
}
