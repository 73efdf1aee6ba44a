//! The real `claude` as a resident stream-json process
//! (`-p --input-format stream-json --output-format stream-json`), fully offline against the
//! test kit's Anthropic mock: the restart scenario with its canary scan in resident mode
//! ([`test_kit::restart`]), and the resident scenario ([`test_kit::resident`]): two turns of
//! one Thread on one live process, a rotation that recycles it and resumes the session on a
//! new one, a fork with its parent's history, `Agent::close` leaving no process.
//!
//! Needs `CLAUDE_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_claude_code::ClaudeCodeDriver;
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use driver_spi::ProcessLifecycle as _;
use test_kit::anthropic::MockAnthropic;
use test_kit::resident::{self, ResidentSetup};
use test_kit::restart::{self, Secrets, Setup};

use crate::real_binary::MODEL_KEY;

/// What every command line of a resident Claude Code process contains.
const RESIDENT_ARGV: &str = "--input-format stream-json";

/// A resident driver over the mock: the per-turn tests' driver in resident mode.
fn driver(dir: &Path, bin: &Path, model: &MockAnthropic) -> ClaudeCodeDriver {
    crate::real_binary::driver_with(
        dir,
        bin,
        model,
        ProcessMode::Resident(PoolLimits::default()),
    )
}

/// The driver's `CLAUDE_CONFIG_DIR`.
fn config_dir(driver: &ClaudeCodeDriver) -> PathBuf {
    driver
        .runtime_env()
        .state_dir(&driver_claude_code::RUNTIME.descriptor)
        .unwrap()
        .to_owned()
}

/// The live resident Claude Code processes whose `CLAUDE_CONFIG_DIR` is `dir`.
fn residents(dir: &Path) -> std::collections::BTreeSet<u32> {
    resident::processes_with_env(
        RESIDENT_ARGV,
        driver_claude_code::RUNTIME.descriptor.state_var,
        dir,
    )
}

#[test]
fn claude_resident_resumes_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = test_kit::real_cli::binary(
        "CLAUDE_BIN",
        "driver-claude-code resident mode end to end against the real claude",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: RESIDENT_ARGV,
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::Shared,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        let resident = driver(dir.path(), &bin, &model);
        restart::unknown_session_is_rejected_at_prewarm_too(&resident, &|| model.model_requests())
            .await;
        resident.close_processes().await.unwrap();
        assert!(residents(&config_dir(&resident)).is_empty());
        for request in model.model_requests() {
            assert_eq!(
                request.bearer(),
                Some(MODEL_KEY),
                "the key reached claude's env"
            );
        }
    });
}

#[test]
fn claude_resident_reuses_recycles_forks_and_closes() {
    let Some(bin) = test_kit::real_cli::binary(
        "CLAUDE_BIN",
        "driver-claude-code resident process pool against the real claude",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockAnthropic::start(resident::resident_script()).unwrap();
    test_kit::real_cli::block_on(async {
        let driver = Arc::new(driver(dir.path(), &bin, &model));
        let config = config_dir(&driver);
        resident::run_resident_scenario(ResidentSetup {
            dir: dir.path(),
            driver: driver.clone(),
            live_pids: &|| residents(&config),
            pool_counts: &|| {
                driver
                    .pool_stats()
                    .map(|s| (s.started, s.reused, s.recycled))
            },
            model_requests: &|| model.model_requests(),
        })
        .await;
    });
}

#[test]
fn claude_resident_prewarms_new_and_stored_threads() {
    let Some(bin) = test_kit::real_cli::binary(
        "CLAUDE_BIN",
        "driver-claude-code pre-warmed first turns against the real claude",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = MockAnthropic::start(test_kit::prewarm::prewarm_script()).unwrap();
    test_kit::real_cli::block_on(async {
        let driver = Arc::new(driver(dir.path(), &bin, &model));
        let config = config_dir(&driver);
        test_kit::prewarm::run_prewarm_scenario(ResidentSetup {
            dir: dir.path(),
            driver: driver.clone(),
            live_pids: &|| residents(&config),
            pool_counts: &|| {
                driver
                    .pool_stats()
                    .map(|s| (s.started, s.reused, s.recycled))
            },
            model_requests: &|| model.model_requests(),
        })
        .await;
    });
}
