//! The resident-process pool's decisions and limits, with a fake resident that records its
//! shutdown; `shared` holds the shared checkouts' tests. Each limit has a test that it binds:
//! `max_live` (`limits_evict_the_least_recently_used_idle_process_and_refuse_when_all_are_busy`,
//! `the_default_pool_holds_max_live_processes_of_one_namespace`, and shared processes count
//! in `shared::a_held_process_is_never_evicted_and_counts_against_max_live`), `idle_timeout`
//! (`the_sweeper_ends_an_idle_process_at_its_idle_timeout_without_a_checkout`),
//! `max_tasks_per_process` (`shared::one_holder_past_the_task_cap_is_refused`) and
//! `max_idle_output`: the pool's part (it quiets a process that becomes idle, and counts
//! one that flooded) here, the budget itself in
//! `peer::between_turns_the_peer_is_quiet_and_past_its_budget_it_is_ended`
//! and, through a driver, in `driver-codex`'s `a_process_that_floods_while_idle_is_ended`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use driver_spi::ProcessSignature;
use run_service::EnvBinding;

use crate::pool::{ConversationKey, PoolDecision, PoolError, PoolLimits, ProcessPool, Resident};

mod shared;

/// A fake process: an id, whether it is alive or flooded, and shared counts of shutdowns and
/// quietings.
#[derive(Debug)]
struct Fake {
    id: usize,
    alive: Arc<AtomicBool>,
    flooded: Arc<AtomicBool>,
    stopped: Arc<AtomicUsize>,
    quieted: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Resident for Fake {
    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }
    fn flooded(&self) -> bool {
        self.flooded.load(Ordering::SeqCst)
    }
    fn quiet(&mut self) {
        self.quieted.fetch_add(1, Ordering::SeqCst);
    }
    async fn shut_down(self) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

/// The switches of one fake process.
struct Switches {
    alive: Arc<AtomicBool>,
    flooded: Arc<AtomicBool>,
}

impl Switches {
    /// It dies (for writing past its idle budget, when `flooded`).
    fn die(&self, flooded: bool) {
        self.flooded.store(flooded, Ordering::SeqCst);
        self.alive.store(false, Ordering::SeqCst);
    }
}

struct Fixture {
    stopped: Arc<AtomicUsize>,
    quieted: Arc<AtomicUsize>,
    next: AtomicUsize,
}

type Pool = ProcessPool<ConversationKey, Fake>;

impl Fixture {
    fn new() -> Self {
        Self {
            stopped: Arc::new(AtomicUsize::new(0)),
            quieted: Arc::new(AtomicUsize::new(0)),
            next: AtomicUsize::new(1),
        }
    }
    fn spawn(&self) -> (Fake, Switches) {
        let switches = Switches {
            alive: Arc::new(AtomicBool::new(true)),
            flooded: Arc::new(AtomicBool::new(false)),
        };
        let fake = Fake {
            id: self.next.fetch_add(1, Ordering::SeqCst),
            alive: Arc::clone(&switches.alive),
            flooded: Arc::clone(&switches.flooded),
            stopped: Arc::clone(&self.stopped),
            quieted: Arc::clone(&self.quieted),
        };
        (fake, switches)
    }
    /// A new process, checked out for a new conversation and checked in idle as `key`'s; its
    /// switches.
    async fn park(&self, pool: &Pool, key: &ConversationKey, sig: &ProcessSignature) -> Switches {
        let (process, switches) = self.spawn();
        let checkout = pool.check_out(None, sig).await.unwrap();
        checkout.check_in(key.clone(), process).await;
        switches
    }
    fn stopped(&self) -> usize {
        self.stopped.load(Ordering::SeqCst)
    }
    fn quieted(&self) -> usize {
        self.quieted.load(Ordering::SeqCst)
    }
}

fn signature(token: &str) -> ProcessSignature {
    ProcessSignature::builder()
        .command("codex", ["app-server"])
        .secret_env([&EnvBinding::new("UI_TOKEN", token.to_owned())])
        .finish()
}

/// `thread` in namespace `ns`.
fn key(ns: &str, thread: &str) -> ConversationKey {
    ConversationKey::new(ns.parse().unwrap(), thread)
}

/// Waits up to five seconds for `done`.
async fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_conversation_reuses_its_process_until_its_signature_changes() {
    let fx = Fixture::new();
    let pool = Pool::new(PoolLimits::default());
    let sig = signature("token-a");
    let thread = key("ns", "thread-1");

    let first = pool.check_out(None, &sig).await.unwrap();
    assert_eq!(first.decision, PoolDecision::Start);
    let (process, _) = fx.spawn();
    first.check_in(thread.clone(), process).await;
    assert_eq!(pool.counts(), (1, 0));

    let second = pool.check_out(Some(&thread), &sig).await.unwrap();
    assert_eq!(second.decision, PoolDecision::Reuse);
    assert_eq!(second.process.as_ref().map(|p| p.id), Some(1));
    assert_eq!(pool.counts(), (0, 1));
    let mut second = second;
    let process = second.process.take().unwrap();
    second.check_in(thread.clone(), process).await;

    // A rotated token: the old process is shut down before the caller starts a new one, and
    // the reason names the component, not the value.
    let rotated = pool
        .check_out(Some(&thread), &signature("token-b"))
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
    let pool = Pool::new(PoolLimits::default());
    let sig = signature("t");
    let switches = fx.park(&pool, &key("ns", "thread-1"), &sig).await;
    switches.die(false);
    let replaced = pool
        .check_out(Some(&key("ns", "thread-1")), &sig)
        .await
        .unwrap();
    assert_eq!(replaced.decision, PoolDecision::Replace);
    assert_eq!(fx.stopped(), 1, "the dead process is reaped");
    let other = pool
        .check_out(Some(&key("ns", "thread-2")), &sig)
        .await
        .unwrap();
    assert_eq!(other.decision, PoolDecision::Start);
    // The same conversation in another namespace is another process.
    let elsewhere = pool
        .check_out(Some(&key("other", "thread-1")), &sig)
        .await
        .unwrap();
    assert_eq!(elsewhere.decision, PoolDecision::Start);
}

#[tokio::test]
async fn limits_evict_the_least_recently_used_idle_process_and_refuse_when_all_are_busy() {
    let fx = Fixture::new();
    let pool = Pool::new(PoolLimits::default().with_max_live(2));
    let sig = signature("t");
    for thread in ["a", "b"] {
        fx.park(&pool, &key("ns", thread), &sig).await;
    }
    assert_eq!(pool.counts(), (2, 0));
    // A third conversation evicts the oldest idle one ("a").
    let third = pool.check_out(Some(&key("ns", "c")), &sig).await.unwrap();
    assert_eq!(third.decision, PoolDecision::Start);
    assert_eq!(fx.stopped(), 1);
    let b = pool.check_out(Some(&key("ns", "b")), &sig).await.unwrap();
    assert_eq!(b.decision, PoolDecision::Reuse);
    // Both places serve turns: a fourth is refused, and nothing was shut down for it.
    let err = pool
        .check_out(Some(&key("ns", "d")), &sig)
        .await
        .unwrap_err();
    assert_eq!(err, PoolError::Saturated);
    assert_eq!(fx.stopped(), 1);
    // Dropping a checkout without checking in frees its place.
    drop(third);
    assert!(pool.check_out(Some(&key("ns", "d")), &sig).await.is_ok());
}

#[tokio::test]
async fn the_default_pool_holds_max_live_processes_of_one_namespace() {
    // A driver's pool serves its one namespace: the documented eight are eight, not four.
    let limits = PoolLimits::default();
    let pool = Pool::new(limits);
    let sig = signature("t");
    let mut busy = Vec::new();
    for _ in 0..limits.max_live {
        busy.push(pool.check_out(None, &sig).await.unwrap());
    }
    assert_eq!(
        pool.check_out(None, &sig).await.unwrap_err(),
        PoolError::Saturated,
        "and not one more"
    );
}

#[tokio::test]
async fn idle_processes_expire_and_close_ends_every_process() {
    let fx = Fixture::new();
    let pool = Pool::new(PoolLimits::default().with_idle_timeout(Duration::ZERO));
    let sig = signature("t");
    let a = key("ns", "a");
    fx.park(&pool, &a, &sig).await;
    let again = pool.check_out(Some(&a), &sig).await.unwrap();
    assert_eq!(again.decision, PoolDecision::Start, "the idle one expired");
    assert_eq!(fx.stopped(), 1);

    let pool = Pool::new(PoolLimits::default());
    fx.park(&pool, &a, &sig).await;
    let busy = pool.check_out(Some(&key("ns", "b")), &sig).await.unwrap();
    pool.close().await;
    assert_eq!(fx.stopped(), 2, "the idle process ends at close");
    let (late, _) = fx.spawn();
    busy.check_in(key("ns", "b"), late).await;
    assert_eq!(fx.stopped(), 3, "a process checked in after close ends too");
    let after = pool.check_out(None, &sig).await.unwrap();
    assert_eq!(after.decision, PoolDecision::Start, "the pool serves again");
    let (next, _) = fx.spawn();
    after.check_in(key("ns", "c"), next).await;
    assert_eq!(fx.stopped(), 3, "a process checked out after close is kept");
    assert_eq!(pool.stats().idle, 1);
    pool.close().await;
    assert_eq!(fx.stopped(), 4);
    assert_eq!(pool.counts(), (0, 0));
}

#[tokio::test]
async fn the_sweeper_ends_an_idle_process_at_its_idle_timeout_without_a_checkout() {
    let fx = Fixture::new();
    let pool = Pool::new(PoolLimits::default().with_idle_timeout(Duration::from_millis(100)));
    let sig = signature("t");
    fx.park(&pool, &key("ns", "a"), &sig).await;
    assert_eq!(fx.stopped(), 0);
    // No checkout from here on: the sweeper alone ends it.
    wait_until(|| fx.stopped() == 1).await;
    let stats = pool.stats();
    assert_eq!((stats.idle, stats.evicted), (0, 1), "{stats:?}");
}

#[tokio::test]
async fn a_process_checked_in_is_quieted_and_one_that_flooded_while_idle_is_counted() {
    let fx = Fixture::new();
    let pool = Pool::new(PoolLimits::default());
    let sig = signature("t");
    let thread = key("ns", "a");
    let switches = fx.park(&pool, &thread, &sig).await;
    // Quiet from its check-in: what it writes now counts against `max_idle_output`.
    assert_eq!(fx.quieted(), 1);
    // Its reader ended it for writing past the budget.
    switches.die(true);
    let next = pool.check_out(Some(&thread), &sig).await.unwrap();
    assert_eq!(next.decision, PoolDecision::Replace);
    let stats = pool.stats();
    assert_eq!((stats.flooded, stats.replaced), (1, 1), "{stats:?}");
    assert_eq!(fx.stopped(), 1, "and reaped");
}

#[test]
fn a_conversation_key_never_shows_its_conversation() {
    let key = key("user:alice", "provider-thread-7f3a");
    let shown = format!("{key:?}");
    assert!(!shown.contains("provider-thread"), "{shown}");
    assert!(shown.contains("user:alice"), "{shown}");
}
