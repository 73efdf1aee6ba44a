//! The host of `docs/getting-started.md` on Gemini, as far as the Gemini CLI goes today: one
//! process per turn (it has no resident mode), Threads in SQLite, the host's tool (called in
//! the first turn), two turns, a host restart that may only resume. What it cannot do is
//! refused before anything runs, with a typed error: a policy that asks (headless Gemini
//! cannot ask the host) and a typed answer through `run_as` (it has no native structured
//! output). The code between the `host code` markers is what a user writes; the rest stands in
//! for the model (`MockGemini`) and checks what happened.

use agent::SessionOutcome;
use agent::tools::SERVICE_ID;
use test_kit::gemini::MockGemini;
use test_kit::{Reply, Script};

// host code: begin
use std::{error::Error, path::Path, sync::Arc};

use agent::store::sqlite::{SqliteConfig, SqliteStore};
use agent::tools::{HostedTool, ToolCall, ToolOutput, ToolRejection};
use agent::{Action, Agent, HostEnv, PermissionPolicy, RunResult, RuntimeEnv};
use agent::{JsonSchema, ThreadError, Unsupported, schemars};

/// What the host's functions return: a value, or any error of the SDK (or of parsing).
type Fallible<T> = Result<T, Box<dyn Error>>;

/// The typed answer a host would ask for (never built here: Gemini refuses it).
#[derive(serde::Deserialize, JsonSchema)]
struct Summary {
    _written: bool,
}

/// The host's tool, which the model calls with `{"id": "42"}`: the order's status.
async fn lookup_order(call: ToolCall) -> Result<ToolOutput, ToolRejection> {
    let id = call.arguments.get("id").and_then(|id| id.as_str());
    Ok(ToolOutput::text(format!("#{} shipped", id.unwrap_or("?"))))
}

/// One start of the host: Gemini in tenant alice's namespace, one process per turn, whose
/// Threads live in SQLite, with the host's tool, under the default policy (the request's MCP
/// tools only, the host's among them).
async fn host(dir: &Path, gemini: &Path, url: &str) -> Fallible<Agent> {
    let tenant = "user:alice".parse()?;
    let env = RuntimeEnv::builder(dir.join("runtime"), tenant, dir.join("workspace"))
        .host_env(HostEnv::capture()); // `gemini` is a Node script: the child needs PATH
    let driver = driver_gemini::RUNTIME
        .driver(env)
        .binary(gemini)
        .endpoint(url)
        .key("sk-mock")
        .build()?;
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite3"))).await?;
    let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}});
    let lookup = HostedTool::new("lookup_order", "An order's status.", schema, lookup_order);
    Ok(Agent::builder(driver)
        .store(Arc::new(store))
        .model("gemini-mock")
        .tool(lookup.with_revision("1")) // served to Gemini over MCP for this agent's runs
        .build()?)
}

/// Two turns, a restart, a resumed turn; what Gemini cannot do is refused before it runs.
async fn first_hour(dir: &Path, gemini: &Path, url: &str) -> Fallible<[RunResult; 3]> {
    let agent = host(dir, gemini, url).await?;
    let thread = agent.thread("alice/notes");
    let first = thread.run("What is the status of order 42?").await?;
    let second = thread.run("And again?").await?;
    let asking = thread
        .clone()
        .with_permissions(PermissionPolicy::default().ask(Action::Write));
    let refused = asking.run("Write notes.txt.").await;
    assert!(matches!(
        refused,
        Err(ThreadError::Unsupported(Unsupported::Approvals))
    ));
    agent.close().await;

    // The host restarts: the same namespace and store, and a Thread that may only resume.
    let agent = host(dir, gemini, url).await?;
    let thread = agent.thread("alice/notes").resume_only();
    let refused = thread.run_as::<Summary>("Summarise what happened.").await;
    assert!(matches!(
        refused,
        Err(ThreadError::Unsupported(Unsupported::StructuredOutput))
    ));
    // Resume-only: the run resumes the stored conversation, or fails before anything runs.
    let third = thread.run("Summarise what happened.").await?;
    agent.close().await;
    Ok([first, second, third])
}
// host code: end

#[tokio::test(flavor = "multi_thread")]
async fn gemini_first_hour() {
    let Some(gemini) =
        test_kit::real_cli::binary("GEMINI_BIN", "the getting-started host on gemini")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockGemini::start(
        Script::new()
            .then(Reply::tool_call(
                SERVICE_ID,
                "lookup_order",
                serde_json::json!({"id": "42"}),
            ))
            .then(Reply::text("Order 42 has shipped."))
            .then(Reply::text("It has shipped, still."))
            .then(Reply::text("We looked up order 42 twice.")),
    )
    .unwrap();
    let [first, second, third] = first_hour(dir.path(), &gemini, &model.base_url())
        .await
        .unwrap_or_else(|e| panic!("the host failed: {e}"));
    assert_eq!(first.session, SessionOutcome::Started);
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert_eq!(third.session, SessionOutcome::Resumed);
    // The tool's handler ran with the model's arguments, within the first run.
    crate::checks::assert_the_tool_ran(&first.events);
    // Four requests reached the model (the tool call's answer among them; the refused turns
    // never ran), each with the key, and the model got the tool's output.
    let requests = model.model_requests();
    assert_eq!(requests.len(), 4, "{requests:?}");
    let outputs: Vec<String> = requests[1]
        .function_call_outputs()
        .into_iter()
        .map(|o| o.output)
        .collect();
    assert!(
        outputs.iter().any(|o| o.contains("#42 shipped")),
        "{outputs:?}"
    );
    assert!(requests.iter().all(|r| r.bearer() == Some("sk-mock")));
}
