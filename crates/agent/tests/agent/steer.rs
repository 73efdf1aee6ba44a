//! Steering a running turn through the agent (issue 43), on the reference driver: a
//! follow-up reaches the running turn, its event is redacted while the runtime's answer is
//! part of the one turn that finalizes; steering with no run, an empty text, a driver that
//! cannot, a turn that never takes it, or one that ends first is a typed error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, SteerError, ThreadEventKind};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use driver_spi::{Action, ApprovalTicket, Approvals, PermissionPolicy};
use run_service::EnvBinding;
use test_support::host::Reshaped;
use thread_store::memory::MemoryStore;

const CANARY: &str = "steer-canary-3f9a0c71";
const BOUND: Duration = Duration::from_secs(10);

fn agent(driver: Arc<dyn agent::Driver>) -> Agent {
    Agent::builder(driver)
        .store(Arc::new(MemoryStore::new()))
        .secret_env(EnvBinding::new("HOST_TOKEN", CANARY))
        .build()
        .unwrap()
}

fn follow_ups(events: &[agent::ThreadEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::FollowUp { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_follow_up_joins_the_running_turn_redacted_and_the_turn_persists_once() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::Stall);
    let agent = agent(Arc::new(ReferenceDriver::with_backend(backend.clone())));
    let thread = agent.thread("t");
    let stream = thread.stream("fix the parser").unwrap();
    backend.wait_for_stalled(1).await;

    let text = format!("also rotate {CANARY}");
    assert_eq!(thread.steer(&text, BOUND).await, Ok(()));
    assert_eq!(thread.steer("and add a test", BOUND).await, Ok(()));
    backend.release_stalled();
    let result = stream.result().await.unwrap();

    // The runtime took both into the same turn: its answer names them, redacted as output.
    assert!(
        result
            .output
            .ends_with("[follow-up: also rotate [REDACTED] | and add a test]"),
        "{}",
        result.output
    );
    assert_eq!(
        follow_ups(&result.events),
        ["also rotate [REDACTED]", "and add a test"]
    );
    let shown = serde_json::to_string(&result.events).unwrap();
    assert!(!shown.contains(CANARY), "{shown}");
    // One turn, one checkpoint.
    let checkpoint = thread.checkpoint().await.unwrap().expect("persisted");
    assert_eq!(
        backend.session_turns(&checkpoint.resume_id).unwrap(),
        Some(1)
    );
    assert_eq!(result.record_id, Some(checkpoint.record_id));
    // The run is over: nothing to steer.
    assert_eq!(thread.steer("late", BOUND).await, Err(SteerError::NoTurn));
}

#[tokio::test]
async fn steering_without_a_turn_or_text_or_on_a_driver_that_cannot_is_refused_typed() {
    let backend = ReferenceBackend::new();
    let steering = agent(Arc::new(ReferenceDriver::with_backend(backend.clone())));
    let thread = steering.thread("t");
    assert_eq!(thread.steer("hello", BOUND).await, Err(SteerError::NoTurn));
    assert_eq!(thread.steer(" \n", BOUND).await, Err(SteerError::Empty));

    // A driver that does not declare steering: refused at once, running turn or not.
    let cannot = agent(Reshaped::new(&backend, |d| {
        let capabilities = d.capabilities.clone().with_steer(false);
        d.with_capabilities(capabilities)
    }));
    backend.push_behavior(Behavior::Stall);
    let thread = cannot.thread("t");
    let stream = thread.stream("work").unwrap();
    backend.wait_for_stalled(1).await;
    assert_eq!(
        thread.steer("go left", BOUND).await,
        Err(SteerError::Unsupported)
    );
    backend.release_stalled();
    let result = stream.result().await.unwrap();
    assert!(follow_ups(&result.events).is_empty());
    assert!(!result.output.contains("follow-up"));

    // Another agent's run of the same Thread is not this agent's to steer.
    backend.push_behavior(Behavior::Stall);
    let stream = steering.thread("shared").stream("work").unwrap();
    backend.wait_for_stalled(1).await;
    let other = agent(Arc::new(ReferenceDriver::with_backend(backend.clone())));
    assert_eq!(
        other.thread("shared").steer("mine?", BOUND).await,
        Err(SteerError::NoTurn)
    );
    backend.release_stalled();
    stream.result().await.unwrap();
}

/// A turn waiting on the host's approval does not take follow-ups (the reference runtime
/// takes them only while it works): one the host stops waiting for times out, one it keeps
/// waiting for is refused when the turn ends, and neither reaches the turn.
#[tokio::test]
async fn a_follow_up_the_turn_never_takes_times_out_or_ends_with_the_turn() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::UseTool {
        action: Action::Write,
        tool: "write_file".into(),
        arguments: "{}".into(),
    });
    let tickets: Arc<Mutex<Vec<ApprovalTicket>>> = Arc::default();
    let kept = tickets.clone();
    let approvals = Approvals::new(Arc::new(move |t: ApprovalTicket| {
        kept.lock().unwrap().push(t);
    }));
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()))
        .permissions(PermissionPolicy::default().ask(Action::Write))
        .approvals(approvals)
        .build()
        .unwrap();
    let thread = agent.thread("t");
    let mut stream = thread.stream("write it").unwrap();
    while tickets.lock().unwrap().is_empty() {
        stream
            .next_event()
            .await
            .expect("the run asks before it ends");
    }
    let short = Duration::from_millis(50);
    assert_eq!(
        thread.steer("hurry", short).await,
        Err(SteerError::TimedOut { after: short })
    );
    let waiting = tokio::spawn({
        let thread = thread.clone();
        async move { thread.steer("still there?", BOUND).await }
    });
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    tickets.lock().unwrap()[0].approve().unwrap();
    let result = stream.result().await.unwrap();
    assert_eq!(waiting.await.unwrap(), Err(SteerError::TurnEnded));
    assert!(follow_ups(&result.events).is_empty());
}
