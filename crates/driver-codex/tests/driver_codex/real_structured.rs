//! Structured output on the real `codex`, offline against the test kit's Responses mock
//! ([`test_kit::structured`]), through the agent: `exec --output-schema <file>` per turn and
//! `turn/start`'s `outputSchema` on the resident app-server. The schema reaches the model as
//! the request's `text.format` (`json_schema`, `codex_output_schema`, strict); the answer is
//! the final message's text, which Codex never checks: a violating text passes through it
//! and the core refuses it (`OutputError::Mismatch`).
//!
//! Needs `CODEX_BIN` (a visible `SKIPPED` locally, a failure under CI).

use serde_json::Value;
use test_kit::responses::MockResponses;
use test_kit::structured::{StructuredSetup, run_structured_scenario};
use test_kit::{RecordedRequest, Reply, Script, approvals};

/// The schema a Responses request constrains the answer to (`text.format`).
fn declared(request: &RecordedRequest) -> Option<Value> {
    let format = request.body().pointer("/text/format")?;
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["strict"], true);
    format.get("schema").cloned()
}

#[test]
fn codex_answers_as_data_per_turn_and_resident() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "structured output on the real codex")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    let setup = StructuredSetup {
        workspace: &workspace,
        driver: &driver,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        answer: &|answer| vec![Reply::text(answer.to_string())],
        // Not one of the enum's values: Codex passes it on, the core refuses it.
        violation: &|| vec![Reply::text(r#"{"verdict":"maybe","score":7}"#)],
        declared: &declared,
        declared_late: false,
        violation_error: &|e| {
            matches!(e, agent::OutputError::Mismatch { schema_path, keyword }
                if schema_path == "/properties/verdict/enum" && keyword == "enum")
        },
        modes: &[false, true],
    };
    test_kit::real_cli::block_on(run_structured_scenario(&setup));
}
