//! A worker SIGKILLed mid-task: before any tool call the run fails retryable; during a tool
//! call (a tool started, its result not yet), not retryable. The next run starts a new worker.

use std::sync::Arc;

use driver_spi::{Driver, DriverError, DriverEvent, FailureKind, PermissionPolicy, Request};
use run_service::RunId;

use crate::support::{
    Watch, first_ticket, holding, kill, namespace, profile, reference, worker_driver,
};

fn lost(result: Result<driver_spi::Response, DriverError>) -> Option<bool> {
    match result {
        Err(DriverError::Failed(failure)) => {
            assert_eq!(failure.kind, FailureKind::Process, "{failure:?}");
            failure.retryable
        }
        other => panic!("a lost worker, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_before_any_tool_call_fails_the_run_retryable() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, workers) = worker_driver(base.path(), reference(base.path(), &["stall"]));
    let driver = Arc::new(driver);
    let sink = Arc::new(Watch::default());
    let run = tokio::spawn({
        let (driver, sink) = (Arc::clone(&driver), Arc::clone(&sink));
        async move {
            let request = Request::new(RunId::new("r1"), "wait", profile());
            driver.run(request, sink).await
        }
    });
    sink.until(|e| *e == DriverEvent::RunStarted).await;
    let pid = workers.worker_pid(&namespace()).expect("a worker");
    kill(pid).await;
    assert_eq!(lost(run.await.expect("joined")), Some(true));
    assert_eq!(
        sink.events().last(),
        Some(&DriverEvent::RunFailed {
            kind: FailureKind::Process
        })
    );
    // The next run starts a new worker (whose script stalls again: stop it by dropping).
    let next = Request::new(RunId::new("r2"), "hi", profile());
    let sink = Arc::new(Watch::default());
    let second = tokio::spawn({
        let (driver, sink) = (Arc::clone(&driver), Arc::clone(&sink));
        async move { driver.run(next, sink).await }
    });
    sink.until(|e| *e == DriverEvent::RunStarted).await;
    assert_ne!(workers.worker_pid(&namespace()), Some(pid));
    second.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_during_a_tool_call_fails_the_run_not_retryable() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let (tickets, approvals) = holding();
    let policy: PermissionPolicy = "write=ask".parse().expect("a policy");
    let request = Request::new(RunId::new("r1"), "/tool write Write notes.txt", profile())
        .with_permissions(policy)
        .with_approvals(approvals);
    let sink = Arc::new(Watch::default());
    let run = tokio::spawn({
        let sink = Arc::clone(&sink);
        async move { driver.run(request, sink).await }
    });
    let ticket = first_ticket(&tickets).await;
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, DriverEvent::ToolCallStarted { .. })),
        "a tool call is in flight"
    );
    kill(workers.worker_pid(&namespace()).expect("a worker")).await;
    assert_eq!(lost(run.await.expect("joined")), Some(false));
    // The host's open approval request closed with the run.
    for _ in 0..100 {
        if !ticket.is_open() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(ticket.approve(), Err(driver_spi::AnswerError::Closed));
}
