//! The real `codex app-server`, resident, fully offline against the test kit's Responses
//! mock: the restart scenario with its canary scan; two turns of one Thread on one live
//! process; a token rotation that retires the process and resumes the thread on a new one,
//! whose tool call uses the new token; a fork with its parent's history; `Agent::close`
//! leaving no process (the shared scenarios: [`test_kit::restart`], [`test_kit::resident`]).
//! Skipped with a visible line without `CODEX_BIN`; never under CI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_cli::ProcessMode;
use driver_codex::CodexDriver;
use driver_process::pool::PoolLimits;
use driver_spi::ProcessLifecycle as _;
use test_kit::resident::{self, ResidentSetup};
use test_kit::responses::MockResponses;
use test_kit::restart::{self, Secrets, Setup};

use crate::real_binary::MODEL_KEY;

/// A resident driver over the mock: the per-turn tests' driver in resident mode.
fn driver(dir: &Path, bin: &Path, model: &MockResponses) -> CodexDriver {
    crate::real_binary::driver_with(
        dir,
        bin,
        model,
        ProcessMode::Resident(PoolLimits::default()),
    )
}

/// The pids of every live process (the Node shim and the native binary) of an `app-server`
/// whose `CODEX_HOME` is `home`, from `/proc`.
fn app_servers(home: &Path) -> BTreeSet<u32> {
    resident::processes_with_env(
        "app-server",
        driver_codex::RUNTIME.descriptor.state_var,
        home,
    )
}

fn codex_home(driver: &CodexDriver) -> PathBuf {
    driver
        .runtime_env()
        .state_dir(&driver_codex::RUNTIME.descriptor)
        .unwrap()
        .to_owned()
}

#[test]
fn codex_app_server_resumes_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex app-server end to end against the real codex",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockResponses::start(restart::script()).unwrap();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "app-server",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::Shared,
        })
        .await;
        let resident = driver(dir.path(), &bin, &model);
        restart::unknown_session_is_rejected_at_prewarm_too(&resident, &|| model.model_requests())
            .await;
        resident.close_processes().await.unwrap();
        assert!(app_servers(&codex_home(&resident)).is_empty());
    });
}

#[test]
fn codex_app_server_reuses_recycles_forks_and_closes() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex app-server process pool against the real codex",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockResponses::start(resident::resident_script()).unwrap();
    test_kit::real_cli::block_on(async {
        let driver = Arc::new(driver(dir.path(), &bin, &model));
        let home = codex_home(&driver);
        resident::run_resident_scenario(ResidentSetup {
            dir: dir.path(),
            driver: driver.clone(),
            live_pids: &|| app_servers(&home),
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
fn codex_app_server_prewarms_new_and_stored_threads() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex pre-warmed first turns against the real codex",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = MockResponses::start(test_kit::prewarm::prewarm_script()).unwrap();
    test_kit::real_cli::block_on(async {
        let driver = Arc::new(driver(dir.path(), &bin, &model));
        let home = codex_home(&driver);
        test_kit::prewarm::run_prewarm_scenario(ResidentSetup {
            dir: dir.path(),
            driver: driver.clone(),
            live_pids: &|| app_servers(&home),
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
