//! Structured output against the scripted fake: `--json-schema '<inline json>'` per turn, and
//! the `result` event's `structured_output` as the response's structured answer while the
//! `result` text (CodeBuddy's reply after the tool result) stays the text.

use cli_test_kit::run;
use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{Driver as _, OutputSchema, ProfilePayload, Request};
use fake_cli::{Rule, Scenario};
use run_service::RunId;
use serde_json::{Value, json};

use crate::support::{FakeCodeBuddy, fake_codebuddy, text_turn};

const K: Kind = Kind::new("driver-codebuddy structured tests v1");

fn schema() -> Value {
    json!({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]})
}

fn request(prompt: &str, fake: &FakeCodeBuddy) -> Request {
    let fp = Fingerprint::of(K, |e| e.str("p"));
    Request::new(RunId::new("run-1"), prompt, ProfilePayload::new(fp, fp))
        .with_workspace(fake.workspace.to_str().unwrap())
}

/// CodeBuddy's structured turn: the `StructuredOutput` call, its result, the model's reply
/// after it, and a `result` whose text is that reply.
fn structured_turn(rule: Rule) -> Rule {
    let session = "${ARG_AFTER:--session-id}";
    rule.stdout(format!(
        r#"{{"type":"system","subtype":"init","session_id":"{session}","tools":["StructuredOutput"],"mcp_servers":[]}}"#
    ))
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"call_0","name":"StructuredOutput","input":{{"answer":"forty-two"}}}}]}},"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"call_0","content":[{{"type":"text","text":"Structured output captured successfully"}}],"is_error":false}}]}},"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"after the tool"}}]}},"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"after the tool","session_id":"{session}","structured_output":{{"answer":"forty-two"}}}}"#
    ))
}

#[tokio::test]
async fn a_schema_is_an_inline_flag_and_the_structured_answer_is_not_the_text() {
    let scenario = Scenario::new()
        .rule(structured_turn(Rule::when(["--json-schema"])))
        .rule(text_turn(
            Rule::any(),
            "${ARG_AFTER:--session-id}",
            "started: ${STDIN}",
        ));
    let fake = fake_codebuddy(scenario, &[]);
    let driver = fake.driver(fake.options());
    assert!(driver.descriptor().capabilities.structured_output);
    let schema_request = request("one", &fake).with_output_schema(OutputSchema::new(schema()));
    let response = run(&driver, schema_request).await.0.unwrap();
    assert_eq!(response.output, "after the tool");
    assert_eq!(
        response.structured_output,
        Some(json!({"answer":"forty-two"}))
    );
    let call = fake.last();
    let flag = call.arg_after("--json-schema").expect("--json-schema");
    assert_eq!(serde_json::from_str::<Value>(flag).unwrap(), schema());

    let response = run(&driver, request("two", &fake)).await.0.unwrap();
    assert_eq!(response.structured_output, None);
    assert!(!fake.last().has_arg("--json-schema"));
}
