//! Throughput of Thread turns (acquire lease, resolve, finalize-and-release) per adapter:
//! sequential, round robin over 16 Threads, and 16 or 64 Threads at once on one store; on
//! PostgreSQL also a sticky turn (resolve, finalize-and-renew under a lease kept between
//! turns: one commit), sampled alternately with the default turn; beside
//! bare loops issuing the same statements directly through rusqlite or tokio-postgres, the
//! disk's one-row commit rate, and the cost of a `list` page wherever it sits in 20,000 keys.
//!
//! Run: `THREAD_STORE_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test \
//!       cargo bench -p thread-store --bench turn [-- --json]`
//!
//! `--json` prints one JSON object per measurement (see [`report::Measurement`]); otherwise a
//! Markdown table, then the targets of issue 15 with their verdicts. Sequential samples of one
//! adapter and its bare loop alternate, so a noisy neighbour slows both alike; each sample runs
//! turns for about `SAMPLE` and yields the mean time per turn; rows show medians.
#![allow(clippy::unwrap_used, reason = "bench")]

mod listing;
mod postgres;
mod probe;
mod report;
mod sqlite;
mod workloads;

use std::sync::Arc;

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};
use thread_store::memory::MemoryStore;
use thread_store::{
    Compatibility, FinalizeRequest, Lease, Query, SessionState, ThreadRecord, ThreadStore,
    Timestamp,
};

use crate::report::{Measurement, Report};

const TTL: std::time::Duration = std::time::Duration::from_secs(60);
const OWNER: &str = "bench-host";

/// The record every turn rewrites: four components and a small session map, like a real
/// driver's checkpoint.
pub(crate) fn record(key: &str) -> ThreadRecord {
    let mut components = Breakdown::new();
    for name in ["model", "instructions", "tools", "workspace"] {
        components.insert_or_replace(
            ComponentName::new(name).unwrap(),
            Fingerprint::from_bytes([7; 32]),
        );
    }
    let mut state = SessionState {
        resume_id: "0190c2b4-resume".to_owned(),
        display_id: Some("display".to_owned()),
        ..SessionState::default()
    };
    state.data.insert("guard".to_owned(), "g".repeat(64));
    state
        .data
        .insert("model".to_owned(), "model-name".to_owned());
    ThreadRecord::new(
        key,
        "codex",
        "agent:bench",
        Compatibility {
            fingerprint: Fingerprint::from_bytes([9; 32]),
            scheme_version: 1,
            components,
        },
        "codex-v1",
        state,
        Timestamp::now(),
    )
}

/// The key of bench Thread `n`.
pub(crate) fn key(n: usize) -> String {
    format!("bench/thread-{n:04}")
}

/// Saves a first record for Threads `0..count`, so every turn resumes.
pub(crate) async fn seed(store: &dyn ThreadStore, count: usize) {
    for n in 0..count {
        store
            .finalize(&FinalizeRequest::new(record(&key(n))).rebind_key())
            .await
            .unwrap();
    }
}

/// The key and lease target of the bench Threads, made once so that turns allocate no more
/// than a host's would.
static THREADS: std::sync::LazyLock<Vec<(String, String)>> = std::sync::LazyLock::new(|| {
    (0..64)
        .map(|n| (key(n), format!("thread:{}", key(n))))
        .collect()
});

/// One turn of Thread `thread` through the trait: acquire, resolve, finalize-and-release.
pub(crate) async fn adapter_turn(store: &dyn ThreadStore, thread: usize, n: u64) {
    let lease = store
        .acquire_lease(&THREADS[thread].1, OWNER, TTL)
        .await
        .unwrap();
    let record = next_record(store, thread, n).await;
    store
        .finalize(&FinalizeRequest::new(record).holding(lease).release_leases())
        .await
        .unwrap();
}

/// One sticky turn of Thread `thread` under `lease`, which the host keeps between turns:
/// resolve, then finalize-and-renew (one commit; no acquire).
pub(crate) async fn sticky_turn(store: &dyn ThreadStore, lease: &Lease, thread: usize, n: u64) {
    let record = next_record(store, thread, n).await;
    let request = FinalizeRequest::new(record)
        .holding(lease.clone())
        .renew_leases(TTL);
    store.finalize(&request).await.unwrap();
}

/// A turn's read: Thread `thread`'s record, as turn `n` leaves it.
async fn next_record(store: &dyn ThreadStore, thread: usize, n: u64) -> ThreadRecord {
    let mut record = store
        .resolve(&Query::key(THREADS[thread].0.clone()))
        .await
        .unwrap()
        .unwrap();
    record.state.data.insert("turn".to_owned(), n.to_string());
    record.updated_at = Timestamp::now();
    record
}

/// Takes the lease of Thread `thread` that [`sticky_turn`] keeps.
pub(crate) async fn sticky_lease(store: &dyn ThreadStore, thread: usize) -> Lease {
    store
        .acquire_lease(&THREADS[thread].1, OWNER, TTL)
        .await
        .unwrap()
}

async fn bench_memory(report: &mut Report) {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    seed(store.as_ref(), 64).await;
    let base = Measurement::new("memory", "default", "none");
    let one = workloads::sequential(store.as_ref(), 1).await;
    report.push(base.clone().named("adapter turn").sequential(one, "no I/O"));
    let rr = workloads::sequential(store.as_ref(), 16).await;
    report.push(
        base.clone()
            .named("16 Threads, round robin")
            .sequential(rr, "no I/O"),
    );
    for threads in [16, 64] {
        let c = workloads::concurrent(&store, threads).await;
        report.push(
            base.clone()
                .named(&format!("{threads} Threads at once"))
                .concurrent(threads, c, "no I/O"),
        );
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench` passes `--bench`. Run any other way (`cargo test --benches`), this only
    // checks that a turn works on the memory and SQLite adapters.
    if !std::env::args().any(|a| a == "--bench") {
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let sqlite = sqlite::seeded(
                &dir.path().join("smoke.db"),
                thread_store::sqlite::Synchronous::Normal,
                thread_store::sqlite::Execution::default(),
            )
            .await;
            let memory = MemoryStore::new();
            seed(&memory, 1).await;
            for n in 0..3 {
                adapter_turn(&memory, 0, n).await;
                adapter_turn(&sqlite, 0, n).await;
            }
            let (on_memory, on_sqlite) = (
                sticky_lease(&memory, 0).await,
                sticky_lease(&sqlite, 0).await,
            );
            for n in 0..3 {
                sticky_turn(&memory, &on_memory, 0, n).await;
                sticky_turn(&sqlite, &on_sqlite, 0, n).await;
            }
        });
        println!("turn bench: smoke run passed; use `cargo bench` to measure");
        return;
    }
    if std::env::args().any(|a| a == "--probe") {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        rt.block_on(probe::probe(dir.path()));
        return;
    }
    let mut report = Report::new(std::env::args().any(|a| a == "--json"));
    // `--only <part>` (memory, sqlite, listing, postgres) runs one part, for quick iterations.
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .windows(2)
        .find(|w| w[0] == "--only")
        .map(|w| w[1].clone());
    let part = |name: &str| only.as_deref().is_none_or(|o| o == name);
    rt.block_on(async {
        if part("memory") {
            bench_memory(&mut report).await;
        }
        // On the disk that holds the target directory, not a tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        if part("sqlite") {
            for sync in [
                thread_store::sqlite::Synchronous::Normal,
                thread_store::sqlite::Synchronous::Full,
            ] {
                sqlite::bench(&mut report, dir.path(), sync).await;
            }
        }
        if part("listing") {
            listing::bench_sqlite(&mut report, dir.path()).await;
        }
        let url = std::env::var("THREAD_STORE_POSTGRES_URL");
        match &url {
            Ok(url) if part("postgres") => postgres::bench(&mut report, url).await,
            Err(_) => report.skipped("PostgreSQL: THREAD_STORE_POSTGRES_URL is not set"),
            Ok(_) => {}
        }
        if let Ok(url) = &url
            && part("listing")
        {
            listing::bench_postgres(&mut report, url).await;
        }
    });
    report.finish();
}
