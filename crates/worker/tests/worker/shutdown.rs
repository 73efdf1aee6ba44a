//! A worker's end ends the processes its drivers kept, as closing the driver does in process:
//! a resident CLI that neither exits at once on stdin's end nor on SIGTERM (a graceful
//! shutdown that takes its time, a wrapper that traps the signal) is still ended, not
//! orphaned, by the time the host's `close_processes` returns.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::Instant;

use driver_spi::{CollectingSink, Driver, Request};
use run_service::RunId;
use worker::WorkerDriver;
use worker_protocol::{DriverConfig, WireEnv};

use crate::cli_fakes;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_worker_ends_a_resident_cli_that_ignores_sigterm() {
    // Codex's fake app-server, which at stdin's end takes a minute to exit, behind a wrapper
    // that ignores SIGTERM (an ignored signal stays ignored across `exec`).
    let scenario = cli_fakes::codex_app_server::app_server().serve_exit_delay_ms(60_000);
    let fake = cli_fakes::codex::fake_codex(scenario, &[]);
    let wrapper = fake.path().join("codex");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntrap '' TERM\nexec '{}' \"$@\"\n",
            fake_cli::binary_path().display()
        ),
    )
    .expect("the wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let env = Arc::clone(&fake.env);
    let config = DriverConfig::Registry {
        env: WireEnv {
            base_dir: env.base_dir().to_path_buf(),
            namespace: env.namespace().as_str().to_owned(),
            cwd: env.cwd().to_path_buf(),
            vars: BTreeMap::from([(
                fake_cli::SCENARIO_ENV.to_owned(),
                fake.scenario.display().to_string(),
            )]),
        },
        runtime: "codex".to_owned(),
        binary: Some(wrapper),
        model: None,
        base_url: None,
        key: None,
        resident: true,
    };
    let workers = crate::support::workers();
    let driver = WorkerDriver::new(Arc::clone(&workers), env, config).expect("a worker driver");
    let request = Request::new(RunId::new("r1"), "hello", crate::support::profile())
        .with_workspace(fake.workspace.to_string_lossy());
    let response = driver
        .run(request, Arc::new(CollectingSink::new()))
        .await
        .expect("a turn on the resident fake");
    assert!(response.is_clean(), "{response:?}");
    let cli = fake.last().pid;
    assert!(fake_cli::is_running(cli), "the worker keeps the CLI");

    let started = Instant::now();
    driver
        .process_lifecycle()
        .expect("a lifecycle")
        .close_processes()
        .await
        .expect("closed");
    assert_eq!(workers.live(), 0);
    assert!(
        !fake_cli::is_running(cli),
        "the CLI outlived its worker's close ({:?})",
        started.elapsed()
    );
}
