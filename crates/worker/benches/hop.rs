//! Benchmark: the cost of the worker hop per turn. The same reference-runtime configuration
//! ([`DriverConfig::Reference`], no script) runs N text turns in process (the driver
//! [`worker::build`] makes, as the worker itself would) and N text turns through a
//! [`WorkerDriver`] over the real `agent-worker` binary, warm: the first turn of each mode
//! (which, for the worker, spawns it and configures the driver) is excluded; the median
//! per-turn latency is reported.
//!
//! Run with `cargo bench -p worker --bench hop` (a table) or with `-- --json` (one JSON row
//! per mode). Results go to docs/benchmarks.md.

use std::sync::Arc;
use std::time::Instant;

use compat_fingerprint::{Fingerprint, Kind};
use driver_process::pool::PoolLimits;
use driver_spi::{CollectingSink, Driver, ProfilePayload, Request};
use run_service::RunId;
use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use worker::{WorkerDriver, Workers};
use worker_protocol::DriverConfig;

const TURNS: usize = 200;
const NAMESPACE: &str = "user:bench";

fn profile() -> ProfilePayload {
    const K: Kind = Kind::new("worker hop bench 2026-12-05 profile v1");
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    )
}

fn config(base: &std::path::Path) -> DriverConfig {
    serde_json::from_value(json!({
        "kind": "reference",
        "env": {"base_dir": base.join("env"), "namespace": NAMESPACE, "cwd": base},
        "script": [],
        "prompt_tools": false,
    }))
    .expect("a reference configuration")
}

/// Per-turn latencies in microseconds of `turns` text turns on `driver`, the first excluded.
async fn measure(driver: &dyn Driver, mode: &str, turns: usize) -> Vec<f64> {
    let mut samples = Vec::with_capacity(turns);
    for i in 0..=turns {
        let request = Request::new(RunId::new(format!("{mode}-{i}")), "hello", profile());
        let start = Instant::now();
        let response = driver
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .expect("a reference turn");
        let elapsed = start.elapsed().as_secs_f64() * 1e6;
        assert!(response.is_clean(), "{response:?}");
        if i > 0 {
            samples.push(elapsed);
        }
    }
    samples.sort_by(f64::total_cmp);
    samples
}

struct Row {
    mode: &'static str,
    samples: Vec<f64>,
}

impl Row {
    fn pct(&self, p: f64) -> f64 {
        let last = self.samples.len() - 1;
        self.samples[(last as f64 * p) as usize]
    }
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let base = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let rows = runtime.block_on(async {
        let in_process =
            worker::build(config(base.path()), HostEnv::empty()).expect("the in-process driver");
        let local = measure(in_process.as_ref(), "in-process", TURNS).await;

        let workers = Workers::new(env!("CARGO_BIN_EXE_agent-worker"), PoolLimits::default());
        let env = RuntimeEnv::builder(
            base.path().join("env"),
            NAMESPACE.parse().expect("a namespace"),
            base.path(),
        )
        .host_env(HostEnv::empty())
        .build()
        .expect("the namespace's environment");
        let driver = WorkerDriver::new(Arc::clone(&workers), Arc::new(env), config(base.path()))
            .expect("a worker driver");
        let hopped = measure(&driver, "worker", TURNS).await;
        workers.close().await;
        [
            Row {
                mode: "in-process",
                samples: local,
            },
            Row {
                mode: "worker",
                samples: hopped,
            },
        ]
    });
    if json {
        for row in &rows {
            println!(
                "{}",
                json!({
                    "mode": row.mode,
                    "driver": "reference",
                    "turn_median_us": (row.pct(0.5) * 10.0).round() / 10.0,
                    "turns": row.samples.len(),
                })
            );
        }
        return;
    }
    println!("reference driver, {TURNS} warm text turns per mode (first turn excluded)");
    println!(
        "{:<12} {:>12} {:>12} {:>12}",
        "mode", "median µs", "p90 µs", "p99 µs"
    );
    for row in &rows {
        println!(
            "{:<12} {:>12.1} {:>12.1} {:>12.1}",
            row.mode,
            row.pct(0.5),
            row.pct(0.9),
            row.pct(0.99)
        );
    }
    println!(
        "hop (worker − in-process, medians): {:.1} µs per turn",
        rows[1].pct(0.5) - rows[0].pct(0.5)
    );
}
