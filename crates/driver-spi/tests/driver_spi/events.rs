//! The event order rules ([`check_sequence`]) and the collecting sink.

use driver_spi::{
    CollectingSink, DriverEvent, EventSink, FailureKind, PlanEntry, PlanPriority, PlanStatus,
    SequenceError, SequenceRule, check_sequence,
};

use DriverEvent::{RunFinished, RunStarted};

fn tool(id: &str) -> [DriverEvent; 3] {
    [
        DriverEvent::tool_call_started(id, "lookup"),
        DriverEvent::tool_call_arguments(id, "{}"),
        DriverEvent::tool_call_result(id, "found", false),
    ]
}

#[test]
fn well_formed_sequences_pass() {
    let mut events = vec![RunStarted, DriverEvent::text("a")];
    events.extend(tool("c1"));
    events.extend([DriverEvent::text("b"), RunFinished]);
    assert_eq!(check_sequence(&events), Ok(()));

    // A failed run may leave a tool call open.
    let failed = [
        RunStarted,
        DriverEvent::tool_call_started("c1", "lookup"),
        DriverEvent::RunFailed {
            kind: FailureKind::Process,
        },
    ];
    assert_eq!(check_sequence(&failed), Ok(()));
}

/// Reasoning and plans go wherever text goes: between the start and the terminal event,
/// around tool calls, a plan as often as the agent revises it.
#[test]
fn reasoning_and_plans_go_where_text_goes() {
    let plan =
        |status| DriverEvent::plan([PlanEntry::new("look it up", status, PlanPriority::High)]);
    let mut events = vec![
        RunStarted,
        DriverEvent::reasoning("thinking"),
        plan(PlanStatus::Pending),
    ];
    events.extend(tool("c1"));
    events.extend([
        plan(PlanStatus::Completed),
        DriverEvent::reasoning("done"),
        DriverEvent::text("b"),
        DriverEvent::plan(Vec::new()),
        RunFinished,
    ]);
    assert_eq!(check_sequence(&events), Ok(()));

    let cases = [
        (
            vec![DriverEvent::reasoning("x"), RunStarted, RunFinished],
            SequenceError::StartNotFirst { index: 0 },
        ),
        (
            vec![RunStarted, RunFinished, plan(PlanStatus::InProgress)],
            SequenceError::AfterTerminal { index: 2 },
        ),
        (
            vec![RunStarted, RunFinished, DriverEvent::reasoning("late")],
            SequenceError::AfterTerminal { index: 2 },
        ),
        (
            vec![RunStarted, DriverEvent::reasoning(""), RunFinished],
            SequenceError::EmptyDelta { index: 1 },
        ),
    ];
    for (events, error) in cases {
        assert_eq!(check_sequence(&events), Err(error), "{events:?}");
    }
    assert!(!DriverEvent::reasoning("x").is_terminal());
    assert!(!DriverEvent::plan(Vec::new()).is_terminal());
}

#[test]
fn every_violation_is_named_with_its_rule() {
    let cases: Vec<(Vec<DriverEvent>, SequenceError, SequenceRule)> = vec![
        (vec![], SequenceError::MissingStart, SequenceRule::Start),
        (
            vec![DriverEvent::text("x"), RunStarted, RunFinished],
            SequenceError::StartNotFirst { index: 0 },
            SequenceRule::Start,
        ),
        (
            vec![RunStarted, RunStarted, RunFinished],
            SequenceError::DuplicateStart { index: 1 },
            SequenceRule::Start,
        ),
        (
            vec![RunStarted, DriverEvent::text("x")],
            SequenceError::MissingTerminal,
            SequenceRule::Terminal,
        ),
        (
            vec![RunStarted, RunFinished, RunFinished],
            SequenceError::DuplicateTerminal { index: 2 },
            SequenceRule::Terminal,
        ),
        (
            vec![RunStarted, RunFinished, DriverEvent::text("late")],
            SequenceError::AfterTerminal { index: 2 },
            SequenceRule::AfterTerminal,
        ),
        (
            vec![RunStarted, DriverEvent::text(""), RunFinished],
            SequenceError::EmptyDelta { index: 1 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_started("c1", "t"),
                DriverEvent::tool_call_arguments("c1", ""),
                RunFinished,
            ],
            SequenceError::EmptyDelta { index: 2 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_started("", "t"),
                RunFinished,
            ],
            SequenceError::BadToolCallId { index: 1 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_started("c1", "t"),
                DriverEvent::tool_call_result("c1", "r", false),
                DriverEvent::tool_call_started("c1", "t"),
                RunFinished,
            ],
            SequenceError::BadToolCallId { index: 3 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_arguments("ghost", "{}"),
                RunFinished,
            ],
            SequenceError::ToolCallNotOpen { index: 1 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_started("c1", "t"),
                DriverEvent::tool_call_result("c1", "r", false),
                DriverEvent::tool_call_result("c1", "r", false),
                RunFinished,
            ],
            SequenceError::ToolCallNotOpen { index: 3 },
            SequenceRule::Lifecycle,
        ),
        (
            vec![
                RunStarted,
                DriverEvent::tool_call_started("c1", "t"),
                RunFinished,
            ],
            SequenceError::UnclosedToolCall { open: 1 },
            SequenceRule::Lifecycle,
        ),
    ];
    for (events, error, rule) in cases {
        assert_eq!(check_sequence(&events), Err(error.clone()), "{events:?}");
        assert_eq!(error.rule(), rule);
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn terminal_events_are_recognized() {
    assert!(RunFinished.is_terminal());
    assert!(
        DriverEvent::RunFailed {
            kind: FailureKind::Other
        }
        .is_terminal()
    );
    assert!(!RunStarted.is_terminal());
    assert!(!DriverEvent::text("x").is_terminal());
}

#[test]
fn events_serialize_with_a_type_tag_and_no_sequence_or_timestamp() {
    let json = serde_json::to_value(DriverEvent::tool_call_result("c1", "ok", true)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"type": "tool_call_result", "call_id": "c1", "output": "ok", "is_error": true})
    );
    let back: DriverEvent = serde_json::from_value(json).unwrap();
    assert_eq!(back, DriverEvent::tool_call_result("c1", "ok", true));
    assert_eq!(
        serde_json::to_value(RunStarted).unwrap(),
        serde_json::json!({"type": "run_started"})
    );
}

#[test]
fn reasoning_and_plans_serialize_in_snake_case_and_round_trip() {
    let reasoning = DriverEvent::reasoning("hmm");
    assert_eq!(
        serde_json::to_value(&reasoning).unwrap(),
        serde_json::json!({"type": "reasoning_delta", "delta": "hmm"})
    );
    let plan = DriverEvent::plan(vec![
        PlanEntry::new("read", PlanStatus::Completed, PlanPriority::High),
        PlanEntry::new("write", PlanStatus::InProgress, PlanPriority::Medium),
        PlanEntry::new("test", PlanStatus::Pending, PlanPriority::Low),
    ]);
    assert_eq!(
        serde_json::to_value(&plan).unwrap(),
        serde_json::json!({"type": "plan", "entries": [
            {"content": "read", "status": "completed", "priority": "high"},
            {"content": "write", "status": "in_progress", "priority": "medium"},
            {"content": "test", "status": "pending", "priority": "low"},
        ]})
    );
    for event in [reasoning, plan] {
        let back: DriverEvent =
            serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }
}

#[test]
fn collecting_sink_keeps_events_in_order() {
    let sink = CollectingSink::new();
    assert!(sink.is_empty());
    sink.emit(RunStarted);
    sink.emit(DriverEvent::text("hi"));
    assert_eq!(sink.len(), 2);
    assert_eq!(sink.events(), vec![RunStarted, DriverEvent::text("hi")]);
    assert_eq!(sink.take().len(), 2);
    assert!(sink.is_empty());
    // Object-safe.
    let dynamic: &dyn EventSink = &sink;
    dynamic.emit(RunFinished);
    assert_eq!(sink.events(), vec![RunFinished]);
}
