//! The app-server translator's tests: the notification sequences of
//! `docs/codex-app-server.md`, and the shared translator fuzz.

use super::*;
use crate::app_server::NOTIFICATIONS;
use crate::events::{EventTranslator, SHELL_TOOL, TOTAL_KEY, encode};
use driver_cli::Tracked;
use driver_cli::Translator;
use driver_spi::{Redactor, SessionState, check_sequence};
use secrecy::SecretString;
use serde_json::json;

/// A thread id.
const T: &str = "01a236dd-5f4b-7f63-85ec-be984dfd601c";
/// A turn id.
const U: &str = "01a236de-0000-7000-8000-000000000001";

/// A notification as the tests feed it: `params` with the method under `type`.
///
/// [`Tracked::translate`] takes the kind from a `type` field (and `CliEvent` has no public
/// constructor); app-server params have no top-level `type`, so it cannot clash.
fn note(method: &str, params: Value) -> Value {
    let mut params = params;
    if let Value::Object(map) = &mut params {
        map.insert("type".to_owned(), Value::from(method));
    }
    params
}

/// Translates `notes` as the driver does; each must be well formed.
fn run(notes: &[Value]) -> (Tracked<AppServerTranslator>, Vec<DriverEvent>) {
    cli_test_kit::translate_all(AppServerTranslator::default(), notes)
}

/// A §4 `thread/tokenUsage/updated` with these thread totals.
fn usage_note(input: u64, cached: u64, output: u64) -> Value {
    let breakdown = json!({"totalTokens": input + output, "inputTokens": input,
        "cachedInputTokens": cached, "cacheWriteInputTokens": 0, "outputTokens": output,
        "reasoningOutputTokens": 0});
    note(
        "thread/tokenUsage/updated",
        json!({"threadId": T, "turnId": U, "tokenUsage": {"total": breakdown,
            "last": breakdown, "modelContextWindow": 258_400}}),
    )
}

/// A `turn/completed` with this status and error.
fn completed(status: &str, error: Value) -> Value {
    note(
        "turn/completed",
        json!({"threadId": T, "turn": {"id": U, "items": [], "itemsView": "summary",
            "status": status, "error": error, "durationMs": 139}}),
    )
}

/// An `agentMessage` item `msg_0` in `phase` (`item/started` or `item/completed`).
fn agent_message(phase: &str, text: &str) -> Value {
    note(
        phase,
        json!({"item": {"type": "agentMessage", "id": "msg_0", "text": text, "phase": null},
            "threadId": T, "turnId": U}),
    )
}

/// A text delta of `msg_0`.
fn delta(text: &str) -> Value {
    note(
        "item/agentMessage/delta",
        json!({"threadId": T, "turnId": U, "itemId": "msg_0", "delta": text}),
    )
}

/// `events` as a clean run ends: open calls closed, then `RunFinished`.
fn finished(
    mut events: Vec<DriverEvent>,
    t: &mut Tracked<AppServerTranslator>,
) -> Vec<DriverEvent> {
    events.extend(t.close_open_calls());
    events.push(DriverEvent::RunFinished);
    events
}

/// The §4 text turn of `docs/codex-app-server.md`, deltas streamed.
#[test]
fn streamed_text_turn() {
    let user = json!({"type": "userMessage", "id": "5d1c", "content":
        [{"type": "text", "text": "stream please", "text_elements": []}]});
    let (mut t, events) = run(&[
        note(
            "thread/status/changed",
            json!({"threadId": T, "status": {"type": "active", "activeFlags": []}}),
        ),
        note(
            "turn/started",
            json!({"threadId": T, "turn": {"id": U, "status": "inProgress"}}),
        ),
        note(
            "item/started",
            json!({"item": user, "threadId": T, "turnId": U}),
        ),
        note(
            "item/completed",
            json!({"item": user, "threadId": T, "turnId": U, "contentTokenCount": null}),
        ),
        agent_message("item/started", ""),
        delta("Hel"),
        delta("lo "),
        delta("world"),
        agent_message("item/completed", "Hello world"),
        usage_note(10, 0, 5),
        note(
            "account/rateLimits/updated",
            json!({"rateLimits": {"limitId": "codex", "primary": null}}),
        ),
        note(
            "thread/status/changed",
            json!({"threadId": T, "status": {"type": "idle"}}),
        ),
        completed("completed", Value::Null),
    ]);
    assert_eq!(
        events,
        [
            DriverEvent::RunStarted,
            DriverEvent::text("Hel"),
            DriverEvent::text("lo "),
            DriverEvent::text("world"),
        ]
    );
    assert_eq!(t.output(), "Hello world");
    assert_eq!(t.session_id(), Some(T));
    assert!(t.succeeded() && t.turn_ended());
    assert_eq!(t.reported_failure(), None);
    assert_eq!(t.usage(), Some(Usage::new(10, 5)));
    let events = finished(events, &mut t);
    assert_eq!(check_sequence(&events), Ok(()), "{events:?}");
}

#[test]
fn a_message_without_deltas_is_one_text_event() {
    let (t, events) = run(&[
        note("turn/started", json!({"threadId": T, "turn": {"id": U}})),
        agent_message("item/started", "Hello world"),
        agent_message("item/completed", "Hello world"),
    ]);
    assert_eq!(
        events,
        [DriverEvent::RunStarted, DriverEvent::text("Hello world")]
    );
    assert_eq!(t.output(), "Hello world");
    assert!(!t.turn_ended() && !t.succeeded());
}

#[test]
fn the_first_item_starts_a_turn_whose_start_was_missed() {
    let (_, events) = run(&[delta("Hi")]);
    assert_eq!(events, [DriverEvent::RunStarted, DriverEvent::text("Hi")]);
}

#[test]
fn mcp_tool_calls_succeed_and_fail() {
    let call = |phase: &str, id: &str, extra: Value| {
        let mut item = json!({"type": "mcpToolCall", "id": id, "server": "tools",
            "tool": "echo", "arguments": {"text": "hi"}, "status": "inProgress"});
        if let (Value::Object(item), Value::Object(extra)) = (&mut item, extra) {
            item.extend(extra);
        }
        note(phase, json!({"item": item, "threadId": T, "turnId": U}))
    };
    let ok = json!({"status": "completed", "result": {"content":
        [{"type": "text", "text": "echo:{\"text\":\"hi\"}"}], "structuredContent": null,
        "_meta": null}});
    let refused = json!({"status": "failed", "error": {"message":
        "MCP tool call requires approval, but approval policy is never"}});
    let (mut t, events) = run(&[
        call("item/started", "call_0", json!({})),
        call("item/completed", "call_0", ok.clone()),
        call("item/completed", "call_0", ok),
        call("item/started", "call_1", json!({})),
        call("item/completed", "call_1", refused),
        completed("completed", Value::Null),
    ]);
    assert_eq!(
        events,
        [
            DriverEvent::RunStarted,
            DriverEvent::tool_call_started("call_0", "mcp__tools__echo"),
            DriverEvent::tool_call_arguments("call_0", r#"{"text":"hi"}"#),
            DriverEvent::tool_call_result("call_0", r#"echo:{"text":"hi"}"#, false),
            DriverEvent::tool_call_started("call_1", "mcp__tools__echo"),
            DriverEvent::tool_call_arguments("call_1", r#"{"text":"hi"}"#),
            DriverEvent::tool_call_result(
                "call_1",
                "MCP tool call requires approval, but approval policy is never",
                true
            ),
        ]
    );
    // The turn still completes (§9).
    assert!(t.succeeded());
    let events = finished(events, &mut t);
    assert_eq!(check_sequence(&events), Ok(()), "{events:?}");
}

#[test]
fn structured_mcp_results_and_shell_commands() {
    let (_, events) = run(&[
        note(
            "item/completed",
            json!({"item": {"type": "mcpToolCall", "id": "a",
            "server": "s", "tool": "t", "arguments": null, "status": "completed",
            "result": {"content": [], "structuredContent": {"n": 1}}}}),
        ),
        note(
            "item/completed",
            json!({"item": {"type": "commandExecution", "id": "b",
            "command": "false", "commandActions": [], "cwd": "/w", "aggregatedOutput": null,
            "exitCode": 1, "status": "completed"}}),
        ),
        note(
            "item/completed",
            json!({"item": {"type": "commandExecution", "id": "c",
            "command": "ls", "commandActions": [], "cwd": "/w", "aggregatedOutput": "a.txt",
            "exitCode": 0, "status": "completed"}}),
        ),
    ]);
    assert!(events.contains(&DriverEvent::tool_call_started("a", "mcp__s__t")));
    assert!(events.contains(&DriverEvent::tool_call_result("a", r#"{"n":1}"#, false)));
    assert!(events.contains(&DriverEvent::tool_call_started("b", SHELL_TOOL)));
    assert!(events.contains(&DriverEvent::tool_call_arguments("b", "false")));
    assert!(events.contains(&DriverEvent::tool_call_result("b", "", true)));
    assert!(events.contains(&DriverEvent::tool_call_result("c", "a.txt", false)));
}

#[test]
fn failed_and_interrupted_turns() {
    let (t, events) = run(&[
        note("turn/started", json!({"threadId": T, "turn": {"id": U}})),
        note(
            "error",
            json!({"error": {"message": "unexpected status 401 Unauthorized",
            "codexErrorInfo": "unauthorized"}, "willRetry": false, "threadId": T, "turnId": U}),
        ),
        completed(
            "failed",
            json!({"message": "unexpected status 401 Unauthorized",
            "codexErrorInfo": "unauthorized"}),
        ),
    ]);
    assert_eq!(events, [DriverEvent::RunStarted]);
    let failure = t.reported_failure().unwrap();
    assert_eq!(failure.kind, FailureKind::Authentication);
    assert_eq!(failure.message, "unexpected status 401 Unauthorized");
    assert_eq!(t.last_error(), Some("unexpected status 401 Unauthorized"));
    assert!(t.turn_ended() && !t.succeeded());

    for (message, kind) in [
        ("You've hit your usage limit", FailureKind::Limit),
        ("429 Too Many Requests", FailureKind::RateLimited),
        (
            "stream disconnected before completion",
            FailureKind::ModelProvider,
        ),
    ] {
        let (t, _) = run(&[completed("failed", json!({"message": message}))]);
        assert_eq!(t.reported_failure().unwrap().kind, kind, "{message}");
    }
    let (t, _) = run(&[completed("failed", Value::Null)]);
    assert_eq!(
        t.reported_failure(),
        Some(RunFailure::new(FailureKind::ModelProvider, FAILED))
    );

    // §8: an interrupt ends the turn with no error notification.
    let (t, events) = run(&[
        note("turn/started", json!({"threadId": T, "turn": {"id": U}})),
        note("thread/status/changed", json!({"status": {"type": "idle"}})),
        completed("interrupted", Value::Null),
    ]);
    assert_eq!(events, [DriverEvent::RunStarted]);
    assert_eq!(
        t.reported_failure(),
        Some(RunFailure::new(FailureKind::Other, INTERRUPTED))
    );
    assert!(t.turn_ended() && !t.succeeded());
    assert_eq!(t.last_error(), None);
}

#[test]
fn a_retried_error_is_kept_as_the_last_error() {
    let (t, _) = run(&[note(
        "error",
        json!({"error": {"message": "reconnecting 1/5"}, "willRetry": true}),
    )]);
    assert_eq!(t.last_error(), Some("reconnecting 1/5"));
    assert!(!t.turn_ended());
}

#[test]
fn usage_is_the_difference_of_totals_in_the_exec_encoding() {
    let first = Usage::new(11, 7).with_cached_input_tokens(3);
    // The previous turn ran in exec mode: its checkpoint data is the exec translator's.
    let mut exec = Tracked::new(EventTranslator::default());
    exec.translate(
        &json!({"type": "turn.completed", "usage": {"input_tokens": 11,
        "cached_input_tokens": 3, "output_tokens": 7}}),
    )
    .unwrap();
    let state = exec
        .checkpoint_data()
        .into_iter()
        .fold(SessionState::new(T), |s, (k, v)| s.with_data(k, v));

    let mut t = Tracked::new(AppServerTranslator::default().with_previous_totals(Some(&state)));
    assert_eq!(t.usage(), None);
    assert!(t.checkpoint_data().is_empty());
    // §6: a resume reports the previous totals before the turn, then the turn's.
    t.translate(&usage_note(11, 3, 7)).unwrap();
    assert_eq!(t.usage(), Some(Usage::new(0, 0)));
    t.translate(&usage_note(27, 6, 16)).unwrap();
    assert_eq!(
        t.usage(),
        Some(Usage::new(16, 9).with_cached_input_tokens(3))
    );
    assert_eq!(
        t.checkpoint_data(),
        [(TOTAL_KEY.to_owned(), "27,6,16".to_owned())]
    );

    // And back: the exec translator measures from the app-server's totals.
    let state = SessionState::new(T).with_data(TOTAL_KEY, encode(first));
    let t = AppServerTranslator::default().with_previous_totals(Some(&state));
    let (t, _) = cli_test_kit::translate_all(t, &[usage_note(27, 6, 16)]);
    let back = t
        .checkpoint_data()
        .into_iter()
        .fold(SessionState::new(T), |s, (k, v)| s.with_data(k, v));
    let mut exec = Tracked::new(EventTranslator::default().with_previous_totals(Some(&back)));
    exec.translate(
        &json!({"type": "turn.completed", "usage": {"input_tokens": 30,
        "cached_input_tokens": 6, "output_tokens": 20}}),
    )
    .unwrap();
    assert_eq!(exec.usage(), Some(Usage::new(3, 4)));

    // Without previous totals the turn's usage is the total; garbage counts as none.
    let garbage = SessionState::new(T).with_data(TOTAL_KEY, "1,2");
    let t = AppServerTranslator::default().with_previous_totals(Some(&garbage));
    let (t, _) = cli_test_kit::translate_all(t, &[usage_note(5, 0, 1)]);
    assert_eq!(t.usage(), Some(Usage::new(5, 1)));
}

#[test]
fn secrets_never_leave_the_translator() {
    const SECRET: &str = "canary-7f3a9c1e5b2d";
    let redactor = Redactor::with_secrets([SecretString::from(SECRET)]);
    let mut t = Tracked::new(AppServerTranslator::new(redactor));
    let mut events = Vec::new();
    for n in [
        note("turn/started", json!({"threadId": T, "turn": {"id": U}})),
        delta(&format!("the key is {SECRET}")),
        agent_message("item/completed", &format!("the key is {SECRET}, really")),
        note(
            "item/completed",
            json!({"item": {"type": "agentMessage", "id": "msg_1",
            "text": format!("again: {SECRET}")}}),
        ),
        note(
            "item/completed",
            json!({"item": {"type": "mcpToolCall", "id": "c",
            "server": "s", "tool": "t", "arguments": {"key": SECRET}, "status": "failed",
            "error": {"message": format!("bad key {SECRET}")}}}),
        ),
        note(
            "item/completed",
            json!({"item": {"type": "commandExecution", "id": "d",
            "command": format!("echo {SECRET}"), "aggregatedOutput": SECRET,
            "exitCode": 0, "status": "completed"}}),
        ),
        note(
            "error",
            json!({"error": {"message": format!("401 for {SECRET}")}}),
        ),
        completed("failed", json!({"message": format!("401 for {SECRET}")})),
    ] {
        events.extend(t.translate(&n).unwrap());
    }
    let seen = format!(
        "{events:?} {} {:?} {:?}",
        t.output(),
        t.last_error(),
        t.reported_failure()
    );
    assert!(!seen.contains(SECRET), "{seen}");
    assert!(seen.contains("[REDACTED]"), "{seen}");
    assert_eq!(t.output(), "again: [REDACTED]");
    assert_eq!(
        t.reported_failure().map(|f| f.kind),
        Some(FailureKind::Authentication)
    );
}

#[test]
fn malformed_known_notifications_change_nothing() {
    for bad in [
        note(
            "item/agentMessage/delta",
            json!({"threadId": T, "delta": "x"}),
        ),
        note(
            "item/agentMessage/delta",
            json!({"threadId": T, "itemId": "m", "delta": 5}),
        ),
        note(
            "item/started",
            json!({"threadId": T, "item": {"type": "agentMessage"}}),
        ),
        note(
            "item/completed",
            json!({"threadId": T, "item": {"id": "m", "type": "agentMessage"}}),
        ),
        note(
            "item/completed",
            json!({"threadId": T, "item": {"id": "c", "type": "mcpToolCall"}}),
        ),
        note("item/completed", json!({"threadId": T})),
        note("item/started", json!({"threadId": T, "item": null})),
        note(
            "thread/tokenUsage/updated",
            json!({"threadId": T, "tokenUsage": {"last": {}}}),
        ),
        note(
            "thread/tokenUsage/updated",
            json!({"threadId": T, "tokenUsage": {"total":
            {"inputTokens": -1, "outputTokens": 2}}}),
        ),
        note("turn/completed", json!({"threadId": T, "turn": {"id": U}})),
        note(
            "turn/completed",
            json!({"threadId": T, "turn": {"id": U, "status": "inProgress"}}),
        ),
        note("error", json!({"threadId": T, "willRetry": false})),
    ] {
        let mut t = Tracked::new(AppServerTranslator::default());
        assert_eq!(t.translate(&bad), Err(MalformedEvent), "{bad}");
        assert!(!t.started(), "{bad}");
        assert_eq!(t.session_id(), None, "{bad}");
        assert_eq!(t.output(), "");
        assert_eq!(t.usage(), None);
        assert!(!t.turn_ended() && t.last_error().is_none());
        assert!(t.close_open_calls().is_empty(), "{bad}");
    }
}

#[test]
fn unknown_methods_and_items_are_ignored() {
    let (t, events) = run(&[
        note(
            "warning",
            json!({"threadId": T, "message": "Model metadata not found"}),
        ),
        note("thread/goal/cleared", json!({"threadId": "other"})),
        note("deprecationNotice", json!({"summary": "…"})),
    ]);
    assert!(events.is_empty());
    // A notification names the thread even when its method is not one the translator maps.
    assert_eq!(t.session_id(), Some(T));
    let (_, events) = run(&[note(
        "item/completed",
        json!({"item": {"type": "reasoning", "id": "r"}}),
    )]);
    assert_eq!(events, [DriverEvent::RunStarted]);
}

mod fuzz {
    //! The shared translator fuzz ([`cli_test_kit::fuzz_translator!`]) over app-server
    //! notifications. It drives kinds from a `type` field, which stands for the method
    //! here (params have no top-level `type`).

    use std::sync::LazyLock;

    use super::super::AppServerTranslator;
    use crate::app_server::NOTIFICATIONS;
    use crate::fuzz_tests::ITEM_KEYS;

    /// Methods (the mapped notifications, `error` and one the translator ignores), item
    /// types, statuses and ids (statics, as the harness takes `'static` slices).
    static WORDS: LazyLock<Vec<&str>> = LazyLock::new(|| {
        [
            NOTIFICATIONS,
            &[
                "error",
                "thread/status/changed",
                "agentMessage",
                "userMessage",
                "mcpToolCall",
                "commandExecution",
                "reasoning",
                "completed",
                "failed",
                "interrupted",
                "inProgress",
                "declined",
                "msg_0",
                "call_0",
                "",
            ],
        ]
        .concat()
    });

    /// The params' keys: the items' shared ones and the camelCase ones.
    static KEYS: LazyLock<Vec<&str>> = LazyLock::new(|| {
        [
            ITEM_KEYS,
            &[
                "threadId",
                "turnId",
                "itemId",
                "delta",
                "structuredContent",
                "aggregatedOutput",
                "exitCode",
                "tokenUsage",
                "total",
                "inputTokens",
                "cachedInputTokens",
                "outputTokens",
                "turn",
                "willRetry",
            ],
        ]
        .concat()
    });

    cli_test_kit::fuzz_translator!(
        AppServerTranslator::default(),
        WORDS.as_slice(),
        KEYS.as_slice()
    );
}

/// Every notification the schema check guards is one the translator reads, so a method
/// renamed on one side only fails here: its bare params are malformed or start the turn, where
/// an unknown method's change nothing. `thread/started` is the exception: its `threadId` is
/// read as any notification's is.
#[test]
fn the_translator_reads_every_listed_notification() {
    let reads = |method: &str| {
        Tracked::new(AppServerTranslator::default()).translate(&note(method, json!({})))
            != Ok(vec![])
    };
    assert!(!reads("thread/status/changed"));
    for method in NOTIFICATIONS.iter().filter(|m| **m != "thread/started") {
        assert!(reads(method), "{method}");
    }
}
