//! The conformance kit: named clauses (TS-01 …) that every [`ThreadStore`] must pass.
//!
//! An adapter's test builds a [`Factory`] and calls [`run`]; the returned [`Report`] holds a
//! [`Verdict`] per [`Clause`], and [`Report::assert_passed`](kit_report::Report::assert_passed)
//! panics naming every clause id that did not pass. The vocabulary (factory, clauses, report,
//! one assert) is the one every kit of the workspace speaks (see the `kit-report` crate).
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
//! conformance::run(&Memory).await.assert_passed();
//! # });
//! ```
//!
//! Every clause works under its own random key and target namespace, so a factory may hand
//! out stores that share one database. Expiry clauses advance a [`ManualClock`] when the
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

/// Makes a store for each clause. Stores may share storage: clauses use disjoint keys.
#[async_trait::async_trait]
pub trait Factory: Send + Sync {
    /// A store to run one clause against.
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

    /// What the report names as checked. The default is the factory's type name.
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_owned()
    }
}

kit_report::clauses! {
    /// One named clause of the thread-store contract. Every failure names its id
    /// ([`Clause::id`], for example `TS-07`).
    pub enum Clause in "thread-store" {
        /// TS-01: resolving a missing key or id returns nothing.
        Ts01 = "TS-01": "resolving a missing key or id returns nothing",
        /// TS-02: a finalize with a stale, foreign or expired lease writes nothing.
        Ts02 = "TS-02": "a finalize with a stale, foreign or expired lease writes nothing",
        /// TS-03: a finalize future dropped mid-flight leaves nothing partial.
        Ts03 = "TS-03": "a finalize future dropped mid-flight leaves nothing partial",
        /// TS-04: archive plus rebind hides the old record from key lookup, keeps it by id.
        Ts04 = "TS-04": "archive plus rebind hides the old record from key lookup, keeps it by id",
        /// TS-05: require-key-absent writes nothing on conflict.
        Ts05 = "TS-05": "require-key-absent writes nothing on conflict",
        /// TS-06: a lease held by another live owner is Busy.
        Ts06 = "TS-06": "a lease held by another live owner is Busy",
        /// TS-07: re-acquiring (same owner, expired, released) strictly increases the token.
        Ts07 = "TS-07": "re-acquiring (same owner, expired, released) strictly increases the token",
        /// TS-08: renew keeps a current lease and refuses a stale one with LeaseLost.
        Ts08 = "TS-08": "renew keeps a current lease and refuses a stale one with LeaseLost",
        /// TS-09: release is idempotent and ignores stale leases.
        Ts09 = "TS-09": "release is idempotent and ignores stale leases",
        /// TS-10: finalize with release frees exactly the validated leases, in the same commit.
        Ts10 = "TS-10": "finalize with release frees exactly the validated leases, in the same commit",
        /// TS-11: N concurrent acquirers of one target get exactly one winner.
        Ts11 = "TS-11": "N concurrent acquirers of one target get exactly one winner",
        /// TS-12: records round-trip deep-equal.
        Ts12 = "TS-12": "records round-trip deep-equal",
        /// TS-13: list pages are stable, ordered and complete.
        Ts13 = "TS-13": "list pages are stable, ordered and complete",
        /// TS-14: delete removes everything for the key and nothing else.
        Ts14 = "TS-14": "delete removes everything for the key and nothing else",
        /// TS-15: invalid requests are refused and write nothing.
        Ts15 = "TS-15": "invalid requests are refused and write nothing",
        /// TS-16: delete fences the key: a finalize under a lease taken before it is LeaseLost.
        Ts16 = "TS-16": "delete fences the key: a finalize under a lease taken before it is LeaseLost",
        /// TS-17: lease_holder reports the current holder, read-only; free and expired are None.
        Ts17 = "TS-17": "lease_holder reports the current holder, read-only; free and expired are None",
        /// TS-18: concurrent finalizes each validate their own leases: a failing one fails alone.
        Ts18 = "TS-18": "concurrent finalizes each validate their own leases: a failing one fails alone",
        /// TS-19: a holder gone between acquire and finalize (killed) is fenced out for good.
        Ts19 = "TS-19": "a holder gone between acquire and finalize (killed) is fenced out for good",
        /// TS-20: the owning namespace round-trips (set or not), and a list of one namespace
        /// returns exactly its records.
        Ts20 = "TS-20": "the owning namespace round-trips, and a list of one namespace returns exactly its records",
        /// TS-21: a finalize that renews its leases keeps them held by their owner (same token,
        /// later expiry, Busy to others); a stale holder's renewing finalize writes and renews
        /// nothing; renewing and releasing at once is refused.
        Ts21 = "TS-21": "a finalize that renews its leases keeps them held; a stale one writes and renews nothing",
        /// TS-22: a sticky lease ends with a release (a host's close) or a releasing finalize;
        /// the next holder gets a greater token and the old lease writes nothing.
        Ts22 = "TS-22": "a sticky lease ends with a release or a releasing finalize, for good",
    }
}

pub use kit_report::Verdict;

/// The result of [`run`]: one [`Verdict`] per [`Clause`].
pub type Report = kit_report::Report<Clause>;

/// Runs every clause in [`Clause::ALL`], each on a fresh store from `factory`, and judges each
/// one: a failing clause never stops the others.
pub async fn run(factory: &dyn Factory) -> Report {
    let mut recorder = kit_report::Recorder::new();
    for clause in Clause::ALL {
        let result = match factory.create().await {
            Ok(h) => {
                let ns = format!("ts/{}/{}/", clause.id(), RecordId::generate());
                run_one(*clause, factory, &h, &ns).await
            }
            Err(e) => Err(format!("the factory failed: {e}")),
        };
        recorder.check(*clause, result);
    }
    recorder.finish(factory.name())
}

/// Runs one clause against the store `h`, under the namespace `ns`.
async fn run_one(clause: Clause, factory: &dyn Factory, h: &Harness, ns: &str) -> Check {
    match clause {
        Clause::Ts01 => records::ts01_resolve_missing(h, ns).await,
        Clause::Ts02 => records::ts02_stale_finalize(h, ns).await,
        Clause::Ts03 => records::ts03_dropped_finalize(h, ns).await,
        Clause::Ts04 => records::ts04_archive_rebind(h, ns).await,
        Clause::Ts05 => records::ts05_require_key_absent(h, ns).await,
        Clause::Ts06 => leases::ts06_busy(h, ns).await,
        Clause::Ts07 => leases::ts07_token_increases(h, ns).await,
        Clause::Ts08 => leases::ts08_renew(h, ns).await,
        Clause::Ts09 => leases::ts09_release_idempotent(h, ns).await,
        Clause::Ts10 => leases::ts10_finalize_release(h, ns).await,
        Clause::Ts11 => concurrency::ts11_one_winner(h, ns).await,
        Clause::Ts12 => records::ts12_round_trip(h, ns).await,
        Clause::Ts13 => records::ts13_list_pages(h, ns).await,
        Clause::Ts14 => erase::ts14_delete(h, ns).await,
        Clause::Ts15 => validation::ts15_invalid(h, ns).await,
        Clause::Ts16 => erase::ts16_delete_fences(h, ns).await,
        Clause::Ts17 => leases::ts17_lease_holder(h, ns).await,
        Clause::Ts18 => concurrency::ts18_batch_isolation(h, ns).await,
        Clause::Ts19 => concurrency::ts19_killed_holder(factory, h, ns).await,
        Clause::Ts20 => records::ts20_namespace(h, ns).await,
        Clause::Ts21 => sticky::ts21_renew_in_finalize(h, ns).await,
        Clause::Ts22 => sticky::ts22_release_sticky(h, ns).await,
    }
}

/// A clause's outcome: `Err` carries what failed.
type Check = Result<(), String>;

/// Fails the clause with a message and the kit's line number unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!("{} ({} line {})", format!($($msg)+), file!(), line!()));
        }
    };
}

/// Unwraps a store result, or fails the clause naming the call.
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

/// Fails the clause, naming the call and the kit's line, unless `$result` is the error
/// `StoreError::$variant`.
macro_rules! expect_err {
    ($variant:ident, $result:expr, $($what:tt)+) => {
        match $result {
            Err(StoreError::$variant { .. }) => {}
            other => {
                return Err(format!(
                    "{}: expected {}, got {other:?} ({} line {})",
                    format!($($what)+),
                    stringify!($variant),
                    file!(),
                    line!()
                ))
            }
        }
    };
}

mod concurrency;
mod erase;
mod leases;
mod records;
mod sticky;
mod validation;

/// A TTL no clause outlasts: leases taken with it stay current unless released.
const LONG: Duration = Duration::from_secs(600);

/// A component name the kit knows to be valid.
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
        // Odd samples are owned, even ones are not: both round-trip (TS-12).
        namespace: (n % 2 == 1).then(|| format!("user:conformance-{n}")),
    }
}

/// The write that ends a turn: `record` saved and bound to its key under `lease`, which the
/// same commit releases. Clauses add their options (archive, require-key-absent) to it.
fn turn(record: ThreadRecord, lease: Lease) -> FinalizeRequest {
    FinalizeRequest::new(record)
        .holding(lease)
        .rebind_key()
        .release_leases()
}

/// Saves `record` bound to its key, under a lease that the same commit releases.
async fn seed(h: &Harness, record: &ThreadRecord) -> Check {
    let target = format!("seed:{}", record.id);
    let lease = acquire(h, &target, "seeder", LONG, "acquire (seed)").await?;
    finalize_ok(h, &turn(record.clone(), lease), "finalize (seed)").await
}

/// Takes the lease on `target` for `owner`, which must succeed; `what` names the call in a
/// failure.
async fn acquire(
    h: &Harness,
    target: &str,
    owner: &str,
    ttl: Duration,
    what: &str,
) -> Result<Lease, String> {
    h.store
        .acquire_lease(target, owner, ttl)
        .await
        .map_err(|e| format!("{what} ({owner} on {target}) failed: {e}"))
}

/// Finalizes `request`, which must succeed; `what` names the attempt in a failure.
async fn finalize_ok(h: &Harness, request: &FinalizeRequest, what: &str) -> Check {
    ok!(h.store.finalize(request).await, what);
    Ok(())
}

/// `key` must resolve to `expected` (`None`: to nothing); `why` says what a mismatch means.
async fn expect_bound(h: &Harness, key: &str, expected: Option<&ThreadRecord>, why: &str) -> Check {
    ensure!(by_key(h, key).await?.as_ref() == expected, "{why}");
    Ok(())
}

/// `lease` must still be current; `why` says what it means when it is not.
async fn expect_current(h: &Harness, lease: &Lease, why: &str) -> Check {
    ensure!(is_current(h, lease).await?, "{why}");
    Ok(())
}

/// `lease` must no longer be current (released); `why` says what it means when it is.
async fn expect_released(h: &Harness, lease: &Lease, why: &str) -> Check {
    ensure!(!is_current(h, lease).await?, "{why}");
    Ok(())
}

/// The active record `key` is bound to.
async fn by_key(h: &Harness, key: &str) -> Result<Option<ThreadRecord>, String> {
    h.store
        .resolve(&Query::key(key))
        .await
        .map_err(|e| format!("resolve by key failed: {e}"))
}

/// The record `key` is bound to, archived or not.
async fn by_key_any(h: &Harness, key: &str) -> Result<Option<ThreadRecord>, String> {
    h.store
        .resolve(&Query::key(key).including_archived())
        .await
        .map_err(|e| format!("resolve by key with include_archived failed: {e}"))
}

/// The record with `id`, archived or not.
async fn by_id_any(h: &Harness, id: &RecordId) -> Result<Option<ThreadRecord>, String> {
    h.store
        .resolve(&Query::id(id.clone()).including_archived())
        .await
        .map_err(|e| format!("resolve by id failed: {e}"))
}

/// `result` must be [`StoreError::LeaseLost`]; `what` names the call in a failure.
fn expect_lease_lost<T: fmt::Debug>(what: &str, result: Result<T, StoreError>) -> Check {
    expect_err!(LeaseLost, result, "{what}");
    Ok(())
}

/// Finalizes `request`, which must be refused with `LeaseLost` and write nothing: `key` still
/// resolves to `before` (`None`: to nothing), and the request's record is unchanged (an
/// in-place update of `before`) or absent.
/// `what` names the attempt in a failure.
async fn refused_writes_nothing(
    h: &Harness,
    what: &str,
    request: &FinalizeRequest,
    key: &str,
    before: Option<&ThreadRecord>,
) -> Check {
    expect_lease_lost(what, h.store.finalize(request).await)?;
    ensure!(
        by_key(h, key).await?.as_ref() == before,
        "{what}: the key no longer resolves to what it did before"
    );
    // An in-place update (the record `before` itself) must leave it as it was; any other
    // record must not exist.
    let stored = by_id_any(h, &request.record.id).await?;
    match before.filter(|b| b.id == request.record.id) {
        Some(before) => ensure!(
            stored.as_ref() == Some(before),
            "{what}: the refused update changed the record"
        ),
        None => ensure!(stored.is_none(), "{what}: the refused record was written"),
    }
    Ok(())
}

/// Whether `lease` is still current, checked by renewing it.
async fn is_current(h: &Harness, lease: &Lease) -> Result<bool, String> {
    match h.store.renew_lease(lease, LONG).await {
        Ok(_) => Ok(true),
        Err(StoreError::LeaseLost { .. }) => Ok(false),
        Err(e) => Err(format!("renew failed with an unexpected error: {e}")),
    }
}
