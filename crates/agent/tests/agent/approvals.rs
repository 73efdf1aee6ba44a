//! Permissions and tool approvals through the agent (issue 27), on the reference driver:
//! approve, deny, answer, timeout, duplicate, after cancellation; events in order; canary
//! secrets never reach the handler or the events in clear; the policy is part of the
//! Thread's compatibility fingerprint; a policy that asks needs a driver that declares
//! approvals.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, RunResult, SessionOutcome, ThreadError, ThreadEventKind};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use driver_spi::{Action, AnswerError, ApprovalTicket, Approvals, PermissionPolicy, Unsupported};
use run_service::EnvBinding;
use test_support::host::Reshaped;
use thread_store::memory::MemoryStore;

const CANARY: &str = "approval-canary-7c1d9e4b";

/// The tickets a handler received.
type Seen = Arc<Mutex<Vec<ApprovalTicket>>>;

fn handler(answer: impl Fn(&ApprovalTicket) + Send + Sync + 'static) -> (Approvals, Seen) {
    let seen = Seen::default();
    let kept = seen.clone();
    let approvals = Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        answer(&ticket);
        kept.lock().unwrap().push(ticket);
    }));
    (approvals, seen)
}

fn use_tool(backend: &ReferenceBackend) {
    backend.push_behavior(Behavior::UseTool {
        action: Action::Write,
        tool: "write_file".into(),
        arguments: format!(r#"{{"path":"notes.txt","token":"{CANARY}"}}"#),
    });
}

fn agent(backend: &ReferenceBackend, policy: PermissionPolicy, approvals: Approvals) -> Agent {
    Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()))
        .secret_env(EnvBinding::new("HOST_TOKEN", CANARY))
        .permissions(policy)
        .approvals(approvals)
        .build()
        .unwrap()
}

/// One run of Thread `t` in which the reference runtime uses `write_file`.
async fn write_turn(
    policy: PermissionPolicy,
    approvals: Approvals,
) -> (ReferenceBackend, RunResult) {
    let backend = ReferenceBackend::new();
    use_tool(&backend);
    let result = agent(&backend, policy, approvals)
        .thread("t")
        .run("write")
        .await
        .unwrap();
    (backend, result)
}

fn ask_write() -> PermissionPolicy {
    PermissionPolicy::default().ask(Action::Write)
}

/// The approval and tool-result events of a run, in order, as short labels.
fn approval_trace(events: &[agent::ThreadEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ToolCallStarted { name, .. } => Some(format!("started {name}")),
            ThreadEventKind::ApprovalRequested { action, tool, .. } => {
                Some(format!("requested {} {tool}", action.as_str()))
            }
            ThreadEventKind::ApprovalResolved { outcome, .. } => {
                Some(format!("resolved {outcome:?}"))
            }
            ThreadEventKind::ToolCallResult { is_error, .. } => {
                Some(format!("result error={is_error}"))
            }
            _ => None,
        })
        .collect()
}

fn tool_output(events: &[agent::ThreadEvent]) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            ThreadEventKind::ToolCallResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn approved_runs_the_tool_and_the_events_come_in_order() {
    let (approvals, seen) = handler(|t| t.approve().unwrap());
    let (backend, result) = write_turn(ask_write(), approvals).await;
    assert_eq!(backend.performed(), ["write_file"]);
    assert_eq!(
        approval_trace(&result.events),
        [
            "started write_file",
            "requested write write_file",
            "resolved Approved",
            "result error=false"
        ]
    );
    let tickets = seen.lock().unwrap();
    let request = tickets[0].request();
    assert_eq!(request.thread.as_deref(), Some("t"));
    assert_eq!(request.call_id.as_deref(), Some("call-1"));
    assert_eq!(request.action, Action::Write);
    assert!(request.arguments.contains("notes.txt"));
}

#[tokio::test]
async fn denied_never_runs_and_the_runtime_sees_the_reason() {
    let (approvals, _) = handler(|t| t.deny("not in this workspace").unwrap());
    let (backend, result) = write_turn(ask_write(), approvals).await;
    assert!(backend.performed().is_empty());
    assert_eq!(
        approval_trace(&result.events)[1..],
        [
            "requested write write_file",
            "resolved Denied",
            "result error=true"
        ]
    );
    assert!(tool_output(&result.events).contains("not in this workspace"));
}

#[tokio::test]
async fn an_answer_stands_in_for_the_tool() {
    let (approvals, _) = handler(|t| t.answer("pretend it is written").unwrap());
    let (backend, result) = write_turn(ask_write(), approvals).await;
    assert!(backend.performed().is_empty());
    assert_eq!(tool_output(&result.events), "pretend it is written");
    assert!(
        approval_trace(&result.events).contains(&"resolved Answered".to_owned()),
        "{:?}",
        approval_trace(&result.events)
    );
}

#[tokio::test]
async fn no_answer_before_the_timeout_is_a_denial_and_a_late_answer_is_refused() {
    let (approvals, seen) = handler(|_| {});
    let approvals = approvals.with_timeout(Duration::from_millis(200));
    let (backend, result) = write_turn(ask_write(), approvals).await;
    assert!(backend.performed().is_empty());
    assert!(approval_trace(&result.events).contains(&"resolved TimedOut".to_owned()));
    let late = seen.lock().unwrap()[0].approve();
    assert_eq!(late, Err(AnswerError::Closed));
}

#[tokio::test]
async fn a_second_answer_is_refused_and_the_first_stands() {
    let backend = ReferenceBackend::new();
    use_tool(&backend);
    let answers = Arc::new(Mutex::new(Vec::new()));
    let kept = answers.clone();
    let (approvals, _) = handler(move |t| {
        let mut a = kept.lock().unwrap();
        a.push(t.deny("first"));
        a.push(t.approve());
    });
    agent(&backend, ask_write(), approvals)
        .thread("t")
        .run("write")
        .await
        .unwrap();
    assert_eq!(
        *answers.lock().unwrap(),
        [Ok(()), Err(AnswerError::AlreadyAnswered)]
    );
    assert!(backend.performed().is_empty(), "the denial stands");
}

#[tokio::test]
async fn an_answer_after_cancellation_is_refused_and_nothing_runs() {
    let backend = ReferenceBackend::new();
    use_tool(&backend);
    let (approvals, seen) = handler(|_| {});
    let agent = agent(&backend, ask_write(), approvals);
    let mut stream = agent.thread("t").stream("write").unwrap();
    while let Some(event) = stream.next_event().await {
        if matches!(event.kind, ThreadEventKind::ApprovalRequested { .. }) {
            break;
        }
    }
    stream.cancel();
    let outcome = stream.result().await;
    assert!(
        matches!(outcome, Err(ThreadError::Cancelled)),
        "{outcome:?}"
    );
    let ticket = seen.lock().unwrap()[0].clone();
    // The run's future is dropped shortly after the cancel: wait for the ticket to close.
    for _ in 0..100 {
        if !ticket.is_open() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ticket.approve(), Err(AnswerError::Closed));
    assert!(backend.performed().is_empty());
}

#[tokio::test]
async fn canary_secrets_never_reach_the_handler_or_the_events() {
    let (approvals, seen) = handler(|t| t.approve().unwrap());
    let (_, result) = write_turn(ask_write(), approvals).await;
    let request = seen.lock().unwrap()[0].request().clone();
    assert!(!format!("{request:?}").contains(CANARY));
    assert!(
        request.arguments.contains("[REDACTED]"),
        "{}",
        request.arguments
    );
    let events = serde_json::to_string(&result.events).unwrap();
    assert!(!events.contains(CANARY));
    assert!(events.contains("approval_requested"));
}

#[tokio::test]
async fn without_a_handler_every_request_is_denied() {
    let backend = ReferenceBackend::new();
    use_tool(&backend);
    let result = agent(&backend, ask_write(), Approvals::none())
        .thread("t")
        .run("write")
        .await
        .unwrap();
    assert!(backend.performed().is_empty());
    assert!(approval_trace(&result.events).contains(&"resolved Unanswered".to_owned()));
}

#[tokio::test]
async fn the_policy_decides_without_asking_when_it_allows_or_denies() {
    for (permission, ran) in [
        (PermissionPolicy::default().allow(Action::Write), true),
        (PermissionPolicy::default(), false),
    ] {
        let backend = ReferenceBackend::new();
        use_tool(&backend);
        let (approvals, seen) = handler(|t| t.approve().unwrap());
        let result = agent(&backend, permission, approvals)
            .thread("t")
            .run("write")
            .await
            .unwrap();
        assert!(seen.lock().unwrap().is_empty(), "{permission}: no request");
        assert_eq!(!backend.performed().is_empty(), ran, "{permission}");
        assert!(
            !approval_trace(&result.events)
                .iter()
                .any(|l| l.starts_with("requested"))
        );
    }
}

#[tokio::test]
async fn a_thread_handle_overrides_the_agents_policy_and_handler() {
    let backend = ReferenceBackend::new();
    use_tool(&backend);
    let (denying, _) = handler(|t| t.deny("agent says no").unwrap());
    let (approving, seen) = handler(|t| t.approve().unwrap());
    let agent = agent(&backend, PermissionPolicy::default(), denying);
    agent
        .thread("t")
        .with_permissions(ask_write())
        .with_approvals(approving)
        .run("write")
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(backend.performed(), ["write_file"]);
    assert_eq!(agent.thread("t").permissions(), PermissionPolicy::default());
}

/// The policy is part of the compatibility fingerprint: a resume-only run under a wider
/// policy refuses before the driver runs, naming `permissions`; the same policy resumes.
#[tokio::test]
async fn a_wider_policy_is_a_semantic_change() {
    let backend = ReferenceBackend::new();
    let store = Arc::new(MemoryStore::new());
    let build = |policy: PermissionPolicy| {
        Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
            .store(store.clone())
            .permissions(policy)
            .build()
            .unwrap()
    };
    let first = build(PermissionPolicy::default())
        .thread("t")
        .run("hi")
        .await
        .unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    let again = build(PermissionPolicy::default())
        .thread("t")
        .resume_only()
        .run("again")
        .await
        .unwrap();
    assert_eq!(again.session, SessionOutcome::Resumed);
    let runs = backend.request_count();
    let wider = build(PermissionPolicy::default().allow(Action::Write))
        .thread("t")
        .resume_only()
        .run("write now")
        .await;
    let Err(ThreadError::Incompatible {
        incompatibility, ..
    }) = &wider
    else {
        panic!("expected Incompatible, got {wider:?}");
    };
    let changed: Vec<&str> = incompatibility
        .changes()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(changed, ["permissions"]);
    assert_eq!(backend.request_count(), runs, "the driver did not run");
}

/// A driver that does not declare approvals refuses a policy that asks, before it runs.
#[tokio::test]
async fn asking_needs_a_driver_that_declares_approvals() {
    let backend = ReferenceBackend::new();
    let no_approvals = Reshaped::new(&backend, |mut d| {
        d.capabilities.approvals = false;
        d
    });
    let agent = Agent::builder(no_approvals)
        .store(Arc::new(MemoryStore::new()))
        .permissions(ask_write())
        .build()
        .unwrap();
    let refused = agent.thread("t").run("write").await;
    assert!(
        matches!(
            refused,
            Err(ThreadError::Unsupported(Unsupported::Approvals))
        ),
        "{refused:?}"
    );
    assert_eq!(backend.request_count(), 0);
}
