//! The conformance kit: named contracts (TS-01 …) that every [`ThreadStore`] must pass.
//!
//! An adapter's test builds a [`Factory`] and calls [`run`]; the returned [`Report`] lists each
//! contract's outcome, and [`Report::assert_all_passed`] panics naming every failed contract id.
//!
//! ```
//! use std::sync::Arc;
//! use thread_store::conformance::{self, Factory, Harness};
//! use thread_store::{ManualClock, StoreError, memory::MemoryStore};
//!
//! struct Memory;
//!
//! #[async_trait::async_trait]
//! impl Factory for Memory {
//!     async fn create(&self) -> Result<Harness, StoreError> {
//!         let clock = ManualClock::starting_now();
//!         Ok(Harness::manual(Arc::new(MemoryStore::with_clock(Arc::new(clock.clone()))), clock))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! conformance::run(&Memory).await.assert_all_passed();
//! # });
//! ```
//!
//! Every contract works under its own random key and target namespace, so a factory may hand
//! out stores that share one database. Expiry contracts advance a [`ManualClock`] when the
//! harness has one, and otherwise sleep past short real TTLs (about one second each, a few
//! times per run).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};

use crate::{
    Compatibility, FinalizeRequest, Lease, ListQuery, ManualClock, Query, RecordId, RecordStatus,
    SessionState, StoreError, ThreadRecord, ThreadStore, Timestamp,
};

/// How a harness's store tells time.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TimeControl {
    /// The store reads this clock: the kit advances it to expire leases.
    Manual(ManualClock),
    /// The store reads a real clock (the PostgreSQL server's): the kit sleeps.
    RealTime,
}

/// A store under test, and how to move its time.
#[derive(Debug, Clone)]
pub struct Harness {
    /// The store.
    pub store: Arc<dyn ThreadStore>,
    /// Its time control.
    pub time: TimeControl,
}

impl Harness {
    /// A store whose lease expiry follows `clock`.
    pub fn manual(store: Arc<dyn ThreadStore>, clock: ManualClock) -> Self {
        Self {
            store,
            time: TimeControl::Manual(clock),
        }
    }

    /// A store on a real clock.
    pub fn real_time(store: Arc<dyn ThreadStore>) -> Self {
        Self {
            store,
            time: TimeControl::RealTime,
        }
    }

    /// A TTL that the kit can outlast quickly.
    fn short_ttl(&self) -> Duration {
        match self.time {
            TimeControl::Manual(_) => Duration::from_secs(30),
            TimeControl::RealTime => Duration::from_millis(1000),
        }
    }

    /// Lets a lease of `ttl`, taken now, expire.
    async fn outlast(&self, ttl: Duration) {
        match &self.time {
            TimeControl::Manual(clock) => clock.advance(ttl + Duration::from_millis(1)),
            TimeControl::RealTime => tokio::time::sleep(ttl + Duration::from_millis(300)).await,
        }
    }
}

/// Makes a store for each contract. Stores may share storage: contracts use disjoint keys.
#[async_trait::async_trait]
pub trait Factory: Send + Sync {
    /// A store to run one contract against.
    async fn create(&self) -> Result<Harness, StoreError>;

    /// A second, independent handle on the storage of the store `create` returned last, as
    /// another process would open it (the same file, the same schema), sharing its time
    /// control. TS-19 opens one, takes a lease through it and drops it mid-turn, as a killed
    /// process would.
    ///
    /// The default hands back `harness` itself, for adapters whose storage lives only as long
    /// as the handle (the memory store): dropping a clone then loses nothing.
    async fn reopen(&self, harness: &Harness) -> Result<Harness, StoreError> {
        Ok(harness.clone())
    }
}

/// One contract's id and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contract {
    /// The stable id, such as `TS-01`.
    pub id: &'static str,
    /// What it checks.
    pub name: &'static str,
}

/// Every contract, in run order.
pub const CONTRACTS: &[Contract] = &[
    Contract {
        id: "TS-01",
        name: "resolving a missing key or id returns nothing",
    },
    Contract {
        id: "TS-02",
        name: "a finalize with a stale, foreign or expired lease writes nothing",
    },
    Contract {
        id: "TS-03",
        name: "a finalize future dropped mid-flight leaves nothing partial",
    },
    Contract {
        id: "TS-04",
        name: "archive plus rebind hides the old record from key lookup, keeps it by id",
    },
    Contract {
        id: "TS-05",
        name: "require-key-absent writes nothing on conflict",
    },
    Contract {
        id: "TS-06",
        name: "a lease held by another live owner is Busy",
    },
    Contract {
        id: "TS-07",
        name: "re-acquiring (same owner, expired, released) strictly increases the token",
    },
    Contract {
        id: "TS-08",
        name: "renew keeps a current lease and refuses a stale one with LeaseLost",
    },
    Contract {
        id: "TS-09",
        name: "release is idempotent and ignores stale leases",
    },
    Contract {
        id: "TS-10",
        name: "finalize with release frees exactly the validated leases, in the same commit",
    },
    Contract {
        id: "TS-11",
        name: "N concurrent acquirers of one target get exactly one winner",
    },
    Contract {
        id: "TS-12",
        name: "records round-trip deep-equal",
    },
    Contract {
        id: "TS-13",
        name: "list pages are stable, ordered and complete",
    },
    Contract {
        id: "TS-14",
        name: "delete removes everything for the key and nothing else",
    },
    Contract {
        id: "TS-15",
        name: "invalid requests are refused and write nothing",
    },
    Contract {
        id: "TS-16",
        name: "delete fences the key: a finalize under a lease taken before it is LeaseLost",
    },
    Contract {
        id: "TS-17",
        name: "lease_holder reports the current holder, read-only; free and expired are None",
    },
    Contract {
        id: "TS-18",
        name: "concurrent finalizes each validate their own leases: a failing one fails alone",
    },
    Contract {
        id: "TS-19",
        name: "a holder gone between acquire and finalize (killed) is fenced out for good",
    },
];

/// One contract's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Which contract.
    pub contract: Contract,
    /// `Err` holds the failure message (with the kit's source line).
    pub result: Result<(), String>,
}

/// The outcome of every contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One entry per contract, in run order.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// The failed outcomes.
    pub fn failures(&self) -> Vec<&Outcome> {
        self.outcomes.iter().filter(|o| o.result.is_err()).collect()
    }

    /// Panics, naming each failed contract id and its message, unless every contract passed.
    #[track_caller]
    pub fn assert_all_passed(&self) {
        let failures = self.failures();
        if !failures.is_empty() {
            panic!("thread-store conformance failed:\n{self}");
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for o in &self.outcomes {
            match &o.result {
                Ok(()) => writeln!(f, "ok   {} {}", o.contract.id, o.contract.name)?,
                Err(e) => writeln!(f, "FAIL {} {}: {e}", o.contract.id, o.contract.name)?,
            }
        }
        let failed = self.failures().len();
        write!(
            f,
            "{} passed, {failed} failed",
            self.outcomes.len() - failed
        )
    }
}

/// Runs every contract in [`CONTRACTS`], each on a fresh store from `factory`.
pub async fn run(factory: &dyn Factory) -> Report {
    let mut outcomes = Vec::with_capacity(CONTRACTS.len());
    for contract in CONTRACTS {
        let result = match factory.create().await {
            Ok(h) => {
                let ns = format!("ts/{}/{}/", contract.id, RecordId::generate());
                run_one(contract.id, factory, &h, &ns).await
            }
            Err(e) => Err(format!("the factory failed: {e}")),
        };
        outcomes.push(Outcome {
            contract: *contract,
            result,
        });
    }
    Report { outcomes }
}

async fn run_one(id: &str, factory: &dyn Factory, h: &Harness, ns: &str) -> Result<(), String> {
    match id {
        "TS-01" => ts01_resolve_missing(h, ns).await,
        "TS-02" => ts02_stale_finalize(h, ns).await,
        "TS-03" => ts03_dropped_finalize(h, ns).await,
        "TS-04" => ts04_archive_rebind(h, ns).await,
        "TS-05" => ts05_require_key_absent(h, ns).await,
        "TS-06" => ts06_busy(h, ns).await,
        "TS-07" => ts07_token_increases(h, ns).await,
        "TS-08" => ts08_renew(h, ns).await,
        "TS-09" => ts09_release_idempotent(h, ns).await,
        "TS-10" => ts10_finalize_release(h, ns).await,
        "TS-11" => concurrency::ts11_one_winner(h, ns).await,
        "TS-12" => ts12_round_trip(h, ns).await,
        "TS-13" => ts13_list_pages(h, ns).await,
        "TS-14" => ts14_delete(h, ns).await,
        "TS-15" => ts15_invalid(h, ns).await,
        "TS-16" => ts16_delete_fences(h, ns).await,
        "TS-17" => ts17_lease_holder(h, ns).await,
        "TS-18" => concurrency::ts18_batch_isolation(h, ns).await,
        "TS-19" => concurrency::ts19_killed_holder(factory, h, ns).await,
        other => Err(format!("no contract named {other}")),
    }
}

type Check = Result<(), String>;

/// Fails the contract with a message and the kit's line number unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!("{} ({} line {})", format!($($msg)+), file!(), line!()));
        }
    };
}

/// Unwraps a store result, or fails the contract naming the call.
macro_rules! ok {
    ($call:expr, $what:expr) => {
        match $call {
            Ok(v) => v,
            Err(e) => {
                return Err(format!(
                    "{} failed: {e} ({} line {})",
                    $what,
                    file!(),
                    line!()
                ))
            }
        }
    };
}

mod concurrency;

const LONG: Duration = Duration::from_secs(600);

fn component(name: &str) -> ComponentName {
    ComponentName::new(name).expect("the kit's component names follow the grammar")
}

/// A record with every field filled, distinguished by `n`.
fn sample(key: &str, n: u8) -> ThreadRecord {
    let mut components = Breakdown::new();
    components.insert_or_replace(component("model"), Fingerprint::from_bytes([n; 32]));
    components.insert_or_replace(
        component("attachment.semantic:3f2a9c1b04de"),
        Fingerprint::from_bytes([n.wrapping_add(1); 32]),
    );
    let mut data = BTreeMap::new();
    data.insert("turn".to_owned(), n.to_string());
    data.insert("guard".to_owned(), format!("g-{n}"));
    ThreadRecord {
        id: RecordId::generate(),
        key: key.to_owned(),
        status: RecordStatus::Active,
        driver_type: "reference".to_owned(),
        agent: "agent:conformance".to_owned(),
        compatibility: Compatibility {
            fingerprint: Fingerprint::from_bytes([n.wrapping_add(2); 32]),
            scheme_version: 1,
            components,
        },
        session_codec: "reference-v1".to_owned(),
        state: SessionState {
            resume_id: format!("resume-{n}"),
            display_id: Some(format!("display-{n}")),
            data,
        },
        created_at: Timestamp::from_millis(1_700_000_000_000 + i64::from(n)),
        updated_at: Timestamp::from_millis(1_700_000_000_500 + i64::from(n)),
        turns: u64::from(n) + 1,
    }
}

/// Saves `record` bound to its key, under a lease that the same commit releases.
async fn seed(h: &Harness, record: &ThreadRecord) -> Check {
    let target = format!("seed:{}", record.id);
    let lease = ok!(
        h.store.acquire_lease(&target, "seeder", LONG).await,
        "acquire (seed)"
    );
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(record.clone())
                    .holding(lease)
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (seed)"
    );
    Ok(())
}

async fn by_key(h: &Harness, key: &str) -> Result<Option<ThreadRecord>, String> {
    h.store
        .resolve(&Query::key(key))
        .await
        .map_err(|e| format!("resolve by key failed: {e}"))
}

async fn by_id_any(h: &Harness, id: &RecordId) -> Result<Option<ThreadRecord>, String> {
    h.store
        .resolve(&Query::id(id.clone()).including_archived())
        .await
        .map_err(|e| format!("resolve by id failed: {e}"))
}

/// Whether `lease` is still current, checked by renewing it.
async fn is_current(h: &Harness, lease: &Lease) -> Result<bool, String> {
    match h.store.renew_lease(lease, LONG).await {
        Ok(_) => Ok(true),
        Err(StoreError::LeaseLost { .. }) => Ok(false),
        Err(e) => Err(format!("renew failed with an unexpected error: {e}")),
    }
}

async fn ts01_resolve_missing(h: &Harness, ns: &str) -> Check {
    let missing_key = format!("{ns}missing");
    ensure!(
        by_key(h, &missing_key).await?.is_none(),
        "a missing key resolved to a record"
    );
    let q = Query::key(&missing_key).including_archived();
    ensure!(
        ok!(h.store.resolve(&q).await, "resolve").is_none(),
        "a missing key resolved to a record with include_archived"
    );
    let id = RecordId::generate();
    ensure!(
        ok!(h.store.resolve(&Query::id(id.clone())).await, "resolve").is_none(),
        "a missing id resolved to a record"
    );
    ensure!(
        by_id_any(h, &id).await?.is_none(),
        "a missing id resolved with include_archived"
    );
    let page = ok!(h.store.list(&ListQuery::prefix(ns)).await, "list");
    ensure!(
        page.records.is_empty() && page.next.is_none(),
        "an empty prefix listed records"
    );
    ensure!(
        ok!(h.store.delete(&missing_key).await, "delete") == 0,
        "deleting a missing key reported removed records"
    );
    Ok(())
}

async fn ts02_stale_finalize(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let target = format!("{ns}lease");
    let original = sample(&key, 1);
    seed(h, &original).await?;

    // Stale token: the same owner re-acquired, rotating the token.
    let old = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let new = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "re-acquire"
    );
    let mut update = original.clone();
    update.state.resume_id = "must-not-appear".to_owned();
    let replacement = sample(&key, 2);
    let attempts: Vec<(&str, FinalizeRequest)> = vec![
        (
            "stale token (in-place update)",
            FinalizeRequest::new(update.clone())
                .holding(old.clone())
                .release_leases(),
        ),
        (
            "stale token (replace, archive, rebind)",
            FinalizeRequest::new(replacement.clone())
                .holding(old.clone())
                .archive_previous(original.id.clone())
                .rebind_key()
                .release_leases(),
        ),
        (
            "foreign owner with the current token",
            FinalizeRequest::new(update.clone()).holding(Lease {
                owner: "owner-b".to_owned(),
                ..new.clone()
            }),
        ),
        (
            "one current and one never-acquired lease",
            FinalizeRequest::new(replacement.clone())
                .holding(new.clone())
                .holding(Lease {
                    target: format!("{ns}never"),
                    owner: "owner-a".to_owned(),
                    token: new.token,
                })
                .rebind_key()
                .release_leases(),
        ),
    ];
    for (what, request) in attempts {
        match h.store.finalize(&request).await {
            Err(StoreError::LeaseLost { .. }) => {}
            other => return Err(format!("{what}: expected LeaseLost, got {other:?}")),
        }
        ensure!(
            by_key(h, &key).await?.as_ref() == Some(&original),
            "{what}: the key no longer resolves to the untouched original"
        );
        ensure!(
            by_id_any(h, &replacement.id).await?.is_none(),
            "{what}: the replacement record was written"
        );
        ensure!(
            is_current(h, &new).await?,
            "{what}: the current lease was released"
        );
    }

    // Expired: the lease ran out before finalize.
    let ttl = h.short_ttl();
    let short_target = format!("{ns}short");
    let short = ok!(
        h.store.acquire_lease(&short_target, "owner-a", ttl).await,
        "acquire"
    );
    h.outlast(ttl).await;
    let request = FinalizeRequest::new(replacement.clone())
        .holding(short)
        .archive_previous(original.id.clone())
        .rebind_key()
        .release_leases();
    match h.store.finalize(&request).await {
        Err(StoreError::LeaseLost { .. }) => {}
        other => return Err(format!("expired lease: expected LeaseLost, got {other:?}")),
    }
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&original),
        "expired lease: the original changed"
    );
    ensure!(
        by_id_any(h, &replacement.id).await?.is_none(),
        "expired lease: the replacement was written"
    );
    Ok(())
}

/// What a TS-03 iteration observed after dropping the finalize future.
#[derive(Debug, PartialEq, Eq)]
enum Applied {
    Nothing,
    All,
}

async fn ts03_dropped_finalize(h: &Harness, ns: &str) -> Check {
    let mut seen = BTreeSet::new();
    for (i, polls) in [0usize, 1, 2, 3, 4, 5, 6, 8, 12, 20, 50, 200]
        .into_iter()
        .enumerate()
    {
        let key = format!("{ns}thread-{i}");
        let target = format!("{ns}lease-{i}");
        let old = sample(&key, 1);
        seed(h, &old).await?;
        let lease = ok!(
            h.store.acquire_lease(&target, "owner-a", LONG).await,
            "acquire"
        );
        let new = sample(&key, 2);
        let request = FinalizeRequest::new(new.clone())
            .holding(lease.clone())
            .archive_previous(old.id.clone())
            .rebind_key()
            .release_leases();
        let mut completed = None;
        {
            let mut fut = std::pin::pin!(h.store.finalize(&request));
            for _ in 0..polls {
                let step = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
                if let Poll::Ready(result) = step {
                    completed = Some(result);
                    break;
                }
                tokio::time::sleep(Duration::from_micros(100)).await;
            }
        }
        if let Some(result) = &completed {
            ensure!(
                result.is_ok(),
                "polls={polls}: the finalize failed: {result:?}"
            );
        }
        // Let work already handed to a backend (a blocking thread, a sent COMMIT) finish.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let observe = || async {
            let page = h
                .store
                .list(&ListQuery::prefix(&key).including_archived())
                .await
                .map_err(|e| format!("list failed: {e}"))?;
            let bound = by_key(h, &key).await?;
            Ok::<_, String>((page.records, bound))
        };
        let (records, bound) = observe().await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
        ensure!(
            observe().await? == (records.clone(), bound.clone()),
            "polls={polls}: the state kept changing after the future was dropped"
        );
        let current = is_current(h, &lease).await?;
        let mut archived_old = old.clone();
        archived_old.status = RecordStatus::Archived;
        let applied = if records == vec![old.clone()] && bound.as_ref() == Some(&old) && current {
            Applied::Nothing
        } else {
            let mut expected = vec![archived_old, new.clone()];
            expected.sort_by(|a, b| a.id.cmp(&b.id));
            ensure!(
                records == expected && bound.as_ref() == Some(&new) && !current,
                "polls={polls}: partial write: records (id, status) = {:?}, bound = {:?}, lease current = {current}",
                records
                    .iter()
                    .map(|r| (r.id.as_str(), r.status))
                    .collect::<Vec<_>>(),
                bound.as_ref().map(|r| r.id.as_str())
            );
            Applied::All
        };
        if completed.is_some() {
            ensure!(
                applied == Applied::All,
                "polls={polls}: a completed finalize wrote nothing"
            );
        }
        if polls == 0 {
            ensure!(applied == Applied::Nothing, "a never-polled finalize wrote");
        }
        seen.insert(format!("{applied:?}"));
    }
    ensure!(
        seen.len() == 2,
        "expected both untouched and fully applied outcomes across drop points, saw {seen:?}"
    );
    Ok(())
}

async fn ts04_archive_rebind(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let old = sample(&key, 1);
    seed(h, &old).await?;
    let lease = ok!(
        h.store
            .acquire_lease(&format!("{ns}lease"), "owner-a", LONG)
            .await,
        "acquire"
    );
    let new = sample(&key, 2);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(new.clone())
                    .holding(lease)
                    .archive_previous(old.id.clone())
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&new),
        "the key does not resolve to the new record"
    );
    ensure!(
        ok!(
            h.store
                .resolve(&Query::key(&key).including_archived())
                .await,
            "resolve"
        )
        .as_ref()
            == Some(&new),
        "the key with include_archived does not resolve to the new record"
    );
    ensure!(
        ok!(h.store.resolve(&Query::id(old.id.clone())).await, "resolve").is_none(),
        "the archived record is visible by id without include_archived"
    );
    let mut archived = old.clone();
    archived.status = RecordStatus::Archived;
    ensure!(
        by_id_any(h, &old.id).await?.as_ref() == Some(&archived),
        "the archived record is not resolvable by id with include_archived, or changed"
    );
    let active = ok!(h.store.list(&ListQuery::prefix(&key)).await, "list");
    ensure!(
        active.records == vec![new.clone()],
        "list shows archived records by default"
    );
    let all = ok!(
        h.store
            .list(&ListQuery::prefix(&key).including_archived())
            .await,
        "list"
    );
    ensure!(
        all.records.len() == 2,
        "list with archived records shows {} records",
        all.records.len()
    );

    // Archiving without a rebind leaves the key bound to a record it then hides.
    let third = sample(&key, 3);
    ok!(
        h.store
            .finalize(&FinalizeRequest::new(third.clone()).archive_previous(new.id.clone()))
            .await,
        "finalize (archive without rebind)"
    );
    ensure!(
        by_key(h, &key).await?.is_none(),
        "a key bound to an archived record resolved without include_archived"
    );
    let mut archived_new = new.clone();
    archived_new.status = RecordStatus::Archived;
    ensure!(
        ok!(
            h.store
                .resolve(&Query::key(&key).including_archived())
                .await,
            "resolve"
        )
        .as_ref()
            == Some(&archived_new),
        "a key bound to an archived record did not resolve with include_archived"
    );
    ensure!(
        by_id_any(h, &third.id).await?.as_ref() == Some(&third),
        "the unbound record was not saved"
    );
    Ok(())
}

async fn ts05_require_key_absent(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}parent");
    let parent = sample(&key, 1);
    seed(h, &parent).await?;
    let target = format!("{ns}lease");
    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let fork = sample(&key, 2);
    let request = FinalizeRequest::new(fork.clone())
        .holding(lease.clone())
        .require_key_absent()
        .rebind_key()
        .release_leases();
    match h.store.finalize(&request).await {
        Err(StoreError::AlreadyExists { .. }) => {}
        other => return Err(format!("expected AlreadyExists, got {other:?}")),
    }
    ensure!(
        by_id_any(h, &fork.id).await?.is_none(),
        "the refused fork record was written"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&parent),
        "the bound record changed"
    );
    ensure!(
        is_current(h, &lease).await?,
        "the refused finalize released its lease"
    );

    let new_key = format!("{ns}child");
    let child = sample(&new_key, 3);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(child.clone())
                    .holding(lease)
                    .require_key_absent()
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (fork to an absent key)"
    );
    ensure!(
        by_key(h, &new_key).await?.as_ref() == Some(&child),
        "the fork is not bound to its key"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&parent),
        "the parent changed"
    );
    Ok(())
}

async fn ts06_busy(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    match h.store.acquire_lease(&target, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => return Err(format!("expected Busy, got {other:?}")),
    }
    ensure!(
        is_current(h, &a).await?,
        "a Busy refusal disturbed the holder"
    );
    ok!(h.store.release_lease(&a).await, "release");
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire after release"
    );
    ensure!(
        b.owner == "owner-b" && b.target == target,
        "the lease names the wrong owner or target"
    );
    Ok(())
}

async fn ts07_token_increases(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let ttl = h.short_ttl();
    let t1 = ok!(
        h.store.acquire_lease(&target, "owner-a", ttl).await,
        "acquire"
    )
    .token;
    let t2 = ok!(
        h.store.acquire_lease(&target, "owner-a", ttl).await,
        "re-acquire"
    )
    .token;
    ensure!(
        t2 > t1,
        "same-owner re-acquire: token {t2} is not above {t1}"
    );
    h.outlast(ttl).await;
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire over expired"
    );
    ensure!(
        b.token > t2,
        "acquire over an expired lease: token {} is not above {t2}",
        b.token
    );
    ok!(h.store.release_lease(&b).await, "release");
    let t4 = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire after release"
    )
    .token;
    ensure!(
        t4 > b.token,
        "acquire after release: token {t4} is not above {}",
        b.token
    );
    let other = ok!(
        h.store
            .acquire_lease(&format!("{ns}other"), "owner-c", LONG)
            .await,
        "acquire another target"
    );
    ensure!(
        other.token > t4,
        "tokens are not store-wide increasing: {} after {t4}",
        other.token
    );
    Ok(())
}

async fn ts08_renew(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let first = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let renewed = ok!(h.store.renew_lease(&first, LONG).await, "renew");
    ensure!(renewed == first, "renew changed the lease: {renewed:?}");
    let second = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "re-acquire"
    );
    match h.store.renew_lease(&first, LONG).await {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "renew with a stale token: expected LeaseLost, got {other:?}"
            ));
        }
    }
    ensure!(
        is_current(h, &second).await?,
        "the current lease is not renewable"
    );
    let foreign = Lease {
        owner: "owner-b".to_owned(),
        ..second.clone()
    };
    match h.store.renew_lease(&foreign, LONG).await {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "renew by another owner: expected LeaseLost, got {other:?}"
            ));
        }
    }
    ok!(h.store.release_lease(&second).await, "release");
    match h.store.renew_lease(&second, LONG).await {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "renew after release: expected LeaseLost, got {other:?}"
            ));
        }
    }

    // Renewal extends expiry; an expired lease cannot be renewed.
    let ttl = h.short_ttl();
    let short_target = format!("{ns}short");
    let lease = ok!(
        h.store.acquire_lease(&short_target, "owner-a", ttl).await,
        "acquire"
    );
    if let TimeControl::Manual(clock) = &h.time {
        clock.advance(ttl * 2 / 3);
        ok!(
            h.store.renew_lease(&lease, ttl).await,
            "renew before expiry"
        );
        clock.advance(ttl * 2 / 3);
        match h.store.acquire_lease(&short_target, "owner-b", ttl).await {
            Err(StoreError::Busy { .. }) => {}
            other => {
                return Err(format!(
                    "a renewed lease expired at its old deadline: {other:?}"
                ));
            }
        }
    }
    h.outlast(ttl).await;
    match h.store.renew_lease(&lease, ttl).await {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "renew after expiry: expected LeaseLost, got {other:?}"
            ));
        }
    }
    Ok(())
}

async fn ts09_release_idempotent(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    ok!(h.store.release_lease(&a).await, "release");
    ok!(h.store.release_lease(&a).await, "second release");
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire after release"
    );
    ok!(h.store.release_lease(&a).await, "stale release");
    ensure!(
        is_current(h, &b).await?,
        "a stale release freed another owner's lease"
    );
    match h.store.acquire_lease(&target, "owner-a", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => {
            return Err(format!(
                "after a stale release: expected Busy, got {other:?}"
            ));
        }
    }
    let never = Lease {
        target: format!("{ns}never"),
        owner: "owner-a".to_owned(),
        token: 1,
    };
    ok!(
        h.store.release_lease(&never).await,
        "release of a never-acquired lease"
    );
    Ok(())
}

async fn ts10_finalize_release(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let (t1, t2, t3) = (format!("{ns}l1"), format!("{ns}l2"), format!("{ns}l3"));
    let l1 = ok!(h.store.acquire_lease(&t1, "owner-a", LONG).await, "acquire");
    let l2 = ok!(h.store.acquire_lease(&t2, "owner-a", LONG).await, "acquire");
    let l3 = ok!(h.store.acquire_lease(&t3, "owner-a", LONG).await, "acquire");
    let record = sample(&key, 1);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(record.clone())
                    .holding(l1)
                    .holding(l2)
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&record),
        "the record was not saved"
    );
    ok!(
        h.store.acquire_lease(&t1, "owner-b", LONG).await,
        "acquire a released lease (1)"
    );
    ok!(
        h.store.acquire_lease(&t2, "owner-b", LONG).await,
        "acquire a released lease (2)"
    );
    match h.store.acquire_lease(&t3, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => {
            return Err(format!(
                "a lease not in the request was released: {other:?}"
            ));
        }
    }
    // Without the release option, validated leases stay held.
    let update = ThreadRecord {
        updated_at: Timestamp::from_millis(1_800_000_000_000),
        ..record
    };
    ok!(
        h.store
            .finalize(&FinalizeRequest::new(update.clone()).holding(l3.clone()))
            .await,
        "finalize without release"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&update),
        "the in-place update was not saved"
    );
    ensure!(
        is_current(h, &l3).await?,
        "a finalize without release_leases released a lease"
    );
    Ok(())
}

async fn ts12_round_trip(h: &Harness, ns: &str) -> Check {
    let mut records = Vec::new();
    let mut plain = sample(&format!("{ns}plain"), 9);
    plain.state.display_id = None;
    plain.state.data.clear();
    plain.compatibility.components = Breakdown::new();
    records.push(plain);

    let mut rich = sample(&format!("{ns}ünïcødé/键/🧵 with space"), 200);
    rich.driver_type = "driver \"quoted\" 'single'".to_owned();
    rich.agent = String::new();
    rich.session_codec = "codec\twith\ttabs".to_owned();
    rich.state.resume_id = String::new();
    rich.state.display_id = Some(String::new());
    rich.state.data.insert(String::new(), String::new());
    rich.state.data.insert(
        "json-ish".to_owned(),
        "{\"a\":[1,2,{\"b\":null}]}".to_owned(),
    );
    rich.state.data.insert(
        "newline\nkey".to_owned(),
        "line1\r\nline2\u{0}nul\\slash".to_owned(),
    );
    rich.state
        .data
        .insert("big".to_owned(), "x".repeat(64 * 1024));
    rich.state
        .data
        .insert("emoji".to_owned(), "🧵🪡".to_owned());
    rich.compatibility.scheme_version = u32::MAX;
    rich.compatibility.fingerprint = Fingerprint::from_bytes([0xff; 32]);
    for i in 0..20u8 {
        rich.compatibility.components.insert_or_replace(
            component(&format!("component-{i}")),
            Fingerprint::from_bytes([i; 32]),
        );
    }
    rich.created_at = Timestamp::from_millis(i64::MIN + 1);
    rich.updated_at = Timestamp::from_millis(i64::MAX);
    records.push(rich);

    let mut archived = sample(&format!("{ns}archived"), 3);
    archived.status = RecordStatus::Archived;
    records.push(archived);

    for record in &records {
        let mut request = FinalizeRequest::new(record.clone());
        if record.status == RecordStatus::Active {
            request = request.rebind_key();
        }
        ok!(h.store.finalize(&request).await, "finalize");
        ensure!(
            by_id_any(h, &record.id).await?.as_ref() == Some(record),
            "resolve by id did not round-trip {:?}",
            record.key
        );
        if record.status == RecordStatus::Active {
            ensure!(
                by_key(h, &record.key).await?.as_ref() == Some(record),
                "resolve by key did not round-trip {:?}",
                record.key
            );
        }
        let page = ok!(
            h.store
                .list(&ListQuery::prefix(&record.key).including_archived())
                .await,
            "list"
        );
        ensure!(
            page.records == vec![record.clone()],
            "list did not round-trip {:?}",
            record.key
        );
    }

    // An in-place update replaces every field but the id and key.
    let mut updated = records[0].clone();
    updated.state.resume_id = "resume-updated".to_owned();
    updated.state.data.insert("turn".to_owned(), "2".to_owned());
    updated.updated_at = Timestamp::from_millis(1_900_000_000_000);
    updated.compatibility.scheme_version = 2;
    ok!(
        h.store
            .finalize(&FinalizeRequest::new(updated.clone()))
            .await,
        "finalize (update)"
    );
    ensure!(
        by_key(h, &updated.key).await?.as_ref() == Some(&updated),
        "the in-place update did not round-trip"
    );
    Ok(())
}

async fn ts13_list_pages(h: &Harness, ns: &str) -> Check {
    let prefix = format!("{ns}list_%/");
    let mut all = Vec::new();
    for (i, suffix) in ["a", "b", "b/sub", "c", "d_%", "e", "f"]
        .into_iter()
        .enumerate()
    {
        let key = format!("{prefix}{suffix}");
        let n = u8::try_from(i).unwrap_or(0);
        let first = sample(&key, n);
        seed(h, &first).await?;
        all.push(first.clone());
        if i % 2 == 0 {
            let second = sample(&key, n + 100);
            ok!(
                h.store
                    .finalize(
                        &FinalizeRequest::new(second.clone())
                            .archive_previous(first.id.clone())
                            .rebind_key()
                    )
                    .await,
                "finalize"
            );
            if let Some(r) = all.last_mut() {
                r.status = RecordStatus::Archived;
            }
            all.push(second);
        }
    }
    // The prefix itself is a key; neighbours outside it must not appear.
    let exact = sample(&prefix, 50);
    seed(h, &exact).await?;
    all.push(exact);
    for outside in [
        format!("{ns}list_%"),
        format!("{ns}list_x/a"),
        format!("{ns}list_%0"),
    ] {
        seed(h, &sample(&outside, 60)).await?;
    }
    all.sort_by(|a, b| (&a.key, &a.id).cmp(&(&b.key, &b.id)));
    let active: Vec<ThreadRecord> = all
        .iter()
        .filter(|r| r.status == RecordStatus::Active)
        .cloned()
        .collect();

    for include_archived in [false, true] {
        let expected = if include_archived { &all } else { &active };
        for limit in [1u32, 2, 3, 100] {
            let mut query = ListQuery::prefix(&prefix).limit(limit);
            if include_archived {
                query = query.including_archived();
            }
            let mut got = Vec::new();
            let mut pages = 0;
            loop {
                let page = ok!(h.store.list(&query).await, "list");
                pages += 1;
                ensure!(
                    page.records.len() <= limit as usize,
                    "a page exceeds its limit"
                );
                ensure!(pages <= expected.len() + 1, "paging does not terminate");
                got.extend(page.records);
                match page.next {
                    Some(cursor) => query = query.after(cursor),
                    None => break,
                }
            }
            ensure!(
                &got == expected,
                "limit {limit}, archived {include_archived}: paged listing differs from the expected {} records (got {})",
                expected.len(),
                got.len()
            );
        }
    }

    // A page cursor stays valid while records are added before and after it.
    let query = ListQuery::prefix(&prefix).limit(3);
    let first = ok!(h.store.list(&query).await, "list");
    let Some(cursor) = first.next.clone() else {
        return Err("the first page of a long listing has no cursor".to_owned());
    };
    seed(h, &sample(&format!("{prefix}0-before"), 70)).await?;
    let late = sample(&format!("{prefix}z-after"), 71);
    seed(h, &late).await?;
    let mut rest = Vec::new();
    let mut q = query.after(cursor);
    loop {
        let page = ok!(h.store.list(&q).await, "list");
        rest.extend(page.records);
        match page.next {
            Some(c) => q = q.after(c),
            None => break,
        }
    }
    let mut expected_rest: Vec<ThreadRecord> = active[3..].to_vec();
    expected_rest.push(late);
    ensure!(
        rest == expected_rest,
        "pages after a cursor changed when records were added around it"
    );
    ensure!(
        first.records.iter().all(|r| !rest.contains(r)),
        "a record appeared on two pages"
    );
    Ok(())
}

async fn ts14_delete(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}doomed");
    let other_key = format!("{ns}doomed-not");
    let old = sample(&key, 1);
    seed(h, &old).await?;
    let new = sample(&key, 2);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(new.clone())
                    .archive_previous(old.id.clone())
                    .rebind_key()
            )
            .await,
        "finalize"
    );
    let other = sample(&other_key, 3);
    seed(h, &other).await?;
    let lease = ok!(
        h.store
            .acquire_lease(&format!("{ns}lease"), "owner-a", LONG)
            .await,
        "acquire"
    );

    let removed = ok!(h.store.delete(&key).await, "delete");
    ensure!(
        removed == 2,
        "delete reported {removed} records removed, expected 2"
    );
    ensure!(
        ok!(
            h.store
                .resolve(&Query::key(&key).including_archived())
                .await,
            "resolve"
        )
        .is_none(),
        "the deleted key still resolves"
    );
    ensure!(
        by_id_any(h, &old.id).await?.is_none(),
        "the deleted archived record still resolves"
    );
    ensure!(
        by_id_any(h, &new.id).await?.is_none(),
        "the deleted active record still resolves"
    );
    let page = ok!(
        h.store
            .list(&ListQuery::prefix(ns).including_archived())
            .await,
        "list"
    );
    ensure!(
        page.records == vec![other.clone()],
        "after delete, list shows {:?}",
        page.records.len()
    );
    ensure!(
        by_key(h, &other_key).await?.as_ref() == Some(&other),
        "delete touched another key"
    );
    ensure!(is_current(h, &lease).await?, "delete touched a lease");
    ensure!(
        ok!(h.store.delete(&key).await, "delete again") == 0,
        "a second delete removed records"
    );
    let again = sample(&key, 4);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(again.clone())
                    .require_key_absent()
                    .rebind_key()
            )
            .await,
        "finalize (re-create a deleted key)"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&again),
        "a deleted key could not be re-created"
    );
    Ok(())
}

async fn ts15_invalid(h: &Harness, ns: &str) -> Check {
    let expect_invalid = |what: &str, result: Result<(), StoreError>| -> Check {
        match result {
            Err(StoreError::InvalidInput { .. }) => Ok(()),
            other => Err(format!("{what}: expected InvalidInput, got {other:?}")),
        }
    };
    let target = format!("{ns}lease");
    expect_invalid(
        "zero TTL",
        h.store
            .acquire_lease(&target, "owner-a", Duration::ZERO)
            .await
            .map(drop),
    )?;
    expect_invalid(
        "empty target",
        h.store.acquire_lease("", "owner-a", LONG).await.map(drop),
    )?;
    expect_invalid(
        "empty owner",
        h.store.acquire_lease(&target, "", LONG).await.map(drop),
    )?;
    expect_invalid(
        "NUL in target",
        h.store
            .acquire_lease("a\u{0}b", "owner-a", LONG)
            .await
            .map(drop),
    )?;
    expect_invalid(
        "list limit 0",
        h.store
            .list(&ListQuery::prefix(ns).limit(0))
            .await
            .map(drop),
    )?;

    let key = format!("{ns}thread");
    let record = sample(&key, 1);
    seed(h, &record).await?;
    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );

    // The same id under another key.
    let mut moved = record.clone();
    moved.key = format!("{ns}elsewhere");
    expect_invalid(
        "an id that belongs to another key",
        h.store
            .finalize(
                &FinalizeRequest::new(moved.clone())
                    .holding(lease.clone())
                    .rebind_key()
                    .release_leases(),
            )
            .await,
    )?;
    ensure!(
        by_key(h, &moved.key).await?.is_none(),
        "a refused move bound the other key"
    );
    ensure!(
        by_id_any(h, &record.id).await?.as_ref() == Some(&record),
        "a refused move changed the record"
    );
    ensure!(
        is_current(h, &lease).await?,
        "a refused finalize released its lease"
    );

    let mut empty_key = sample(&key, 2);
    empty_key.key = String::new();
    expect_invalid(
        "an empty key",
        h.store.finalize(&FinalizeRequest::new(empty_key)).await,
    )?;
    let mut nul_agent = sample(&key, 2);
    nul_agent.agent = "a\u{0}b".to_owned();
    expect_invalid(
        "a NUL in the agent",
        h.store.finalize(&FinalizeRequest::new(nul_agent)).await,
    )?;

    // Archiving a record that does not exist writes nothing, the new record included.
    let orphan = sample(&key, 3);
    match h
        .store
        .finalize(
            &FinalizeRequest::new(orphan.clone())
                .holding(lease.clone())
                .archive_previous(RecordId::generate())
                .rebind_key()
                .release_leases(),
        )
        .await
    {
        Err(StoreError::NotFound { .. }) => {}
        other => {
            return Err(format!(
                "archiving a missing record: expected NotFound, got {other:?}"
            ));
        }
    }
    ensure!(
        by_id_any(h, &orphan.id).await?.is_none(),
        "a refused finalize saved its record"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&record),
        "a refused finalize rebound the key"
    );
    ensure!(
        is_current(h, &lease).await?,
        "a refused finalize released its lease"
    );
    Ok(())
}

/// A lease holder's finalize must not undo an erase: once `delete` ran, a finalize of that key
/// that presents a lease acquired before the delete is `LeaseLost` and writes nothing, while
/// other keys, and leases acquired after the delete, are unaffected.
async fn ts16_delete_fences(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}erased");
    let target = format!("{ns}lease");
    let other_key = format!("{ns}kept");
    let other_target = format!("{ns}lease-kept");

    // The holder runs a turn and keeps its lease for the next one.
    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let first = sample(&key, 1);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(first.clone())
                    .holding(lease.clone())
                    .rebind_key()
            )
            .await,
        "finalize (first turn)"
    );
    let other_lease = ok!(
        h.store.acquire_lease(&other_target, "owner-b", LONG).await,
        "acquire (other key)"
    );

    let removed = ok!(h.store.delete(&key).await, "delete");
    ensure!(
        removed == 1,
        "delete reported {removed} records, expected 1"
    );

    // The holder's next turn, under the lease it took before the delete, is refused.
    let second = sample(&key, 2);
    match h
        .store
        .finalize(
            &FinalizeRequest::new(second.clone())
                .holding(lease.clone())
                .rebind_key()
                .release_leases(),
        )
        .await
    {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "a finalize under a lease older than the delete: expected LeaseLost, got {other:?}"
            ));
        }
    }
    ensure!(
        by_key(h, &key).await?.is_none(),
        "a finalize under a pre-delete lease re-bound the erased key"
    );
    ensure!(
        by_id_any(h, &second.id).await?.is_none() && by_id_any(h, &first.id).await?.is_none(),
        "a finalize under a pre-delete lease wrote a record of the erased key"
    );
    ensure!(
        is_current(h, &lease).await?,
        "delete or the refused finalize touched the lease"
    );

    // One stale lease among fresh ones is enough to refuse.
    let fresh_extra = ok!(
        h.store
            .acquire_lease(&format!("{ns}lease-extra"), "owner-a", LONG)
            .await,
        "acquire (extra)"
    );
    match h
        .store
        .finalize(
            &FinalizeRequest::new(second.clone())
                .holding(fresh_extra.clone())
                .holding(lease.clone())
                .rebind_key(),
        )
        .await
    {
        Err(StoreError::LeaseLost { .. }) => {}
        other => {
            return Err(format!(
                "a finalize holding one pre-delete lease: expected LeaseLost, got {other:?}"
            ));
        }
    }
    ensure!(
        by_key(h, &key).await?.is_none(),
        "a finalize holding one pre-delete lease wrote the erased key"
    );

    // Another key is not fenced, even under a lease older than the delete.
    let other = sample(&other_key, 3);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(other.clone())
                    .holding(other_lease)
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (another key, lease older than the delete)"
    );
    ensure!(
        by_key(h, &other_key).await?.as_ref() == Some(&other),
        "delete fenced another key"
    );

    // A lease acquired after the delete writes the key again.
    ok!(h.store.release_lease(&lease).await, "release");
    let fresh = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire (after the delete)"
    );
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(second.clone())
                    .holding(fresh.clone())
                    .holding(fresh_extra)
                    .require_key_absent()
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (lease acquired after the delete)"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&second),
        "a lease acquired after the delete could not re-create the key"
    );
    ensure!(
        !is_current(h, &fresh).await?,
        "the re-creating finalize did not release its lease"
    );
    Ok(())
}

async fn ts17_lease_holder(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let free = ok!(h.store.lease_holder(&target).await, "lease_holder (free)");
    ensure!(free.is_none(), "a free target reported a holder: {free:?}");

    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let held = ok!(h.store.lease_holder(&target).await, "lease_holder (held)");
    let Some(held) = held else {
        return Err(format!(
            "a held lease was not reported ({} line {})",
            file!(),
            line!()
        ));
    };
    ensure!(
        held.owner == "owner-a",
        "the holder is {:?}, expected owner-a",
        held.owner
    );
    ensure!(
        held.expires_in > Duration::ZERO && held.expires_in <= LONG,
        "expires_in {:?} is outside (0, {LONG:?}]",
        held.expires_in
    );
    // Reading changed nothing: the holder still holds it, another owner is still refused.
    ensure!(
        is_current(h, &lease).await?,
        "lease_holder disturbed the holder"
    );
    match h.store.acquire_lease(&target, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => return Err(format!("expected Busy after lease_holder, got {other:?}")),
    }

    ok!(h.store.release_lease(&lease).await, "release");
    let released = ok!(
        h.store.lease_holder(&target).await,
        "lease_holder (released)"
    );
    ensure!(
        released.is_none(),
        "a released lease was reported: {released:?}"
    );

    let ttl = h.short_ttl();
    ok!(
        h.store.acquire_lease(&target, "owner-c", ttl).await,
        "acquire (short)"
    );
    h.outlast(ttl).await;
    let expired = ok!(
        h.store.lease_holder(&target).await,
        "lease_holder (expired)"
    );
    ensure!(
        expired.is_none(),
        "an expired lease was reported: {expired:?}"
    );
    Ok(())
}
