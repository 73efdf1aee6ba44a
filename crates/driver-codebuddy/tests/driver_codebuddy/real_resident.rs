//! The real `codebuddy` as a resident stream-json process
//! (`-p --input-format stream-json --output-format stream-json`), fully offline against the
//! test kit's Chat Completions mock: the restart scenario with its canary scan in resident mode
//! ([`test_kit::restart`]), and the resident scenario ([`test_kit::resident`]): two turns of
//! one Thread on one live process, a rotation that recycles it and resumes the session on a
//! new one, a fork with its parent's history, `Agent::close` leaving no process.
//!
//! Needs `CODEBUDDY_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_cli::ProcessMode;
use driver_codebuddy::CodeBuddyDriver;
use driver_process::pool::PoolLimits;
use driver_spi::ProcessLifecycle as _;
use test_kit::chat::MockChat;
use test_kit::resident::{self, ResidentSetup};
use test_kit::restart::{self, Secrets, Setup};

use crate::real_binary::MODEL_KEY;

/// What every command line of a resident CodeBuddy process (the Node shim and
/// whatever it starts) contains.
const RESIDENT_ARGV: &str = "--input-format stream-json";

/// A resident driver over the mock: the per-turn tests' driver in resident mode.
fn driver(dir: &Path, bin: &Path, model: &MockChat) -> CodeBuddyDriver {
    crate::real_binary::driver_with(
        dir,
        bin,
        model,
        ProcessMode::Resident(PoolLimits::default()),
    )
}

/// The driver's `CODEBUDDY_CONFIG_DIR`.
fn config_dir(driver: &CodeBuddyDriver) -> PathBuf {
    driver
        .runtime_env()
        .state_dir(&driver_codebuddy::RUNTIME.descriptor)
        .unwrap()
        .to_owned()
}

/// The live resident CodeBuddy processes whose `CODEBUDDY_CONFIG_DIR` is `dir`.
fn residents(dir: &Path) -> std::collections::BTreeSet<u32> {
    resident::processes_with_env(
        RESIDENT_ARGV,
        driver_codebuddy::RUNTIME.descriptor.state_var,
        dir,
    )
}

#[test]
fn codebuddy_resident_resumes_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEBUDDY_BIN",
        "driver-codebuddy resident mode end to end against the real codebuddy",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockChat::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: RESIDENT_ARGV,
            // The key's tail too: without ACC_USER_ID CodeBuddy would log it.
            secrets: Secrets::new([
                MODEL_KEY.to_owned(),
                MODEL_KEY[MODEL_KEY.len() - 8..].to_owned(),
            ]),
            log,
            call_ids: restart::CallIds::NotPassed,
        })
        .await;
        // The CLI itself refuses a session its namespace does not hold.
        let resident = driver(dir.path(), &bin, &model);
        restart::unknown_session_is_rejected(&resident, &|| model.model_requests()).await;
        resident.close_processes().await.unwrap();
        assert!(residents(&config_dir(&resident)).is_empty());
        let tail = &MODEL_KEY[MODEL_KEY.len() - 8..];
        for request in model.model_requests() {
            assert_eq!(
                request.bearer(),
                Some(MODEL_KEY),
                "the key reached codebuddy's env"
            );
            // ACC_USER_ID keeps the key's tail out of the user id CodeBuddy sends and logs.
            let user = request.header("x-user-id").unwrap_or_default();
            assert!(
                !user.contains(tail),
                "x-user-id carries part of the key: {user}"
            );
        }
    });
}

#[test]
fn codebuddy_resident_reuses_recycles_forks_and_closes() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEBUDDY_BIN",
        "driver-codebuddy resident process pool against the real codebuddy",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockChat::start(resident::resident_script()).unwrap();
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
fn codebuddy_resident_prewarms_new_and_stored_threads() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEBUDDY_BIN",
        "driver-codebuddy pre-warmed first turns against the real codebuddy",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = MockChat::start(test_kit::prewarm::prewarm_script()).unwrap();
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
