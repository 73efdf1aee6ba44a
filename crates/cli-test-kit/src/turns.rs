//! The `turns` benches' measuring part, shared by every driver crate's `benches/turns.rs`:
//! a Thread of N turns through one [`CliDriver`], each turn timed from [`Driver::run`] to its
//! response, while a sampler reads `/proc` every 10 ms and keeps the largest total resident
//! set of the namespace's CLI processes (found by their environment: the runtime's state
//! variable naming the namespace's state directory, so a Node wrapper and the native binary it
//! starts both count, and nothing of another namespace does).
//!
//! A bench's `main` starts its crate's model mock and says how to build its driver in a
//! namespace for each process mode; [`run_turns_bench`] does the rest (`ignore`d: the `driver`
//! function is each bench's own, and a bench runs a real CLI for seconds per turn):
//!
//! ```ignore
//! let model = MockAnthropic::start(script).expect("mock");
//! run_turns_bench("CLAUDE_BIN", [("per-turn", PerTurn), ("resident", resident)], 10,
//!     |base, work, bin, mode| driver(base, work, bin, &model, mode));
//! ```
//!
//! With `TURNS_VERBOSE` set, every turn's time and the resident set between turns (what a
//! resident process holds while it waits) go to stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{
    CollectingSink, Driver, ProcessLifecycle as _, ProfilePayload, Request, SessionContext,
};
use run_service::RunId;

use driver_cli::{CliDriver, Dialect};

/// How often the sampler reads `/proc`.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// One measured Thread: a row of a `turns` bench.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnsRow {
    /// The process mode's name in the bench's output (`"per-turn"`, `"resident"`; Codex's
    /// `"exec"`, `"app-server"`).
    pub mode: String,
    /// The first turn, in milliseconds: a new session (and, resident, a new process).
    pub first_turn_ms: f64,
    /// The median of the later turns, in milliseconds: each continues the Thread.
    pub later_turn_median_ms: f64,
    /// How many turns the Thread had.
    pub turns: usize,
    /// The largest total resident set (KiB) of the namespace's CLI processes seen while the
    /// Thread ran.
    pub rss_kib: u64,
}

impl TurnsRow {
    /// The row as the benches' JSON line:
    /// `{"mode","first_turn_ms","later_turn_median_ms","turns","rss_kib"}`, times rounded to
    /// a tenth of a millisecond.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "mode": self.mode,
            "first_turn_ms": round(self.first_turn_ms),
            "later_turn_median_ms": round(self.later_turn_median_ms),
            "turns": self.turns,
            "rss_kib": self.rss_kib,
        })
    }

    /// Prints the row on stdout: its JSON line with `json`, else a line of a table.
    pub fn print(&self, json: bool) {
        if json {
            println!("{}", self.to_json());
        } else {
            println!(
                "{:<10} first turn {:>8.1} ms   later turns (median) {:>8.1} ms   peak RSS {:>7} KiB",
                self.mode, self.first_turn_ms, self.later_turn_median_ms, self.rss_kib
            );
        }
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

/// A `turns` bench's `main`: without the binary variable `bin_var` it says so on stderr and
/// returns; else, for each of `modes` (its name in the output, its process mode), a fresh
/// namespace directory and workspace, the driver that `driver(base, work, binary, mode)`
/// builds there, and one measured [`thread_of_turns`] of `turns` turns, printed as a table
/// row, or as a JSON line with `--json` among the program's arguments. The resident mode is
/// then measured once more after an untimed [`Driver::prewarm`] of the first turn, as the
/// row `prewarmed`: its `first_turn_ms` is the first turn on the pre-warmed process.
///
/// # Panics
/// As [`thread_of_turns`], or when no Tokio runtime or temporary directory can be made.
#[allow(clippy::expect_used, reason = "bench support")]
pub fn run_turns_bench<D: Dialect>(
    bin_var: &str,
    modes: [(&str, driver_cli::ProcessMode); 2],
    turns: usize,
    driver: impl Fn(&Path, &Path, &Path, driver_cli::ProcessMode) -> CliDriver<D>,
) {
    let json = std::env::args().any(|a| a == "--json");
    let Some(bin) = std::env::var_os(bin_var).map(PathBuf::from) else {
        eprintln!("turns: {bin_var} is not set; nothing to measure (SKIPPED)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // A resident mode is measured twice: cold, and pre-warmed (a row of its own, `prewarmed`).
    let resident = modes
        .iter()
        .find(|(_, m)| matches!(m, driver_cli::ProcessMode::Resident(_)))
        .map(|(_, m)| *m);
    let runs = modes
        .into_iter()
        .map(|(mode, m)| (mode, m, false))
        .chain(resident.map(|m| ("prewarmed", m, true)));
    for (mode, process_mode, prewarm) in runs {
        let base = tempfile::tempdir().expect("temp dir");
        let work = tempfile::tempdir().expect("temp dir");
        let driver = driver(base.path(), work.path(), &bin, process_mode);
        let row = runtime.block_on(measure(mode, &driver, turns, prewarm));
        if let Some(row) = row {
            row.print(json);
        }
    }
}

/// Runs a Thread of `turns` turns ("Say OK.", each continuing the last one's checkpoint) on
/// `driver` in its environment's working directory, closes its resident processes, and
/// measures it as `mode`.
///
/// `None`, with a line on stderr saying the mode is not available and why, when the driver
/// refuses its configuration ([`Driver::validate_config`]): a CLI without a resident mode
/// refuses [`ProcessMode::Resident`](driver_cli::ProcessMode::Resident).
///
/// # Panics
/// When `turns` is under 2, the binary does not run, or a turn fails: a bench measures clean
/// turns only. This is bench support.
pub async fn thread_of_turns<D: Dialect>(
    mode: &str,
    driver: &CliDriver<D>,
    turns: usize,
) -> Option<TurnsRow> {
    measure(mode, driver, turns, false).await
}

/// [`thread_of_turns`], after an untimed [`Driver::prewarm`] of the first turn's request
/// when `prewarm`: the first turn then runs on the pre-warmed process, as a host's first
/// turn after `Thread::prewarm` does.
async fn measure<D: Dialect>(
    mode: &str,
    driver: &CliDriver<D>,
    turns: usize,
    prewarm: bool,
) -> Option<TurnsRow> {
    assert!(turns >= 2, "a first turn and at least one later turn");
    if let Err(refused) = driver.validate_config() {
        eprintln!("turns: {mode} mode is not available: {refused} (SKIPPED)");
        return None;
    }
    let env = driver.runtime_env();
    let descriptor = &driver.runtime().descriptor;
    let state_var = descriptor.state_var;
    let state_dir = env
        .state_dir(descriptor)
        .expect("validate_config checked the environment serves the runtime")
        .to_owned();
    driver.check_version().await.expect("the binary runs");

    let sampler = Sampler::start(state_var, state_dir.clone());
    let k = Kind::new("driver-cli bench turns v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(k, |e| e.str("exact")),
        Fingerprint::of(k, |e| e.str("session")),
    );
    let mut state = None;
    let mut times = Vec::with_capacity(turns);
    let request = |turn: usize| {
        Request::new(RunId::new(format!("turn-{turn}")), "Say OK.", profile)
            .with_workspace(env.cwd().to_string_lossy())
    };
    let mut ticket = None;
    if prewarm {
        let started = Instant::now();
        let warmed = driver
            .prewarm(request(0))
            .await
            .unwrap_or_else(|e| panic!("{mode}: the pre-warm failed: {e:?}"));
        if verbose() {
            eprintln!(
                "{mode}: pre-warm {:.1} ms",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
        ticket = warmed.ticket;
    }
    for turn in 0..turns {
        let mut request = request(turn);
        if let Some(ticket) = ticket.take() {
            request = request.with_prewarmed(ticket);
        }
        if let Some(state) = &state {
            request = request.with_session(SessionContext::continue_only(Clone::clone(state)));
        }
        let started = Instant::now();
        let response = driver
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .unwrap_or_else(|e| panic!("{mode}: turn {turn} failed: {e:?}"));
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if let Some(failure) = &response.failure {
            panic!("{mode}: turn {turn} failed: {failure:?}");
        }
        state = Some(crate::checkpoint(&response));
    }
    if verbose() {
        eprintln!(
            "{mode}: turns {times:.1?} ms; between turns {} KiB",
            rss_kib(state_var, &state_dir)
        );
    }
    driver.close_processes().await.expect("close");
    if prewarm && verbose() {
        // Diagnostics only: one more turn after a pre-warm of the stored session's resume.
        let resume = |turn| {
            let state = state.clone().expect("a checkpoint");
            request(turn).with_session(SessionContext::continue_only(state))
        };
        driver
            .prewarm(resume(turns))
            .await
            .expect("the resume's pre-warm");
        let started = Instant::now();
        let response = driver
            .run(resume(turns + 1), Arc::new(CollectingSink::new()))
            .await
            .unwrap_or_else(|e| panic!("{mode}: the resumed turn failed: {e:?}"));
        assert!(
            response.failure.is_none(),
            "{mode}: the resumed turn failed"
        );
        eprintln!(
            "{mode}: first turn after a resume's pre-warm {:.1} ms",
            started.elapsed().as_secs_f64() * 1000.0
        );
        driver.close_processes().await.expect("close");
    }
    let rss_kib = sampler.stop();
    let mut later = times[1..].to_vec();
    later.sort_by(f64::total_cmp);
    Some(TurnsRow {
        mode: mode.to_owned(),
        first_turn_ms: times[0],
        later_turn_median_ms: later[later.len() / 2],
        turns,
        rss_kib,
    })
}

/// Whether `TURNS_VERBOSE` asks for every turn's time and the resident set between turns.
fn verbose() -> bool {
    std::env::var_os("TURNS_VERBOSE").is_some()
}

/// A thread keeping the largest [`rss_kib`] it reads every [`SAMPLE_EVERY`].
struct Sampler {
    sampling: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(state_var: &'static str, state_dir: PathBuf) -> Self {
        let sampling = Arc::new(AtomicBool::new(true));
        let peak = Arc::new(AtomicU64::new(0));
        let thread = {
            let (sampling, peak) = (sampling.clone(), peak.clone());
            std::thread::spawn(move || {
                while sampling.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_kib(state_var, &state_dir), Ordering::Relaxed);
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
        };
        Self {
            sampling,
            peak,
            thread,
        }
    }

    /// Stops sampling; the largest total seen, in KiB.
    fn stop(self) -> u64 {
        self.sampling.store(false, Ordering::Relaxed);
        self.thread.join().expect("the sampler");
        self.peak.load(Ordering::Relaxed)
    }
}

/// The total resident set (KiB) of the running processes whose environment sets `state_var`
/// to `state_dir`.
fn rss_kib(state_var: &str, state_dir: &Path) -> u64 {
    let want = format!("{state_var}={}", state_dir.display());
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
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}
