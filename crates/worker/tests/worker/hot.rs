//! Hot Threads through a worker: a pre-warm whose process the next run takes, a follow-up
//! into a running turn, which conversations the worker's resident processes hold, and an
//! agent's sticky lease kept exactly as long as they hold its Thread, on the
//! real `agent-worker` with Claude Code's resident fake (whose answers name the process that
//! served them: `pid <pid> turn <n>`) and the reference runtime.

use std::sync::Arc;
use std::time::Duration;

use agent::{Agent, SteerError, ThreadEventKind};
use driver_cli::CommonOptions as _;
use driver_spi::{
    CollectingSink, Driver, ProcessLifecycle as _, Request, SessionContext, Unsupported,
};
use fake_cli::Harness;
use run_service::RunId;
use worker::{WorkerDriver, Workers};

use crate::cli_conformance::registry_config;
use crate::cli_fakes;
use crate::support::{driver_on, kill, profile, reference, workers};

/// A worker driver of Claude Code's resident fake, its harness and its pool.
fn resident_claude() -> (WorkerDriver, Harness, Arc<Workers>) {
    let scenario = cli_test_kit::stream_json::resident(&[]);
    let fake = cli_fakes::claude_code::fake_claude(scenario, &[]);
    let options = fake
        .options()
        .with_process_mode(cli_test_kit::process_mode(true));
    let harness = fake.into_harness();
    let config = registry_config(&harness, &options);
    let workers = workers();
    let driver = WorkerDriver::new(Arc::clone(&workers), Arc::clone(&harness.env), config)
        .expect("a worker driver of the resident fake");
    (driver, harness, workers)
}

fn request(harness: &Harness, run: &str, session: SessionContext) -> Request {
    Request::new(RunId::new(run), "hello", profile())
        .with_session(session)
        .with_workspace(harness.workspace.to_string_lossy())
}

/// The pids of the fake CLI processes started so far (its `--version` probes aside).
fn cli_pids(harness: &Harness) -> Vec<u32> {
    fake_cli::read_invocations(&harness.record)
        .expect("the record")
        .iter()
        .filter(|call| call.argv != ["--version"])
        .map(|call| call.pid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prewarm_through_the_worker_leaves_the_process_the_next_run_takes() {
    let (driver, harness, workers) = resident_claude();
    let caps = driver.descriptor().capabilities;
    assert!(
        caps.prewarm && caps.steer,
        "the wrapped driver's, passed through"
    );

    let warm = driver
        .prewarm(request(&harness, "r1", SessionContext::start()))
        .await
        .expect("pre-warmed in the worker");
    let ticket = warm.ticket.expect("a new session's ticket");
    let warmed = cli_pids(&harness);
    assert_eq!(warmed.len(), 1, "the pre-warm started the CLI: {warmed:?}");

    let sink = Arc::new(CollectingSink::new());
    let response = driver
        .run(
            request(&harness, "r1", SessionContext::start()).with_prewarmed(ticket),
            sink,
        )
        .await
        .expect("a clean turn");
    // The fake counts the pre-warm's warm-up line as its first.
    let served_by = format!("pid {} turn ", warmed[0]);
    assert!(
        response.output.starts_with(&served_by),
        "{}",
        response.output
    );
    assert_eq!(cli_pids(&harness), warmed, "no second CLI was started");
    driver.close_processes().await.expect("closed");
    workers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prewarm_the_wrapped_driver_does_not_declare_starts_no_worker() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = workers();
    let driver = driver_on(base.path(), reference(base.path(), &[]), &workers);
    assert!(!driver.descriptor().capabilities.prewarm);
    let request = Request::new(RunId::new("r1"), "hello", profile());
    let refused = driver.prewarm(request).await;
    assert_eq!(refused, Err(Unsupported::Prewarm.into()));
    assert_eq!(workers.live(), 0);
}

/// A clean resident turn of a new session on `driver`: its conversation.
async fn new_session_turn(driver: &WorkerDriver, harness: &Harness, run: &str) -> String {
    let response = driver
        .run(
            request(harness, run, SessionContext::start()),
            Arc::new(CollectingSink::new()),
        )
        .await
        .expect("a clean turn");
    response.checkpoint.expect("a checkpoint").state.resume_id
}

/// Waits (bounded) until `session` is no longer held, each look after a change.
async fn until_released(
    lifecycle: &dyn driver_spi::ProcessLifecycle,
    changes: &mut tokio::sync::watch::Receiver<u64>,
    session: &str,
) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while lifecycle.holds_conversation(session) {
            changes.changed().await.expect("the sender lives");
        }
    })
    .await
    .expect("released, with changes() fired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_is_held_after_a_resident_turn_until_its_process_ends() {
    let (driver, harness, workers) = resident_claude();
    let lifecycle = driver.process_lifecycle().expect("a worker is a process");
    let mut changes = lifecycle.changes().expect("the worker reports changes");

    // The CLI dies idle inside the worker: the look-up that still says "held" asks again.
    let session = new_session_turn(&driver, &harness, "r1").await;
    assert!(lifecycle.holds_conversation(&session));
    assert!(!lifecycle.holds_conversation("another-session"));
    let cli = *cli_pids(&harness).last().expect("a CLI");
    kill(cli).await;
    until_released(lifecycle, &mut changes, &session).await;

    // Closing the driver's processes ends the worker and what it held.
    let session = new_session_turn(&driver, &harness, "r2").await;
    assert!(lifecycle.holds_conversation(&session));
    changes.borrow_and_update();
    lifecycle.close_processes().await.expect("closed");
    assert!(!lifecycle.holds_conversation(&session));
    assert!(
        changes.has_changed().expect("the sender lives"),
        "changes() fired"
    );

    // A worker that dies holds nothing either.
    let session = new_session_turn(&driver, &harness, "r3").await;
    assert!(lifecycle.holds_conversation(&session));
    changes.borrow_and_update();
    let worker = workers.worker_pid(harness.env.namespace());
    kill(worker.expect("a worker")).await;
    until_released(lifecycle, &mut changes, &session).await;
    workers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_through_the_worker_reaches_the_running_turn_and_is_acknowledged() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = workers();
    let driver = Arc::new(driver_on(
        base.path(),
        reference(base.path(), &["stall"]),
        &workers,
    ));
    let agent = Agent::builder(Arc::clone(&driver) as Arc<dyn Driver>)
        .store(Arc::new(thread_store::memory::MemoryStore::new()))
        .build()
        .expect("an agent");
    let thread = agent.thread("support/steer");
    let stream = thread.stream("fix the bug").expect("a stream");
    let second = Duration::from_secs(1);
    let acknowledged = loop {
        match thread.steer("only in src/", Duration::from_secs(10)).await {
            Err(SteerError::NoTurn) => tokio::time::sleep(second / 50).await,
            answer => break answer,
        }
    };
    assert_eq!(acknowledged, Ok(()));
    driver.release_stalled().await.expect("released");
    let result = stream.result().await.expect("the turn");
    assert!(
        result.output.ends_with("[follow-up: only in src/]"),
        "{}",
        result.output
    );
    let follow_ups = result
        .events
        .iter()
        .filter(|e| matches!(&e.kind, ThreadEventKind::FollowUp { text } if text == "only in src/"))
        .count();
    assert_eq!(
        follow_ups, 1,
        "one event, the worker's, not repeated by the host"
    );
    assert_eq!(
        thread.steer("too late", second).await,
        Err(SteerError::NoTurn)
    );
    agent.close().await;
    workers.close().await;
}

/// Who holds Thread `key`'s lease in `store` now.
async fn lease_holder(store: &dyn thread_store::ThreadStore, key: &str) -> Option<String> {
    let target = format!("{}{key}", agent::THREAD_LEASE_PREFIX);
    let holder = store
        .lease_holder(&target)
        .await
        .expect("the store answers");
    holder.map(|h| h.owner)
}

/// Waits (bounded) until Thread `key`'s lease is free: the release runs on the agent's
/// renewal task.
async fn until_free(store: &dyn thread_store::ThreadStore, key: &str) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while lease_holder(store, key).await.is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the sticky lease was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticky_lease_is_kept_while_the_worker_holds_the_thread_and_released_after() {
    let (driver, harness, workers) = resident_claude();
    let driver = Arc::new(driver);
    let store = Arc::new(thread_store::memory::MemoryStore::new());
    let agent = Agent::builder(Arc::clone(&driver) as Arc<dyn Driver>)
        .store(store.clone())
        .workspace(harness.workspace.to_string_lossy())
        .sticky_leases(true)
        .lease_ttl(Duration::from_secs(3))
        .build()
        .expect("an agent");
    let thread = agent.thread("chat");

    thread.run("first").await.expect("a first turn");
    assert!(lease_holder(&*store, "chat").await.is_some(), "kept");
    // The CLI dies idle inside the worker: the agent's next sweep sees it go.
    kill(*cli_pids(&harness).last().expect("a CLI")).await;
    until_free(&*store, "chat").await;

    thread.run("second").await.expect("a second turn");
    assert!(lease_holder(&*store, "chat").await.is_some(), "kept again");
    driver.close_processes().await.expect("closed");
    until_free(&*store, "chat").await;
    agent.close().await;
    workers.close().await;
}
