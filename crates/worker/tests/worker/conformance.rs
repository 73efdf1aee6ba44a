//! The driver kit on the worker driver wrapping the file-backed reference runtime, every
//! clause run but the pre-warm ones, which the reference runtime does not declare (in process
//! either). What the kit observes from inside the provider (a scripted tool use, the tools
//! that ran, the materialization the provider saw, a turn held open for STR-01's follow-up)
//! it gets through the worker's test-only `runtime.script`.

use std::future::Future;
use std::sync::Arc;

use driver_spi::conformance::{self, Factory, Release};
use driver_spi::{Action, Driver};
use secrecy::SecretString;
use worker::{WorkerDriver, Workers};
use worker_protocol::{ReferenceScript, WireSecret};

use crate::support::{driver_on, reference, workers};

/// Every driver the kit creates is the one configuration on one pool: the provider (the
/// worker's reference driver) is what scripts reach.
struct WorkerFactory {
    _base: tempfile::TempDir,
    workers: Arc<Workers>,
    driver: Arc<WorkerDriver>,
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(future))
}

impl Factory for WorkerFactory {
    fn create(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn live_processes(&self) -> Option<u64> {
        u64::try_from(self.workers.live()).ok()
    }

    fn script_tool_use(&self, arguments: &str) -> Option<Action> {
        let step = ReferenceScript::UseTool {
            action: Action::Write,
            tool: "kit-write".to_owned(),
            arguments: arguments.to_owned(),
        };
        block_on(self.driver.script(vec![step])).ok()?;
        Some(Action::Write)
    }

    fn tools_run(&self) -> Option<usize> {
        let scripted = block_on(self.driver.script(Vec::new())).ok()?;
        usize::try_from(scripted.performed).ok()
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        let scripted = block_on(self.driver.script(Vec::new())).ok()?;
        scripted.materialization.map(WireSecret::into_secret)
    }

    /// The worker's reference driver stalls its next run until released, taking follow-ups
    /// meanwhile; the release may come from the kit's timer thread, so it is spawned.
    fn script_steered_turn(&self) -> Option<Release> {
        block_on(self.driver.script(vec![ReferenceScript::Stall])).ok()?;
        let driver = Arc::clone(&self.driver);
        let runtime = tokio::runtime::Handle::current();
        Some(Arc::new(move || {
            let driver = Arc::clone(&driver);
            runtime.spawn(async move { driver.release_stalled().await });
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_kit_passes_on_the_worker_driver() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = workers();
    let driver = Arc::new(driver_on(
        base.path(),
        reference(base.path(), &[]),
        &workers,
    ));
    let factory = WorkerFactory {
        _base: base,
        workers,
        driver: Arc::clone(&driver),
    };
    let report = conformance::run(&factory).await;
    println!("{report}");
    assert!(
        driver.descriptor().capabilities.steer,
        "the reference runtime steers, through a worker too: STR-01 runs declared"
    );
    // The reference runtime declares no pre-warm: CAP-05 judges the refusal.
    report.assert_passed_except(&[
        driver_spi::conformance::Clause::Prw01,
        driver_spi::conformance::Clause::Prw02,
    ]);
}
