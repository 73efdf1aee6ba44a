//! Benchmark: a 10-turn Thread through the Claude Code driver against the real `claude` and the
//! test kit's offline Anthropic Messages mock (every reply "OK"), once per process mode:
//! `per-turn` (a process per turn) and `resident` (one process kept between turns). Each turn
//! is timed from `Driver::run` to its response; while a mode runs, a sampler reads `/proc`
//! every 10 ms and keeps the largest total resident set of the namespace's Claude Code
//! processes. The measuring is `cli_test_kit::thread_of_turns`, shared with the other
//! drivers' benches.
//!
//! Run with `CLAUDE_BIN=… cargo bench -p driver-claude-code --bench turns -- --json`: one JSON
//! object per mode, `{"mode","first_turn_ms","later_turn_median_ms","turns","rss_kib"}`.
//! Without `--json` it prints a table. With `TURNS_VERBOSE=1` it also prints every turn's time
//! and the resident set between turns on stderr. Without `CLAUDE_BIN` it says so and exits 0;
//! a mode the driver refuses (a build without resident mode) is skipped with a line on stderr.
//! Results go to docs/benchmarks.md.

use std::path::Path;
use std::sync::Arc;

use cli_test_kit::run_turns_bench;
use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::anthropic::MockAnthropic;
use test_kit::{Reply, Script};

const TURNS: usize = 10;

fn main() {
    let model = MockAnthropic::start(Script::new().with_default(Reply::text("OK"))).expect("mock");
    run_turns_bench(
        "CLAUDE_BIN",
        [
            ("per-turn", ProcessMode::PerTurn),
            ("resident", ProcessMode::Resident(PoolLimits::default())),
        ],
        TURNS,
        |base, work, bin, mode| driver(base, work, bin, &model, mode),
    );
}

/// A Claude Code driver in a fresh namespace under `base`, working in `work`, talking to
/// `model`, set up as the real-binary tests set it up.
fn driver(
    base: &Path,
    work: &Path,
    bin: &Path,
    model: &MockAnthropic,
    process_mode: ProcessMode,
) -> ClaudeCodeDriver {
    let env = RuntimeEnv::builder(base.join("rt"), "user:bench".parse().expect("ns"), work)
        .host_env(HostEnv::from_vars([(
            "PATH",
            std::env::var("PATH").unwrap_or_default(),
        )]))
        .secret("ANTHROPIC_API_KEY", SecretString::from("sk-ant-bench-key"))
        .runtimes([&driver_claude_code::RUNTIME.descriptor])
        .build()
        .expect("runtime env");
    ClaudeCodeDriver::new(
        Arc::new(env),
        ClaudeCodeOptions::new()
            .with_binary(bin)
            .with_model("claude-mock")
            .with_base_url(model.base_url())
            .with_max_retries(0)
            .with_process_mode(process_mode),
    )
}
