//! Structured output against the scripted fake: `exec --output-schema <per-run file>` (0600,
//! removed after the run); on an app-server (resident, or a per-turn run that asks) no file
//! and the schema inline in `turn/start` for that turn only, so turns with and without one
//! share the process.

use cli_test_kit::{checkpoint, run};
use driver_cli::ProcessMode;
use driver_codex::CommonOptions as _;
use driver_process::pool::PoolLimits;
use driver_spi::{
    Action, Driver as _, OutputSchema, PermissionPolicy, ProcessLifecycle as _, ProfilePayload,
    Request, SessionContext,
};
use fake_cli::read_served_lines;
use run_service::RunId;
use serde_json::{Value, json};

use crate::support::{FakeCodex, codex_like, fake_codex};

const TURN_START: &str = r#""method":"turn/start""#;

fn schema() -> Value {
    json!({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false})
}

fn request(prompt: &str, fake: &FakeCodex) -> Request {
    let kind = compat_fingerprint::Kind::new("driver-codex structured tests v1");
    let fp = compat_fingerprint::Fingerprint::of(kind, |e| e.str("p"));
    Request::new(RunId::new("run-1"), prompt, ProfilePayload::new(fp, fp))
        .with_workspace(fake.workspace.to_str().unwrap())
}

fn with_schema(request: Request) -> Request {
    request.with_output_schema(OutputSchema::new(schema()))
}

/// The `outputSchema` of each `turn/start` the fake app-servers were sent.
fn turn_schemas(served: &std::path::Path) -> Vec<Option<Value>> {
    read_served_lines(served)
        .unwrap()
        .iter()
        .filter(|l| l.contains(TURN_START))
        .map(|l| {
            let call: Value = serde_json::from_str(l).unwrap();
            call["params"].get("outputSchema").cloned()
        })
        .collect()
}

#[tokio::test]
async fn exec_takes_the_schema_as_a_private_per_run_file() {
    let fake = fake_codex(codex_like().capture_arg_flag("--output-schema"), &[]);
    let driver = fake.driver(fake.options());
    assert!(driver.descriptor().capabilities.structured_output);
    let response = run(&driver, with_schema(request("one", &fake)))
        .await
        .0
        .unwrap();
    assert_eq!(response.output, "started: one", "the answer is the text");
    assert_eq!(response.structured_output, None);
    let call = fake.last();
    assert_eq!(call.argv[..3], ["exec", "--json", "--output-schema"]);
    let path = call.argv[3].clone();
    let file = &call.files[&path];
    assert_eq!(file.mode, "600");
    assert_eq!(
        serde_json::from_str::<Value>(&file.contents).unwrap(),
        schema()
    );
    assert!(
        !std::path::Path::new(&path).exists(),
        "removed after the run"
    );
    // A resumed turn: the option goes before `resume`.
    let state = checkpoint(&response);
    let resumed = with_schema(request("two", &fake))
        .with_session(SessionContext::continue_only(state.clone()));
    run(&driver, resumed).await.0.unwrap();
    let argv = fake.last().argv;
    let at = |a: &str| argv.iter().position(|x| x == a).unwrap();
    assert!(at("--output-schema") < at("resume"));
    // Without a schema, or with a prompt-only one: no option, no file.
    run(&driver, request("three", &fake)).await.0.unwrap();
    assert!(!fake.last().has_arg("--output-schema"));
    let prompt_only =
        request("four", &fake).with_output_schema(OutputSchema::new(schema()).prompt_only());
    run(&driver, prompt_only).await.0.unwrap();
    assert!(!fake.last().has_arg("--output-schema"));
    assert!(fake.last().files.is_empty());
}

#[tokio::test]
async fn an_app_server_gets_the_schema_inline_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.jsonl");
    let scenario = crate::app_server_script::app_server()
        .serve_record(&served)
        .capture_arg_flag("--output-schema");
    let fake = fake_codex(scenario, &[]);

    // A per-turn run that asks runs on a one-turn app-server: no file, the schema inline.
    let per_turn = fake.driver(fake.options());
    let everything = PermissionPolicy::default()
        .allow(Action::Commands)
        .allow(Action::Write);
    let asking = with_schema(request("ask", &fake)).with_permissions(everything.ask(Action::Write));
    run(&per_turn, asking).await.0.unwrap();
    let call = fake.last();
    assert_eq!(call.argv[0], "app-server");
    assert!(!call.has_arg("--output-schema") && call.files.is_empty());
    assert_eq!(turn_schemas(&served), [Some(schema())]);

    // Resident: a turn with a schema and one without share the process.
    let resident = fake.driver(
        fake.options()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    let first = run(&resident, with_schema(request("one", &fake)))
        .await
        .0
        .unwrap();
    let state = checkpoint(&first);
    let second = request("two", &fake).with_session(SessionContext::continue_only(state));
    run(&resident, second).await.0.unwrap();
    assert_eq!(
        turn_schemas(&served),
        [Some(schema()), Some(schema()), None]
    );
    assert_eq!(fake.invocations().len(), 2, "one process per driver");
    assert!(fake.last().files.is_empty());
    resident.close_processes().await.unwrap();
}
