//! Scale: 1,000 Threads at once on one `Agent`, with the reference driver and the SQLite
//! store on its default configuration. Every Thread has its own key, so no run may fail with
//! `Busy` or `LeaseLost`; the bench counts every outcome, reports turns per second and the
//! peak resident set size, and exits non-zero if any run failed.
//!
//! Run: `cargo bench -p agent --bench many_threads [-- --json]`. Run any other way
//! (`cargo test --benches`), it runs 20 Threads as a smoke check.

use std::sync::Arc;
use std::time::Instant;

use agent::{Agent, ThreadError};
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// Runs per Thread: the first starts a conversation, the others resume it.
const TURNS: usize = 3;

#[derive(Debug, Default)]
struct Outcomes {
    ok: usize,
    busy: usize,
    lease_lost: usize,
    other: Vec<String>,
}

/// A `/proc/self/status` field, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let json = std::env::args().any(|a| a == "--json");
    let threads = if measuring { 1000 } else { 20 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let rss_before = status_kib("VmRSS:");
    let (outcomes, elapsed, stats) = runtime.block_on(async {
        let store = Arc::new(
            SqliteStore::open(SqliteConfig::new(dir.path().join("many.db")))
                .await
                .expect("sqlite"),
        );
        let driver =
            ReferenceDriver::with_backend(ReferenceBackend::new()).with_persistent_processes(false);
        let agent = Agent::builder(Arc::new(driver))
            .store(store.clone())
            .model("model-1")
            .build()
            .expect("valid agent");
        let start = Instant::now();
        let tasks: Vec<_> = (0..threads)
            .map(|n| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    let mut results = Vec::with_capacity(TURNS);
                    for turn in 0..TURNS {
                        let thread = agent.thread(format!("many/{n:04}"));
                        let thread = if turn == 0 {
                            thread
                        } else {
                            thread.resume_only()
                        };
                        results.push(thread.run(format!("turn {turn}")).await.map(drop));
                    }
                    results
                })
            })
            .collect();
        let mut outcomes = Outcomes::default();
        for task in tasks {
            for result in task.await.expect("a Thread task panicked") {
                match result {
                    Ok(()) => outcomes.ok += 1,
                    Err(ThreadError::Busy { .. }) => outcomes.busy += 1,
                    Err(ThreadError::LeaseLost { .. }) => outcomes.lease_lost += 1,
                    Err(e) => outcomes.other.push(e.to_string()),
                }
            }
        }
        (outcomes, start.elapsed(), store.group_commit_stats())
    });
    let peak = status_kib("VmHWM:");
    let turns_per_s = outcomes.ok as f64 / elapsed.as_secs_f64();
    if json {
        println!(
            "{{\"name\": \"{threads} Threads at once on one Agent\", \"adapter\": \"sqlite\", \
             \"config\": \"default\", \"sync\": \"NORMAL\", \"concurrency\": {threads}, \
             \"turns_per_s\": {turns_per_s:.1}, \"runs_ok\": {}, \"busy\": {}, \"lease_lost\": {}, \
             \"other_errors\": {}, \"peak_rss_kib\": {peak}, \"rss_before_kib\": {rss_before}}}",
            outcomes.ok,
            outcomes.busy,
            outcomes.lease_lost,
            outcomes.other.len()
        );
    } else {
        println!(
            "{threads} Threads x {TURNS} runs on one Agent (reference driver, SQLite default): \
             {} ok, {} Busy, {} LeaseLost, {} other errors in {:.2} s ({turns_per_s:.0} runs/s); \
             peak RSS {peak} KiB (before the store opened: {rss_before} KiB); \
             {} store writes in {} commits (largest batch {})",
            outcomes.ok,
            outcomes.busy,
            outcomes.lease_lost,
            outcomes.other.len(),
            elapsed.as_secs_f64(),
            stats.writes,
            stats.commits,
            stats.largest_batch
        );
    }
    for error in outcomes.other.iter().take(5) {
        eprintln!("error: {error}");
    }
    if outcomes.ok != threads * TURNS {
        eprintln!("FAILED: not every run succeeded");
        std::process::exit(1);
    }
}
