//! Structured output on the real `codebuddy`, offline against the test kit's Chat Completions
//! mock ([`test_kit::structured`]), through the agent, per turn and resident: `--json-schema
//! '<inline json>'` declares a `StructuredOutput` function tool (on a process's first requests
//! with generic `{data: object}` parameters: the real schema reaches the model only after a
//! nudge, and on the process's later turns); the model's call of it (the
//! answer as a flat object) is reported as the `result` event's `structured_output`, while
//! the `result` text is the model's reply after the tool result (CodeBuddy asks again). A
//! model that answers in text only is nudged (up to three times), then CodeBuddy ends the
//! turn as a success without `structured_output`: the core refuses the prose
//! (`OutputError::NotJson`). In resident mode the schema is a launch flag: the turn without
//! one runs on another process.
//!
//! Needs `CODEBUDDY_BIN` (a visible `SKIPPED` locally, a failure under CI).

use serde_json::Value;
use test_kit::chat::MockChat;
use test_kit::structured::{StructuredSetup, run_structured_scenario};
use test_kit::{RecordedRequest, Reply, Script, approvals};

/// How CodeBuddy's nudge shows the schema to the model (a user message).
const NUDGE: &str = "The tool parameters must match this JSON Schema:\n\n";

/// The schema a Chat Completions request shows the model: the parameters of its
/// `StructuredOutput` function, unless they are CodeBuddy's generic `{data: object}` wrapper
/// and a nudge shows the real schema as text.
fn declared(request: &RecordedRequest) -> Option<Value> {
    let tools = request.body().get("tools")?.as_array()?;
    let parameters = tools
        .iter()
        .find(|t| t["function"]["name"] == "StructuredOutput")
        .map(|t| t["function"]["parameters"].clone())?;
    if parameters.pointer("/properties/data").is_none() {
        return Some(parameters);
    }
    let texts =
        request
            .body()
            .get("messages")?
            .as_array()?
            .iter()
            .flat_map(|m| match &m["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            });
    let shown = texts
        .filter_map(|text| {
            let rest = text.split(NUDGE).nth(1)?;
            let json = rest.split("\n\nCall the StructuredOutput").next()?;
            serde_json::from_str(json).ok()
        })
        .next_back();
    Some(shown.unwrap_or(parameters))
}

#[test]
fn codebuddy_answers_as_data_per_turn_and_resident() {
    let Some(bin) =
        test_kit::real_cli::binary("CODEBUDDY_BIN", "structured output on the real codebuddy")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockChat::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    let setup = StructuredSetup {
        workspace: &workspace,
        driver: &driver,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        answer: &|answer| {
            vec![
                Reply::builtin_call("StructuredOutput", answer.clone()),
                Reply::text("Recorded the verdict."),
            ]
        },
        // Prose, and (after each of CodeBuddy's nudges) the mock's default text.
        violation: &|| vec![Reply::text("I think the change passes.")],
        declared: &declared,
        declared_late: true,
        violation_error: &|e| matches!(e, agent::OutputError::NotJson),
        modes: &[false, true],
    };
    test_kit::real_cli::block_on(run_structured_scenario(&setup));
}
