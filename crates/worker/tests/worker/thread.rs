//! A session, and a Thread, on the reference runtime through the worker: it runs, and after
//! the worker is killed, resumes on a new worker from the stored session.

use std::sync::Arc;

use agent::{Agent, SessionOutcome, ThreadError};
use driver_spi::reference::ReferenceDriver;
use driver_spi::{Driver, FailureKind, PermissionPolicy, Request, SessionContext, check_sequence};
use run_service::RunId;

use crate::support::{
    Watch, first_ticket, holding, kill, namespace, profile, reference, turn_kill_resume,
    worker_driver,
};

#[tokio::test]
async fn a_session_resumes_on_a_new_worker_after_the_worker_is_killed() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let sink = Arc::new(Watch::default());
    let (first, second) =
        turn_kill_resume(&driver, &workers, sink.clone(), ["hello", "again"]).await;
    assert_eq!(first.output, "reference turn 1: hello");
    assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
    assert_eq!(
        second.persistable_checkpoint().map(|s| s.resume_id.clone()),
        first.persistable_checkpoint().map(|s| s.resume_id.clone())
    );
    // Each run's events, split at its start, follow the event order.
    let events = sink.events();
    let second_start = events
        .iter()
        .rposition(|e| *e == driver_spi::DriverEvent::RunStarted)
        .expect("two runs");
    assert_eq!(check_sequence(&events[..second_start]), Ok(()));
    assert_eq!(check_sequence(&events[second_start..]), Ok(()));
}

#[tokio::test]
async fn the_host_side_is_the_same_configuration_as_in_process() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, _workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let env = runtime_env::RuntimeEnv::builder(base.path().join("env"), namespace(), base.path());
    let in_process: ReferenceDriver = reference_runtime::driver(env).expect("in process");
    // Steering (and pre-warm, where declared) pass through the worker (issue 43).
    let expected = in_process.descriptor();
    assert!(expected.capabilities.steer);
    assert_eq!(driver.descriptor(), expected);
    assert_eq!(
        driver
            .config_fingerprinter()
            .map(|f| f.config_fingerprint()),
        in_process
            .config_fingerprinter()
            .map(|f| f.config_fingerprint())
    );
    assert_eq!(
        driver.credential_namespace(),
        in_process.credential_namespace()
    );
    // A session started in process resumes through the worker.
    let sink = Arc::new(Watch::default());
    let first = in_process
        .run(
            Request::new(RunId::new("r1"), "hello", profile()),
            sink.clone(),
        )
        .await
        .expect("in process");
    let state = first.persistable_checkpoint().expect("resumable").clone();
    let codec = driver.session_codec().expect("a codec");
    let theirs = in_process.session_codec().expect("a codec");
    assert_eq!(codec.name(), theirs.name());
    let params = codec
        .to_params(Some(&state))
        .expect("encodes")
        .expect("params");
    assert_eq!(
        theirs.to_params(Some(&state)).ok().flatten().as_ref(),
        Some(&params)
    );
    assert_eq!(
        codec.guard_fingerprint(&params),
        theirs.guard_fingerprint(&params)
    );
    let resumed = Request::new(RunId::new("r2"), "again", profile())
        .with_session(SessionContext::continue_only(state));
    let second = driver.run(resumed, sink).await.expect("through the worker");
    assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_through_the_worker_persists_nothing_of_a_lost_run_and_resumes_on_a_new_worker() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let store = Arc::new(thread_store::memory::MemoryStore::new());
    let agent = Agent::builder(Arc::new(driver))
        .store(store)
        .model("model-1")
        .build()
        .expect("an agent");
    let first = agent
        .thread("support/1")
        .run("hello")
        .await
        .expect("a first turn");
    assert_eq!(first.session, SessionOutcome::Started);
    let stored = agent.thread("support/1").checkpoint().await.expect("read");
    assert!(stored.is_some());
    let pid = workers.worker_pid(&namespace()).expect("a worker");

    // A turn whose worker dies while a tool waits for approval.
    let (tickets, approvals) = holding();
    let policy: PermissionPolicy = "write=ask".parse().expect("a policy");
    let lost = tokio::spawn({
        let thread = agent
            .thread("support/1")
            .with_permissions(policy)
            .with_approvals(approvals);
        async move { thread.run("/tool write Write notes.txt").await }
    });
    first_ticket(&tickets).await;
    kill(pid).await;
    let failed = lost.await.expect("joined");
    assert!(
        matches!(
            failed,
            Err(ThreadError::Driver {
                kind: FailureKind::Process,
                retryable: Some(false),
                ..
            })
        ),
        "{failed:?}"
    );
    let after = agent.thread("support/1").checkpoint().await.expect("read");
    assert_eq!(after, stored, "nothing of the lost run was persisted");

    let again = agent
        .thread("support/1")
        .resume_only()
        .run("again")
        .await
        .expect("resumed on a new worker");
    assert_eq!(again.session, SessionOutcome::Resumed);
    assert!(again.output.contains("earlier: "), "{}", again.output);
    assert_ne!(workers.worker_pid(&namespace()), Some(pid));
    agent.close().await;
}
