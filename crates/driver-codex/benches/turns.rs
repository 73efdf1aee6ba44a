//! Benchmark: a 10-turn Thread through the Codex driver against the real `codex` and the test
//! kit's offline Responses mock, once per process mode: `exec` (a process per turn) and
//! `app-server` (one resident process). Each turn is timed from `Driver::run` to its response;
//! while a mode runs, a sampler reads `/proc` every 10 ms and keeps the largest total resident
//! set of the namespace's Codex processes (the Node wrapper and the native binary). The
//! measuring is `cli_test_kit::thread_of_turns`, shared with the other drivers' benches.
//!
//! Run with `CODEX_BIN=… cargo bench -p driver-codex --bench turns -- --json`: one JSON object
//! per mode, `{"mode","first_turn_ms","later_turn_median_ms","turns","rss_kib"}`. Without
//! `--json` it prints a table. With `TURNS_VERBOSE=1` it also prints every turn's time and the
//! resident set between turns on stderr. Without `CODEX_BIN` it says so and exits 0. Results
//! go to docs/benchmarks.md.

use std::path::Path;
use std::sync::Arc;

use cli_test_kit::run_turns_bench;
use driver_cli::ProcessMode;
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use driver_process::pool::PoolLimits;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::responses::MockResponses;

const TURNS: usize = 10;

fn main() {
    let model =
        MockResponses::start(test_kit::Script::new().with_default(test_kit::Reply::text("OK")))
            .expect("mock");
    run_turns_bench(
        "CODEX_BIN",
        [
            ("exec", ProcessMode::PerTurn),
            ("app-server", ProcessMode::Resident(PoolLimits::default())),
        ],
        TURNS,
        |base, work, bin, mode| driver(base, work, bin, &model, mode),
    );
}

/// A Codex driver in a fresh namespace under `base`, working in `work`, talking to `model`.
fn driver(
    base: &Path,
    work: &Path,
    bin: &Path,
    model: &MockResponses,
    process_mode: ProcessMode,
) -> CodexDriver {
    let env = RuntimeEnv::builder(base.join("rt"), "user:bench".parse().expect("ns"), work)
        .host_env(HostEnv::from_vars([(
            "PATH",
            std::env::var("PATH").unwrap_or_default(),
        )]))
        .secret("MOCK_KEY", secrecy::SecretString::from("k"))
        .runtimes([&driver_codex::RUNTIME.descriptor])
        .build()
        .expect("runtime env");
    CodexDriver::new(
        Arc::new(env),
        CodexOptions::new()
            .with_binary(bin)
            .with_model("mock-model")
            .with_process_mode(process_mode)
            .with_model_provider(
                ModelProvider::new("mock", model.base_url())
                    .with_env_key("MOCK_KEY")
                    .with_request_max_retries(0)
                    .with_stream_max_retries(0),
            ),
    )
}
