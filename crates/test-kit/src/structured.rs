//! The structured-output scenario every CLI driver with native structured output runs against
//! its real binary (issue 28), through the agent (an [`Agent`] over a
//! [`MemoryStore`]), in each process mode given:
//! 1. **A valid answer**: a Thread with an [`OutputSchema`] runs; the host gets
//!    [`RunResult::structured`](agent::RunResult::structured), read into a typed [`Verdict`];
//!    the schema reached the model (the setup says where the CLI put it in the request;
//!    see [`StructuredSetup::declared_late`] for CodeBuddy).
//! 2. **The same Thread without a schema** answers in prose: no schema reaches the model (a
//!    CLI that takes the schema at launch runs this turn on another process).
//! 3. **A violating answer**: on a fresh Thread the model's answer breaks the schema; the run
//!    fails with [`ThreadError::Output`] (the error the setup expects) and nothing is
//!    persisted (the Thread has no checkpoint); the schema reached the model here too.

use std::path::Path;
use std::sync::Arc;

use agent::{Agent, OutputError, ThreadError};
use driver_spi::{Driver, OutputSchema};
use serde_json::{Value, json};
use thread_store::memory::MemoryStore;

use crate::{RecordedRequest, Reply};

/// The answer's type: what the host reads the structured answer into.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Verdict {
    /// `pass` or `fail`.
    pub verdict: String,
    /// A score.
    pub score: i64,
}

/// The scenario's valid answer, as data.
pub fn valid_answer() -> Value {
    json!({"verdict": "pass", "score": 7})
}

/// The scenario's output schema: an object root, every property required and no other
/// (what OpenAI's strict mode, which Codex always asks for, accepts).
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "score": {"type": "integer"},
        },
        "required": ["verdict", "score"],
        "additionalProperties": false,
    })
}

/// What a CLI's structured-output test supplies.
pub struct StructuredSetup<'a> {
    /// The runtime's working directory.
    pub workspace: &'a Path,
    /// Builds the CLI's driver, resident (`true`) or one process per turn.
    pub driver: &'a (dyn Fn(bool) -> Arc<dyn Driver> + Sync),
    /// Queues a reply on the mock model.
    pub push_reply: &'a (dyn Fn(Reply) + Sync),
    /// The mock's model requests so far.
    pub model_requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
    /// The model's replies that give `answer` the way the CLI takes structured answers (a
    /// text for Codex, a `StructuredOutput` call for Claude Code and CodeBuddy, and what the
    /// CLI asks next).
    pub answer: &'a (dyn Fn(&Value) -> Vec<Reply> + Sync),
    /// The model's replies of a run whose answer breaks the schema (after whatever the CLI
    /// does about it).
    pub violation: &'a (dyn Fn() -> Vec<Reply> + Sync),
    /// The schema one model request declares to the model, if any.
    pub declared: &'a (dyn Fn(&RecordedRequest) -> Option<Value> + Sync),
    /// Whether the CLI declares the real schema only later (CodeBuddy: the first requests of
    /// a process declare a generic `{data: object}` wrapper; the schema reaches the model
    /// after a nudge, and on later turns of the process). Then the valid run must declare
    /// some schema, and the violating run (nudged) the real one.
    pub declared_late: bool,
    /// The error the core reports for the violating run.
    pub violation_error: &'a (dyn Fn(&OutputError) -> bool + Sync),
    /// The process modes the scenario runs in (`true`: resident).
    pub modes: &'a [bool],
}

impl std::fmt::Debug for StructuredSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredSetup")
            .field("workspace", &self.workspace)
            .field("modes", &self.modes)
            .finish_non_exhaustive()
    }
}

/// The model requests made since `before` of them were.
fn since(setup: &StructuredSetup<'_>, before: usize) -> Vec<RecordedRequest> {
    (setup.model_requests)().into_iter().skip(before).collect()
}

/// Runs the scenario (see the [module docs](self)); panics on the first broken expectation.
pub async fn run_structured_scenario(setup: &StructuredSetup<'_>) {
    for &resident in setup.modes {
        let mode = if resident { "resident" } else { "per-turn" };
        let agent = Agent::builder((setup.driver)(resident))
            .store(Arc::new(MemoryStore::new()))
            .workspace(setup.workspace.to_string_lossy())
            .build()
            .expect("the agent builds");

        // 1. A valid answer reaches the host as typed data; the schema reached the model.
        let thread = agent.thread(format!("structured-{mode}"));
        for reply in (setup.answer)(&valid_answer()) {
            (setup.push_reply)(reply);
        }
        let before = (setup.model_requests)().len();
        let result = thread
            .clone()
            .with_output_schema(OutputSchema::new(schema()))
            .run("Judge the change; answer in the requested format.")
            .await
            .unwrap_or_else(|e| panic!("{mode}: the structured run failed: {e:?}"));
        let structured = result
            .structured
            .clone()
            .unwrap_or_else(|| panic!("{mode}: no structured answer"));
        let verdict: Verdict = serde_json::from_value(structured).expect("a Verdict");
        assert_eq!(
            verdict,
            Verdict {
                verdict: "pass".into(),
                score: 7
            },
            "{mode}"
        );
        let declared: Vec<Value> = since(setup, before)
            .iter()
            .filter_map(setup.declared)
            .collect();
        assert!(
            declared.contains(&schema()) || (setup.declared_late && !declared.is_empty()),
            "{mode}: the schema did not reach the model: {declared:?}"
        );
        assert!(
            thread.checkpoint().await.expect("the store").is_some(),
            "{mode}: a valid answer is persisted"
        );

        // 2. The same Thread, without a schema: prose, and no schema reaches the model.
        (setup.push_reply)(Reply::text("Plain prose this time."));
        let before = (setup.model_requests)().len();
        let prose = thread
            .run("And now in your own words.")
            .await
            .unwrap_or_else(|e| panic!("{mode}: the prose run failed: {e:?}"));
        assert_eq!(prose.output, "Plain prose this time.", "{mode}");
        assert_eq!(prose.structured, None, "{mode}");
        for request in since(setup, before) {
            assert_eq!(
                (setup.declared)(&request),
                None,
                "{mode}: a schema without one"
            );
        }

        // 3. A violating answer fails the run in the core, and nothing is persisted.
        let fresh = agent.thread(format!("structured-violation-{mode}"));
        for reply in (setup.violation)() {
            (setup.push_reply)(reply);
        }
        let before = (setup.model_requests)().len();
        let err = fresh
            .clone()
            .with_output_schema(OutputSchema::new(schema()))
            .run("Judge the change; answer in the requested format.")
            .await
            .expect_err("a violating answer fails the run");
        match &err {
            ThreadError::Output(output) if (setup.violation_error)(output) => {}
            other => panic!("{mode}: not the expected output error: {other:?}"),
        }
        assert!(
            fresh.checkpoint().await.expect("the store").is_none(),
            "{mode}: a violating answer is not persisted"
        );
        let declared: Vec<Value> = since(setup, before)
            .iter()
            .filter_map(setup.declared)
            .collect();
        assert!(
            declared.contains(&schema()),
            "{mode}: the schema did not reach the model: {declared:?}"
        );
        agent.close().await;
    }
}
