//! The stream-json translator's unit tests.

use super::*;
use driver_cli::Tracked;
use run_service::EnvBinding;
use serde_json::json;

fn plain(_: &TurnResult) -> FailureKind {
    FailureKind::ModelProvider
}

fn translator(redactor: Redactor, names: ToolNames) -> StreamJson {
    StreamJson::with(redactor, names, plain)
}

fn translate(lines: &[Value]) -> (Tracked<StreamJson>, Vec<DriverEvent>) {
    cli_test_kit::translate_all(
        translator(Redactor::default(), ToolNames::new(["agent-ui"])),
        lines,
    )
}

#[test]
fn init_reports_servers_and_starts_the_run_once() {
    let (t, events) = translate(&[
        json!({"type":"system","subtype":"init","session_id":"s","mcp_servers":[{"name":"agent-ui","status":"connected"},{"name":"x","status":"failed"}]}),
        json!({"type":"system","subtype":"status","session_id":"s"}),
        json!({"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"a"},{"type":"text","text":"b"}]}}),
    ]);
    assert_eq!(
        events,
        [
            DriverEvent::RunStarted,
            DriverEvent::text("a"),
            DriverEvent::text("b")
        ]
    );
    let servers = t.mcp_servers().unwrap();
    assert_eq!(servers[1].status, "failed");
    assert_eq!(t.output(), "ab");
}

#[test]
fn tool_results_close_calls_once_and_unknown_results_are_ignored() {
    let (mut t, events) = translate(&[
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}),
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb","is_error":true}]}}),
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"again"}]}}),
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"mcp__agent_ui__echo","input":{}}]}}),
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","content":[{"type":"text","text":"[{\"type\":\"text\",\"text\":\"pong:hi\"}]"}],"is_error":false}]}}),
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"zz","content":"?"}]}}),
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"mcp__agent-ui__ping","input":{}}]}}),
    ]);
    assert_eq!(
        events,
        [
            DriverEvent::RunStarted,
            DriverEvent::tool_call_started("t1", "Bash"),
            DriverEvent::tool_call_arguments("t1", r#"{"command":"ls"}"#),
            DriverEvent::tool_call_result("t1", "a\nb", true),
            DriverEvent::tool_call_started("t3", "mcp__agent-ui__echo"),
            DriverEvent::tool_call_arguments("t3", "{}"),
            DriverEvent::tool_call_result("t3", "pong:hi", false),
            DriverEvent::tool_call_started("t2", "mcp__agent-ui__ping"),
            DriverEvent::tool_call_arguments("t2", "{}"),
        ]
    );
    assert_eq!(
        t.close_open_calls(),
        [DriverEvent::tool_call_result(
            "t2",
            "the tool call did not complete",
            true
        )]
    );
    assert!(t.close_open_calls().is_empty());
}

/// The model's text and a tool's input and result pass the turn's redactor; the answer
/// kept as the output is redacted whole, so a key split across blocks is hidden there.
#[test]
fn text_and_tool_calls_are_redacted() {
    let secret = "opaque-key-5e1b";
    let redactor = Redactor::from_iter([EnvBinding::new("K", secret.to_owned()).value().clone()]);
    let (t, events) = cli_test_kit::translate_all(
        translator(redactor, ToolNames::default()),
        &[
            json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"u1","name":"Bash","input":{"command":format!("echo {secret}")}}]},"session_id":"s"}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"u1","content":secret}]},"session_id":"s"}),
            json!({"type":"assistant","message":{"content":[{"type":"text","text":"key opaque-"},{"type":"text","text":"key-5e1b"}]},"session_id":"s"}),
        ],
    );
    assert!(!format!("{events:?}").contains(secret), "{events:?}");
    assert!(events.contains(&DriverEvent::tool_call_result("u1", "[REDACTED]", false)));
    assert_eq!(t.output(), "key [REDACTED]");
}

#[test]
fn result_and_error_events_are_kept_redacted() {
    let secret = "canary-secret-42f1";
    let mut t = Tracked::new(translator(
        Redactor::from_iter(
            ([&EnvBinding::new("K", secret.to_owned())])
                .into_iter()
                .map(|b| b.value().clone()),
        ),
        ToolNames::new([]),
    ));
    t.translate(&json!({"type":"error","error":format!("No conversation found with session ID: x {secret}")}))
        .unwrap();
    assert!(t.last_error().unwrap().starts_with("No conversation found"));
    assert!(!t.last_error().unwrap().contains(secret));
    assert!(t.unknown_session(""));
    assert!(
        !Tracked::new(translator(Redactor::default(), ToolNames::new([]))).unknown_session("fine")
    );
    t.translate(&json!({"type":"result","subtype":"error_during_execution","is_error":true,"result":secret,"session_id":"s"}))
        .unwrap();
    let failure = t.reported_failure().unwrap();
    assert!(!t.succeeded());
    assert!(!failure.message.contains(secret));
    assert_eq!(t.session_id(), Some("s"));
}

#[test]
fn the_result_keeps_the_structured_output_redacted() {
    let secret = "canary-secret-9d3e";
    let redactor = Redactor::from_iter([EnvBinding::new("K", secret.to_owned()).value().clone()]);
    let mut t = Tracked::new(translator(redactor, ToolNames::new([])));
    t.translate(
        &json!({"type":"result","subtype":"success","is_error":false,"result":"after",
        "session_id":"s","structured_output":{"answer":format!("x {secret}"),"n":[1,true]}}),
    )
    .unwrap();
    let value = t.structured_output().unwrap();
    assert_eq!(value["n"], json!([1, true]));
    assert!(!value.to_string().contains(secret));
    assert_eq!(t.output(), "after", "the text stays the text");
    // Without the field (the model never called StructuredOutput), or null: none.
    for result in [
        json!({"type":"result","subtype":"success","is_error":false,"result":"prose"}),
        json!({"type":"result","subtype":"success","is_error":false,"structured_output":null}),
    ] {
        let (t, _) = translate(&[result]);
        assert_eq!(t.structured_output(), None);
    }
}

#[test]
fn malformed_known_events_are_errors() {
    let mut t = Tracked::new(translator(Redactor::default(), ToolNames::new([])));
    for bad in [
        json!({"no":"type"}),
        json!({"type":"assistant","message":{"content":{"not":"an array"}}}),
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","name":"x"}]}}),
        json!({"type":"system","subtype":"init","mcp_servers":{"a":1}}),
    ] {
        assert_eq!(t.translate(&bad), Err(MalformedEvent), "{bad}");
    }
    assert_eq!(
        t.translate(&json!({"type":"stream_event","event":{}})),
        Ok(vec![])
    );
}

#[test]
fn a_resident_turn_ends_at_result_and_process_usage_is_per_turn() {
    let result = |input: u64, output: u64| {
        json!({"type":"result","subtype":"success","is_error":false,"result":"ok",
               "session_id":"s","usage":{"input_tokens":input,"output_tokens":output}})
    };
    let init = json!({"type":"system","subtype":"init","session_id":"s","mcp_servers":[]});
    // Turn 1 of a CodeBuddy process: the counts are the turn's.
    let mut first = Tracked::new(
        translator(Redactor::default(), ToolNames::new(["agent-ui"])).with_process_usage(true),
    );
    first.continue_from(None);
    first.translate(&init).unwrap();
    assert!(!first.turn_ended());
    first.translate(&result(100, 10)).unwrap();
    assert!(first.turn_ended());
    assert_eq!(first.usage(), Some(Usage::new(100, 10)));
    let carried = first.carried();
    // Turn 2: the process's counts grew to 250/25; the turn used 150/15.
    let mut second = Tracked::new(
        translator(Redactor::default(), ToolNames::new(["agent-ui"])).with_process_usage(true),
    );
    second.continue_from(carried.as_ref());
    second.translate(&init).unwrap();
    second.translate(&result(250, 25)).unwrap();
    assert_eq!(second.usage(), Some(Usage::new(150, 15)));
    // Claude Code's usage is per turn already: nothing is carried or subtracted.
    let mut claude = Tracked::new(translator(
        Redactor::default(),
        ToolNames::new(["agent-ui"]),
    ));
    claude.continue_from(carried.as_ref());
    claude.translate(&result(40, 4)).unwrap();
    assert_eq!(claude.usage(), Some(Usage::new(40, 4)));
    assert_eq!(claude.carried(), None);
}

#[test]
fn a_lone_error_before_init_ends_a_resident_turn() {
    let mut t = Tracked::new(translator(
        Redactor::default(),
        ToolNames::new(["agent-ui"]),
    ));
    t.translate(&json!({"type":"error","error":"No conversation found with session ID: x"}))
        .unwrap();
    assert!(t.turn_ended());
    assert!(t.unknown_session(""));
}

#[test]
fn after_a_follow_up_the_turn_ends_at_the_result_after_its_echo() {
    let echo = |text: &str| json!({"type":"user","message":{"role":"user","content":text},"isReplay":true});
    let result = |text: &str, out: u64| json!({"type":"result","subtype":"success","is_error":false,"result":text,"usage":{"input_tokens":10,"output_tokens":out}});
    let mut t = Tracked::new(translator(
        Redactor::default(),
        ToolNames::new(["agent-ui"]),
    ));
    t.translate(&json!({"type":"system","subtype":"init","session_id":"s","mcp_servers":[]}))
        .unwrap();
    t.translate(&echo("prompt")).unwrap();
    t.steered();
    // The CLI's turn ended before it took the follow-up: it runs it next.
    t.translate(&result("first", 5)).unwrap();
    assert!(!t.turn_ended());
    t.translate(&json!({"type":"system","subtype":"init","session_id":"s","mcp_servers":[]}))
        .unwrap();
    // A malformed echo counts for nothing.
    assert!(
        t.translate(&json!({"type":"user","message":{"content":7},"isReplay":true}))
            .is_err()
    );
    t.translate(&echo("follow-up")).unwrap();
    assert!(!t.turn_ended(), "the earlier result does not end the turn");
    t.translate(&result("second", 7)).unwrap();
    assert!(t.turn_ended());
    assert_eq!(t.output(), "second");
    assert_eq!(t.usage().unwrap().output_tokens, 12, "both CLI turns");

    // A follow-up taken inside the running CLI turn: echoed before its one result.
    let mut t = Tracked::new(translator(
        Redactor::default(),
        ToolNames::new(["agent-ui"]),
    ));
    t.translate(&echo("prompt")).unwrap();
    t.steered();
    t.translate(&echo("follow-up")).unwrap();
    t.translate(&result("one", 5)).unwrap();
    assert!(t.turn_ended());
    assert_eq!(t.usage().unwrap().output_tokens, 5);
}
