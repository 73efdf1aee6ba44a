//! The checks every runtime's first-hour test makes of its first run's events.

use agent::tools::{EVENT_ARGUMENTS, EVENT_RESULT, EVENT_STARTED, SERVICE_ID};
use agent::{Action, ApprovalOutcome, ThreadEvent, ThreadEventKind};

/// The hosted `lookup_order` tool's handler ran with the model's arguments within the run:
/// its started, arguments and result events, in order, with `#42 shipped`.
pub(crate) fn assert_the_tool_ran(events: &[ThreadEvent]) {
    let tool_events: Vec<(&str, &serde_json::Value)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ServiceEvent {
                service_id,
                name,
                data,
            } if service_id == SERVICE_ID => Some((name.as_str(), data)),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = tool_events.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [EVENT_STARTED, EVENT_ARGUMENTS, EVENT_RESULT],
        "{tool_events:?}"
    );
    let (arguments, result) = (tool_events[1].1, tool_events[2].1);
    assert_eq!(arguments["tool"], "lookup_order", "{arguments}");
    assert_eq!(arguments["arguments"], serde_json::json!({"id": "42"}));
    assert_eq!(result["output"], "#42 shipped", "{result}");
}

/// The approval handler was asked about each write: it denied the one outside the workspace,
/// then approved the one inside.
pub(crate) fn assert_denied_then_approved(events: &[ThreadEvent]) {
    let asked: Vec<(Action, Option<ApprovalOutcome>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ApprovalRequested { action, .. } => Some((*action, None)),
            ThreadEventKind::ApprovalResolved { outcome, .. } => {
                Some((Action::Write, Some(*outcome)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            (Action::Write, None),
            (Action::Write, Some(ApprovalOutcome::Denied)),
            (Action::Write, None),
            (Action::Write, Some(ApprovalOutcome::Approved))
        ],
        "{:?}",
        events
    );
}
