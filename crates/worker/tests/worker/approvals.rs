//! Approvals across the worker: approve, deny, timeout, duplicate, and after cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use driver_spi::{
    AnswerError, ApprovalOutcome, ApprovalTicket, Approvals, Driver, DriverEvent, PermissionPolicy,
    Request, Response,
};
use run_service::RunId;

use crate::support::{Watch, first_ticket, holding, profile, reference, worker_driver};

fn tool_request(approvals: Approvals) -> Request {
    let policy: PermissionPolicy = "write=ask".parse().expect("a policy");
    Request::new(RunId::new("r1"), "/tool write Write notes.txt", profile())
        .with_permissions(policy)
        .with_approvals(approvals)
}

async fn run_with(approvals: Approvals) -> (Response, Vec<DriverEvent>) {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, _workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let sink = Arc::new(Watch::default());
    let response = driver
        .run(tool_request(approvals), sink.clone())
        .await
        .expect("a response");
    (response, sink.events())
}

fn tool_result(events: &[DriverEvent]) -> (String, bool) {
    events
        .iter()
        .find_map(|e| match e {
            DriverEvent::ToolCallResult {
                output, is_error, ..
            } => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

fn outcome(events: &[DriverEvent]) -> ApprovalOutcome {
    events
        .iter()
        .find_map(|e| match e {
            DriverEvent::ApprovalResolved { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .expect("a resolved approval")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_answered_on_the_host_once() {
    let answers: Arc<Mutex<Vec<Result<(), AnswerError>>>> = Arc::default();
    let handler = {
        let answers = Arc::clone(&answers);
        move |t: ApprovalTicket| {
            let first = t.approve();
            let second = t.deny("too late");
            answers.lock().expect("answers").extend([first, second]);
        }
    };
    let (_, events) = run_with(Approvals::new(Arc::new(handler))).await;
    assert_eq!(tool_result(&events), ("Write done".to_owned(), false));
    assert_eq!(outcome(&events), ApprovalOutcome::Approved);
    assert_eq!(
        *answers.lock().expect("answers"),
        [Ok(()), Err(AnswerError::AlreadyAnswered)]
    );
    assert_eq!(driver_spi::check_sequence(&events), Ok(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_reaches_the_runtime_with_its_reason() {
    let (_, events) = run_with(Approvals::deny_all("not today")).await;
    let (output, is_error) = tool_result(&events);
    assert!(is_error);
    assert!(output.contains("not today"), "{output}");
    assert_eq!(outcome(&events), ApprovalOutcome::Denied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_timeout_denies_and_a_late_answer_is_refused() {
    let (tickets, approvals) = holding();
    let approvals = approvals.with_timeout(Duration::from_millis(300));
    let (_, events) = run_with(approvals).await;
    let (output, is_error) = tool_result(&events);
    assert!(is_error, "{output}");
    assert!(output.contains("timeout"), "{output}");
    assert_eq!(outcome(&events), ApprovalOutcome::TimedOut);
    let ticket = tickets.lock().expect("tickets")[0].clone();
    assert_eq!(ticket.approve(), Err(AnswerError::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_closes_its_approval_request() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, _workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let (tickets, approvals) = holding();
    let sink = Arc::new(Watch::default());
    let run = tokio::spawn({
        let sink = Arc::clone(&sink);
        let request = tool_request(approvals);
        async move { driver.run(request, sink).await }
    });
    let ticket = first_ticket(&tickets).await;
    assert!(ticket.is_open());
    run.abort();
    let _ = run.await;
    for _ in 0..100 {
        if !ticket.is_open() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ticket.approve(), Err(AnswerError::Closed));
}
