//! Shared checkouts: a process several holders use at once, keyed by credential namespace as
//! a worker's will be.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use driver_spi::ProcessSignature;
use runtime_env::CredentialNamespace;

use super::{Fake, Fixture, signature, wait_until};
use crate::pool::{
    PoolDecision, PoolError, PoolLimits, ProcessPool, Resident as _, SharedCheckout,
};

type Pool = ProcessPool<CredentialNamespace, Fake>;
type Share = SharedCheckout<CredentialNamespace, Fake>;

fn ns(name: &str) -> CredentialNamespace {
    name.parse().unwrap()
}

/// Why a test's `start` failed, or the pool's refusal.
#[derive(Debug, PartialEq)]
enum Failed {
    Pool(PoolError),
    Spawn,
}

impl From<PoolError> for Failed {
    fn from(err: PoolError) -> Self {
        Self::Pool(err)
    }
}

/// A pool keyed by namespace, its fake processes, one signature, and the starts that ran.
struct Scene {
    fx: Fixture,
    pool: Pool,
    sig: ProcessSignature,
    starts: AtomicUsize,
}

impl Scene {
    fn new(limits: PoolLimits) -> Self {
        Self {
            fx: Fixture::new(),
            pool: Pool::new(limits),
            sig: signature("t"),
            starts: AtomicUsize::new(0),
        }
    }
    /// A shared checkout of `key`'s process under the scene's signature.
    async fn share(&self, key: &str) -> Result<Share, Failed> {
        self.share_as(key, &self.sig).await
    }
    /// A shared checkout of `key`'s process under `sig`; its `start` spawns a fake.
    async fn share_as(&self, key: &str, sig: &ProcessSignature) -> Result<Share, Failed> {
        self.pool
            .check_out_shared(&ns(key), sig, || async {
                self.starts.fetch_add(1, Ordering::SeqCst);
                Ok(self.fx.spawn().0)
            })
            .await
    }
    fn starts(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn holders_share_one_process_which_goes_idle_when_the_last_lets_go() {
    let s = Scene::new(PoolLimits::default());
    let first = s.share("user:a").await.unwrap();
    let second = s.share("user:a").await.unwrap();
    assert_eq!(first.decision, PoolDecision::Start);
    assert_eq!(second.decision, PoolDecision::Reuse);
    assert_eq!((first.id, second.id, s.starts()), (1, 1, 1), "one process");
    let stats = s.pool.stats();
    assert_eq!(
        (stats.idle, stats.busy, stats.holders),
        (0, 1, 2),
        "{stats:?}"
    );

    drop(first);
    assert_eq!(s.pool.counts(), (0, 1), "still held");
    assert_eq!(s.fx.quieted(), 0);
    drop(second);
    assert_eq!(s.pool.counts(), (1, 0), "idle once the last holder let go");
    assert_eq!(s.fx.quieted(), 1, "and quiet");
    let again = s.share("user:a").await.unwrap();
    assert_eq!((again.decision.clone(), again.id), (PoolDecision::Reuse, 1));
    let stats = s.pool.stats();
    assert_eq!((stats.started, stats.reused), (1, 2), "{stats:?}");
    assert_eq!(s.fx.stopped(), 0);
}

#[tokio::test]
async fn one_holder_past_the_task_cap_is_refused() {
    let s = Scene::new(PoolLimits::default().with_max_tasks_per_process(2));
    let first = s.share("user:a").await.unwrap();
    let _second = s.share("user:a").await.unwrap();
    let third = s.share("user:a").await.unwrap_err();
    assert_eq!(third, Failed::Pool(PoolError::TaskCap { max: 2 }));
    assert_eq!(s.starts(), 1, "no second process for the key");
    // Another key is another process, with its own holders.
    assert!(s.share("user:b").await.is_ok());
    drop(first);
    let third = s.share("user:a").await.unwrap();
    assert_eq!((third.decision.clone(), third.id), (PoolDecision::Reuse, 1));
}

#[tokio::test]
async fn a_held_process_is_never_evicted_and_counts_against_max_live() {
    let s = Scene::new(PoolLimits::default().with_max_live(2));
    let a = s.share("user:a").await.unwrap();
    drop(s.share("user:b").await.unwrap());
    assert_eq!(s.pool.counts(), (1, 1));
    // A third namespace evicts the idle one, never the held one.
    let c = s.share("user:c").await.unwrap();
    assert_eq!(s.fx.stopped(), 1);
    assert!(a.is_alive());
    // Both places are held: a fourth is refused.
    let d = s.share("user:d").await.unwrap_err();
    assert_eq!(d, Failed::Pool(PoolError::Saturated));
    assert_eq!(s.pool.counts(), (0, 2));
    drop(c);
    assert!(s.share("user:d").await.is_ok());
}

#[tokio::test]
async fn the_idle_timeout_starts_when_the_last_holder_lets_go() {
    let timeout = Duration::from_millis(100);
    let s = Scene::new(PoolLimits::default().with_idle_timeout(timeout));
    let held = s.share("user:a").await.unwrap();
    tokio::time::sleep(timeout * 3).await;
    assert_eq!(s.fx.stopped(), 0, "a held process is not idle");
    drop(held);
    wait_until(|| s.fx.stopped() == 1).await;
    assert_eq!(s.pool.stats().evicted, 1);
}

#[tokio::test]
async fn another_signature_is_refused_while_holders_remain_then_recycles() {
    let s = Scene::new(PoolLimits::default());
    let held = s.share_as("user:a", &signature("token-a")).await.unwrap();
    let rotated = signature("token-b");
    let refused = s.share_as("user:a", &rotated).await.unwrap_err();
    assert_eq!(refused, Failed::Pool(PoolError::Held { holders: 1 }));
    assert_eq!((s.starts(), s.fx.stopped()), (1, 0));
    drop(held);
    let recycled = s.share_as("user:a", &rotated).await.unwrap();
    assert_eq!(
        recycled.decision,
        PoolDecision::Recycle {
            changed: vec!["secret_env:UI_TOKEN".to_owned()]
        }
    );
    assert_eq!(
        s.fx.stopped(),
        1,
        "the old one ended before the new one started"
    );
    assert_eq!(recycled.id, 2);
}

#[tokio::test]
async fn a_dead_process_is_replaced_and_ends_when_its_last_holder_lets_go() {
    let s = Scene::new(PoolLimits::default());
    let (first, switches) = s.fx.spawn();
    let mut process = Some(first);
    let old: Share = s
        .pool
        .check_out_shared(&ns("user:a"), &s.sig, || async {
            process.take().ok_or(Failed::Spawn)
        })
        .await
        .unwrap();
    switches.die(false);
    let new = s.share("user:a").await.unwrap();
    assert_eq!((new.decision.clone(), new.id), (PoolDecision::Replace, 2));
    assert_eq!(s.fx.stopped(), 0, "its holder still has it");
    drop(old);
    wait_until(|| s.fx.stopped() == 1).await;
    drop(new);
    let stats = s.pool.stats();
    assert_eq!((stats.idle, stats.replaced), (1, 1), "{stats:?}");
}

#[tokio::test]
async fn holders_that_come_during_a_start_wait_for_it_and_take_over_a_failed_one() {
    for fails in [false, true] {
        let s = Scene::new(PoolLimits::default());
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let key = ns("user:a");
        let (first, second, ()) = tokio::join!(
            s.pool.check_out_shared(&key, &s.sig, || async {
                let _ = gate.await;
                if fails {
                    Err(Failed::Spawn)
                } else {
                    Ok(s.fx.spawn().0)
                }
            }),
            async {
                // Comes while the first start runs.
                tokio::time::sleep(Duration::from_millis(20)).await;
                s.share("user:a").await
            },
            async {
                tokio::time::sleep(Duration::from_millis(60)).await;
                let _ = go.send(());
            },
        );
        let second = second.unwrap();
        if fails {
            assert_eq!(first.unwrap_err(), Failed::Spawn);
            assert_eq!(second.decision, PoolDecision::Start, "it started its own");
            assert_eq!((s.starts(), s.pool.stats().holders), (1, 1));
        } else {
            let first = first.unwrap();
            assert_eq!(first.decision, PoolDecision::Start);
            assert_eq!(second.decision, PoolDecision::Reuse);
            assert_eq!((first.id, second.id, s.starts()), (1, 1, 0));
        }
    }
}

#[tokio::test]
async fn a_cancelled_start_lets_go() {
    let s = Scene::new(PoolLimits::default());
    let key = ns("user:a");
    let pending = s.pool.check_out_shared(&key, &s.sig, || {
        std::future::pending::<Result<Fake, Failed>>()
    });
    assert!(
        tokio::time::timeout(Duration::from_millis(20), pending)
            .await
            .is_err()
    );
    let stats = s.pool.stats();
    assert_eq!((stats.busy, stats.holders), (0, 0), "{stats:?}");
    let next = s.share("user:a").await.unwrap();
    assert_eq!(next.decision, PoolDecision::Start);
}

#[tokio::test]
async fn close_ends_a_held_process_when_its_last_holder_lets_go() {
    let s = Scene::new(PoolLimits::default());
    let held = s.share("user:a").await.unwrap();
    s.pool.close().await;
    assert_eq!(s.fx.stopped(), 0, "its holder still has it");
    // A checkout after close does not join it.
    let after = s.share("user:a").await.unwrap();
    assert_eq!((after.decision.clone(), after.id), (PoolDecision::Start, 2));
    drop(held);
    s.pool.close().await;
    assert_eq!(s.fx.stopped(), 1, "close waited for its shutdown");
    drop(after);
    s.pool.close().await;
    assert_eq!(s.fx.stopped(), 2);
}

#[tokio::test]
async fn an_exclusive_checkout_of_a_held_key_is_refused() {
    let s = Scene::new(PoolLimits::default());
    let _held = s.share("user:a").await.unwrap();
    let err = s
        .pool
        .check_out(Some(&ns("user:a")), &s.sig)
        .await
        .unwrap_err();
    assert_eq!(err, PoolError::Held { holders: 1 });
}

#[tokio::test]
async fn a_holder_that_outlives_its_pool_ends_the_process_when_it_lets_go() {
    let s = Scene::new(PoolLimits::default());
    let held = s.share("user:a").await.unwrap();
    let Scene { fx, pool, .. } = s;
    drop(pool);
    assert_eq!(fx.stopped(), 0);
    drop(held);
    wait_until(|| fx.stopped() == 1).await;
}
