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

/// Issue 40: `run_as` with a plain struct (no `deny_unknown_fields`, an optional field, an
/// unsigned integer), whose derived schema OpenAI's strict mode refuses (the mock refuses it
/// as the API does): Codex gets the strict form, and the answer, with the optional field
/// `null`, is checked against the original schema and read into the type.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Review {
    verdict: String,
    score: u32,
    note: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[test]
fn a_plain_struct_is_answered_through_run_as() {
    use std::sync::Arc;

    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "run_as on the real codex") else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    test_kit::real_cli::block_on(async {
        for resident in [false, true] {
            let agent = agent::Agent::builder(driver(resident))
                .store(Arc::new(thread_store::memory::MemoryStore::new()))
                .workspace(workspace.to_string_lossy())
                .build()
                .unwrap();
            let before = model.model_requests().len();
            model.push_reply(Reply::text(
                r#"{"verdict":"pass","score":7,"note":null,"tags":["small"]}"#,
            ));
            let (review, _) = agent
                .thread(format!("plain-{resident}"))
                .run_as::<Review>("Review the change.")
                .await
                .unwrap_or_else(|e| panic!("resident={resident}: {e}"));
            assert_eq!(
                review,
                Review {
                    verdict: "pass".into(),
                    score: 7,
                    note: None,
                    tags: vec!["small".into()],
                }
            );
            let sent = declared(&model.model_requests()[before]).unwrap();
            assert_eq!(test_kit::responses::strict_schema_violation(&sent), None);
            agent.close().await;
        }
    });
}

/// A type strict mode cannot express is refused before launch, saying how to change it.
#[test]
fn a_map_answer_is_refused_before_launch() {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Scores {
        #[allow(dead_code, reason = "never answered")]
        by_file: BTreeMap<String, u32>,
    }

    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "run_as refused on codex") else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    test_kit::real_cli::block_on(async {
        let agent = agent::Agent::builder(driver(false))
            .store(Arc::new(thread_store::memory::MemoryStore::new()))
            .workspace(workspace.to_string_lossy())
            .build()
            .unwrap();
        let err = agent
            .thread("map")
            .run_as::<Scores>("Score the files.")
            .await
            .unwrap_err();
        let debug = format!("{err:?}");
        assert!(debug.contains("StrictOutputSchema(OpenMap)"), "{debug}");
        let mut chain = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            chain.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert!(chain.contains("use a struct"), "{chain}");
        assert!(model.model_requests().is_empty(), "nothing was launched");
        agent.close().await;
    });
}
