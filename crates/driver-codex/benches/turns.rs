//! Benchmark: a 10-turn Thread through the Codex driver against the real `codex` and the test
//! kit's offline Responses mock, once per process mode: `exec` (a process per turn) and
//! `app-server` (one resident process). Each turn is timed from `Driver::run` to its response;
//! while a mode runs, a sampler reads `/proc` every 10 ms and keeps the largest total resident
//! set of the namespace's Codex processes (the Node wrapper and the native binary).
//!
//! Run with `CODEX_BIN=… cargo bench -p driver-codex --bench turns -- --json`: one JSON object
//! per mode, `{"mode","first_turn_ms","later_turn_median_ms","turns","rss_kib"}`. Without
//! `--json` it prints a table. With `TURNS_VERBOSE=1` it also prints every turn's time and the
//! resident set between turns on stderr. Without `CODEX_BIN` it says so and exits 0. Results
//! go to docs/benchmarks.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compat_fingerprint::{Fingerprint, Kind};
use driver_cli::{PoolLimits, ProcessMode};
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use driver_spi::{
    CollectingSink, Driver, ProcessLifecycle, ProfilePayload, Request, SessionContext,
};
use run_service::RunId;
use runtime_env::{HostEnv, RuntimeEnv};

const TURNS: usize = 10;

struct Row {
    mode: &'static str,
    first_turn_ms: f64,
    later_turn_median_ms: f64,
    rss_kib: u64,
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let Some(bin) = std::env::var_os("CODEX_BIN").map(PathBuf::from) else {
        eprintln!("turns: CODEX_BIN is not set; nothing to measure (SKIPPED)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let rows = [
        runtime.block_on(thread_of_turns(&bin, "exec", ProcessMode::PerTurn)),
        runtime.block_on(thread_of_turns(
            &bin,
            "app-server",
            ProcessMode::Resident(PoolLimits::default()),
        )),
    ];
    for row in &rows {
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "mode": row.mode,
                    "first_turn_ms": round(row.first_turn_ms),
                    "later_turn_median_ms": round(row.later_turn_median_ms),
                    "turns": TURNS,
                    "rss_kib": row.rss_kib,
                })
            );
        } else {
            println!(
                "{:<10} first turn {:>8.1} ms   later turns (median) {:>8.1} ms   peak RSS {:>7} KiB",
                row.mode, row.first_turn_ms, row.later_turn_median_ms, row.rss_kib
            );
        }
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

/// Runs a `TURNS`-turn Thread in a fresh namespace and measures it.
async fn thread_of_turns(bin: &Path, mode: &'static str, process_mode: ProcessMode) -> Row {
    let model = test_kit::responses::MockResponses::start(
        test_kit::Script::new().with_default(test_kit::Reply::text("OK")),
    )
    .expect("mock");
    let base = tempfile::tempdir().expect("temp dir");
    let work = tempfile::tempdir().expect("temp dir");
    let env = RuntimeEnv::builder(
        base.path().join("rt"),
        "user:bench".parse().expect("ns"),
        work.path(),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret("MOCK_KEY", secrecy::SecretString::from("k"))
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .expect("runtime env");
    let home = env
        .state_dir(&driver_codex::RUNTIME.descriptor)
        .expect("state dir")
        .to_owned();
    let driver = CodexDriver::new(
        Arc::new(env),
        CodexOptions::new()
            .with_binary(bin)
            .with_model("mock-model")
            .with_process_mode(process_mode)
            .with_provider(
                ModelProvider::new("mock", model.base_url())
                    .with_env_key("MOCK_KEY")
                    .with_request_max_retries(0)
                    .with_stream_max_retries(0),
            ),
    );
    driver.check_version().await.expect("codex runs");

    let sampling = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (sampling, peak, home) = (sampling.clone(), peak.clone(), home.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(&home), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };

    let k = Kind::new("driver-codex bench turns v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(k, |e| e.str("exact")),
        Fingerprint::of(k, |e| e.str("session")),
    );
    let mut state = None;
    let mut times = Vec::with_capacity(TURNS);
    for turn in 0..TURNS {
        let mut request = Request::new(RunId::new(format!("turn-{turn}")), "Say OK.", profile)
            .with_workspace(work.path().to_string_lossy());
        if let Some(state) = &state {
            request = request.with_session(SessionContext::continue_only(Clone::clone(state)));
        }
        let started = Instant::now();
        let response = driver
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .expect("a clean turn");
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(response.failure.is_none(), "turn {turn} failed");
        state = Some(
            response
                .persistable_checkpoint()
                .expect("a checkpoint")
                .clone(),
        );
    }
    if std::env::var_os("TURNS_VERBOSE").is_some() {
        // Between turns: what a resident process holds while it waits (0 with exec).
        eprintln!(
            "{mode}: turns {times:.1?} ms; between turns {} KiB",
            rss_kib(&home)
        );
    }
    driver.close_processes().await.expect("close");
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");
    let mut later = times[1..].to_vec();
    later.sort_by(f64::total_cmp);
    Row {
        mode,
        first_turn_ms: times[0],
        later_turn_median_ms: later[later.len() / 2],
        rss_kib: peak.load(Ordering::Relaxed),
    }
}

/// The total resident set (KiB) of the running processes whose `CODEX_HOME` is `home`.
fn rss_kib(home: &Path) -> u64 {
    let want = format!("CODEX_HOME={}", home.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let dir = entry.path();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if !environ.split(|b| *b == 0).any(|w| w == want.as_bytes()) {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        total += rss;
    }
    total
}
