//! Structured output against the scripted fake (the stream-json argv and translator shared
//! with CodeBuddy): `--json-schema '<inline json>'` per turn and at a resident launch (so a
//! turn with another schema, or none, gets a process of its own), and the `result` event's
//! `structured_output` in the response only for a request with a schema.

use cli_test_kit::stream_json::resident;
use cli_test_kit::{checkpoint, run};
use driver_claude_code::CommonOptions as _;
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use driver_spi::{OutputSchema, ProcessLifecycle as _, Request, SessionContext};
use fake_cli::{Rule, Scenario};
use serde_json::{Value, json};

use crate::fake_cli::request;
use crate::support::{fake_claude, text_turn};

fn schema() -> Value {
    json!({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]})
}

/// A turn whose model called `StructuredOutput`: the `result` carries the object apart from
/// its text.
fn structured_turn(rule: Rule) -> Rule {
    let session = "${ARG_AFTER:--session-id}";
    rule.stdout(format!(
        r#"{{"type":"system","subtype":"init","session_id":"{session}","tools":["StructuredOutput"],"mcp_servers":[{{"name":"agent-ui","status":"connected"}}]}}"#
    ))
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"call_0","name":"StructuredOutput","input":{{"answer":"forty-two"}}}}]}},"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"call_0","content":"Structured output provided successfully"}}]}},"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"{{\"answer\":\"forty-two\"}}","session_id":"{session}","structured_output":{{"answer":"forty-two"}}}}"#
    ))
}

fn with_schema(request: Request) -> Request {
    request.with_output_schema(OutputSchema::new(schema()))
}

#[tokio::test]
async fn a_per_turn_schema_is_an_inline_flag_and_the_structured_answer_comes_back() {
    let scenario = Scenario::new()
        .capture_arg_flag("--mcp-config")
        .rule(structured_turn(Rule::when(["--json-schema"])))
        .rule(text_turn(
            Rule::any(),
            "${ARG_AFTER:--session-id}",
            "started: ${STDIN}",
        ));
    let fake = fake_claude(scenario, &[]);
    let driver = fake.driver(fake.options());
    let url = "http://127.0.0.1:4101/mcp";
    let response = run(&driver, with_schema(request("one", url, "UI_TOKEN", &fake)))
        .await
        .0
        .unwrap();
    assert_eq!(
        response.structured_output,
        Some(json!({"answer":"forty-two"}))
    );
    let call = fake.last();
    let flag = call.arg_after("--json-schema").expect("--json-schema");
    assert_eq!(serde_json::from_str::<Value>(flag).unwrap(), schema());
    // Before the permission flags and the variadic `--allowedTools`.
    let at = |a: &str| call.argv.iter().position(|x| x == a).unwrap();
    assert!(at("--json-schema") < at("--allowedTools"));

    // Without a schema: no flag, and no structured answer even where the CLI reports one.
    let response = run(&driver, request("two", url, "UI_TOKEN", &fake))
        .await
        .0
        .unwrap();
    assert_eq!(response.structured_output, None);
    assert!(!fake.last().has_arg("--json-schema"));
    // A prompt-only schema is the core's: the driver sees an ordinary request.
    let prompt_only = request("three", url, "UI_TOKEN", &fake)
        .with_output_schema(OutputSchema::new(schema()).prompt_only());
    run(&driver, prompt_only).await.0.unwrap();
    assert!(!fake.last().has_arg("--json-schema"));
}

#[tokio::test]
async fn a_resident_schema_is_part_of_the_process_signature() {
    let fake = fake_claude(resident(&[]), &[]);
    let driver = fake.driver(
        fake.options()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    let url = "http://127.0.0.1:4101/mcp";
    let first = run(&driver, with_schema(request("one", url, "UI_TOKEN", &fake)))
        .await
        .0
        .unwrap();
    let state = checkpoint(&first);
    let resumed = |prompt: &str| {
        request(prompt, url, "UI_TOKEN", &fake)
            .with_session(SessionContext::continue_only(state.clone()))
    };
    // The same schema: the same process.
    run(&driver, with_schema(resumed("two"))).await.0.unwrap();
    // No schema: another process, resuming the session; then the schema again: another.
    run(&driver, resumed("three")).await.0.unwrap();
    run(&driver, with_schema(resumed("four"))).await.0.unwrap();
    let calls = fake.invocations();
    assert_eq!(calls.len(), 3, "one process per launch configuration");
    let schemas: Vec<bool> = calls.iter().map(|c| c.has_arg("--json-schema")).collect();
    assert_eq!(schemas, [true, false, true]);
    assert!(calls[0].has_arg("--input-format"));
    assert_eq!(
        serde_json::from_str::<Value>(calls[2].arg_after("--json-schema").unwrap()).unwrap(),
        schema()
    );
    driver.close_processes().await.unwrap();
}
