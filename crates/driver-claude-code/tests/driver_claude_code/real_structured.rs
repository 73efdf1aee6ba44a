//! Structured output on the real `claude`, offline against the test kit's Anthropic mock
//! ([`test_kit::structured`]), through the agent, per turn and resident: `--json-schema
//! '<inline json>'` declares a `StructuredOutput` tool whose `input_schema` is the schema; the
//! model's call of it ends the turn at once and comes back as the `result` event's
//! `structured_output`. A model that answers in text only gets one nudge, then Claude Code
//! ends the turn as a success without `structured_output`: the core refuses the prose
//! (`OutputError::NotJson`). In resident mode the schema is a launch flag: the turn without
//! one runs on another process.
//!
//! Needs `CLAUDE_BIN` (a visible `SKIPPED` locally, a failure under CI).

use driver_cli::ProcessMode;
use serde_json::Value;
use test_kit::anthropic::MockAnthropic;
use test_kit::structured::{StructuredSetup, run_structured_scenario};
use test_kit::{RecordedRequest, Reply, Script, approvals};

/// The `input_schema` of the `StructuredOutput` tool a Messages request declares.
fn declared(request: &RecordedRequest) -> Option<Value> {
    let tools = request.body().get("tools")?.as_array()?;
    tools
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .map(|t| t["input_schema"].clone())
}

#[test]
fn claude_answers_as_data_per_turn_and_resident() {
    let Some(bin) =
        test_kit::real_cli::binary("CLAUDE_BIN", "structured output on the real claude")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockAnthropic::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    let setup = StructuredSetup {
        workspace: &workspace,
        driver: &driver,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        answer: &|answer| vec![Reply::builtin_call("StructuredOutput", answer.clone())],
        // Prose, and (after Claude Code's one nudge) the mock's default text again.
        violation: &|| vec![Reply::text("I think the change passes.")],
        declared: &declared,
        declared_late: false,
        violation_error: &|e| matches!(e, agent::OutputError::NotJson),
        modes: &[false, true],
    };
    test_kit::real_cli::block_on(run_structured_scenario(&setup));
}

/// What `run_as` reads the answer into.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Review {
    pass: bool,
    findings: Vec<String>,
}

/// `Thread::run_as::<T>()` with the schema `schemars` derives: Claude Code declares it as the
/// `StructuredOutput` tool's input schema (its validator does not drop it) and the host gets a
/// `T`.
#[test]
fn claude_takes_the_schema_run_as_derives() {
    let Some(bin) = test_kit::real_cli::binary("CLAUDE_BIN", "run_as on the real claude") else {
        return;
    };
    let (dir, _workspace) = approvals::workspace();
    let model = MockAnthropic::start(Script::new().then(Reply::builtin_call(
        "StructuredOutput",
        serde_json::json!({"pass": false, "findings": ["unchecked input"]}),
    )))
    .unwrap();
    let driver = crate::real_binary::driver_with(dir.path(), &bin, &model, ProcessMode::PerTurn);
    let agent = agent::Agent::builder(std::sync::Arc::new(driver))
        .store(std::sync::Arc::new(thread_store::memory::MemoryStore::new()))
        .build()
        .unwrap();
    let (review, result) =
        test_kit::real_cli::block_on(agent.thread("review").run_as::<Review>("Review.")).unwrap();
    assert_eq!(
        review,
        Review {
            pass: false,
            findings: vec!["unchecked input".into()]
        }
    );
    assert!(result.record_id.is_some());
    let declared = declared(&model.model_requests()[0]).expect("a StructuredOutput tool");
    assert_eq!(
        declared["required"],
        serde_json::json!(["pass", "findings"])
    );
}
