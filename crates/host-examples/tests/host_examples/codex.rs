//! The host of `docs/getting-started.md` on Codex: a resident `codex app-server` built in one
//! expression, Threads in SQLite, one host-defined tool the model calls (`lookup_order`,
//! served over MCP), a policy that asks before writes and a handler that decides by the paths
//! of Codex's file change (inside the workspace yes, elsewhere no), two turns, a host restart
//! that may only resume, and a typed answer. The code between the `host code` markers is what
//! a user writes; the rest stands in for the model (`MockResponses`) and checks what happened.

use agent::SessionOutcome;
use agent::tools::SERVICE_ID;
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};

// host code: begin
use std::{error::Error, path::Path, sync::Arc};

use agent::store::sqlite::{SqliteConfig, SqliteStore};
use agent::tools::{HostedTool, ToolCall, ToolOutput, ToolRejection};
use agent::{Action, Agent, ApprovalTicket, Approvals, HostEnv, PermissionPolicy, RunResult};
use agent::{JsonSchema, RuntimeEnv, schemars};

/// What the host's functions return: a value, or any error of the SDK (or of parsing).
type Fallible<T> = Result<T, Box<dyn Error>>;

/// The typed answer of the last turn.
#[derive(Debug, serde::Deserialize, JsonSchema)]
struct Summary {
    written: bool,
    reason: String,
}

/// The host's tool, which the model calls with `{"id": "42"}`: the order's status.
async fn lookup_order(call: ToolCall) -> Result<ToolOutput, ToolRejection> {
    let id = call.arguments.get("id").and_then(|id| id.as_str());
    Ok(ToolOutput::text(format!("#{} shipped", id.unwrap_or("?"))))
}

/// Approves a write when every path it names is inside `allowed`, and denies it otherwise (a
/// Codex file change names them as `{"changes":[{"path","kind"}]}`).
fn decide(ticket: ApprovalTicket, allowed: &Path) {
    let asked: serde_json::Value = ticket.request().arguments.parse().unwrap_or_default();
    let inside = |p: &str| Path::new(p).starts_with(allowed) && !p.contains("..");
    let paths = asked["changes"].as_array().filter(|c| !c.is_empty());
    let _ = match paths.is_some_and(|c| c.iter().all(|c| c["path"].as_str().is_some_and(inside))) {
        true => ticket.approve(),
        false => ticket.deny("this host writes only in its workspace"),
    };
}

/// One start of the host: a resident Codex in tenant alice's namespace, working in the
/// workspace, whose Threads live in SQLite, which may call the host's tool and must ask before
/// it writes a file.
async fn host(dir: &Path, codex: &Path, url: &str) -> Fallible<Agent> {
    let workspace = dir.join("workspace");
    // The tenant's credential namespace, `user:alice`, and the CLI's working directory.
    let env = RuntimeEnv::builder(dir.join("runtime"), "user:alice".parse()?, &workspace)
        .host_env(HostEnv::capture()); // `codex` is a Node script: the child needs PATH
    let driver = driver_codex::RUNTIME
        .driver(env)
        .binary(codex)
        .endpoint(url)
        .key("sk-mock")
        .resident()
        .build()?;
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite3"))).await?;
    let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}});
    let lookup = HostedTool::new("lookup_order", "An order's status.", schema, lookup_order);
    // Codex writes through its command tool: a policy that asks about writes allows commands.
    let policy = PermissionPolicy::default().allow(Action::Commands);
    Ok(Agent::builder(driver)
        .store(Arc::new(store))
        .model("mock-model")
        .tool(lookup.with_revision("1")) // served to Codex over MCP for this agent's runs
        .permissions(policy.ask(Action::Write))
        .approvals(Approvals::new(Arc::new(move |t| decide(t, &workspace))))
        .build()?)
}

/// Two turns, a restart, and a typed answer from the resumed conversation.
async fn first_hour(dir: &Path, codex: &Path, url: &str) -> Fallible<([RunResult; 2], Summary)> {
    let agent = host(dir, codex, url).await?;
    let thread = agent.thread("alice/notes");
    let first = thread.run("Note order 42's status in notes.txt.").await?;
    let second = thread.run("Where did you write it?").await?;
    agent.close().await; // ends the app-server now (dropping the agent would, without waiting)

    // The host restarts: the same namespace and store, and a Thread that may only resume.
    let agent = host(dir, codex, url).await?;
    let thread = agent.thread("alice/notes").resume_only();
    // Resume-only: the run resumes the stored conversation, or fails before anything runs.
    let (summary, _) = thread.run_as::<Summary>("Summarise what happened.").await?;
    agent.close().await;
    Ok(([first, second], summary))
}
// host code: end

#[tokio::test(flavor = "multi_thread")]
async fn codex_first_hour() {
    let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "the getting-started host on codex")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    // The model first calls the host's tool (through Codex, over MCP), then writes the
    // answer Codex's own way: a patch through its command tool, which it applies as a file
    // change (and asks about under the policy). First outside the workspace, then inside.
    let outside = dir.path().join("elsewhere/notes.txt");
    let inside = dir.path().join("workspace/notes.txt");
    let model = MockResponses::start(
        Script::new()
            .then(Reply::tool_call(
                SERVICE_ID,
                "lookup_order",
                serde_json::json!({"id": "42"}),
            ))
            .then(Reply::codex_write(&outside, "#42 shipped"))
            .then(Reply::codex_write(&inside, "#42 shipped"))
            .then(Reply::text("Order 42 has shipped; noted in notes.txt."))
            .then(Reply::text("In the workspace: the host said no elsewhere."))
            .then(Reply::text(
                r#"{"written":true,"reason":"inside the workspace only"}"#,
            )),
    )
    .unwrap();
    let ([first, second], summary) = first_hour(dir.path(), &codex, &model.base_url())
        .await
        .unwrap_or_else(|e| panic!("the host failed: {e}"));
    assert_eq!(first.session, SessionOutcome::Started);
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert!(summary.written, "{summary:?}");
    assert_eq!(summary.reason, "inside the workspace only");
    // The tool's handler ran with the model's arguments, within the first run.
    crate::checks::assert_the_tool_ran(&first.events);
    // The handler was asked about each write: it denied the one outside, approved the other.
    crate::checks::assert_denied_then_approved(&first.events);
    assert!(!outside.exists(), "the denied write happened");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "#42 shipped\n");
    // The model got the tool's output and read the denial, and the key reached it only
    // through Codex's environment.
    let requests = model.model_requests();
    assert_eq!(requests.len(), 6, "{requests:?}");
    let outputs = |i: usize| -> Vec<String> {
        requests[i]
            .function_call_outputs()
            .into_iter()
            .map(|o| o.output)
            .collect()
    };
    assert!(
        outputs(1).iter().any(|o| o.contains("#42 shipped")),
        "{:?}",
        outputs(1)
    );
    assert!(
        outputs(2).iter().any(|o| o.contains("rejected by user")),
        "{:?}",
        outputs(2)
    );
    assert!(requests.iter().all(|r| r.bearer() == Some("sk-mock")));
}

/// What the guide says dropping does: a host that drops its agent without `close` still ends
/// the resident app-server (signalled when the last handle goes, not awaited), so the test
/// waits for it to go.
#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_agent_ends_its_app_server() {
    let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "dropping a resident codex") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockResponses::start(Script::new().then(Reply::text("hello"))).unwrap();
    // The namespace's CODEX_HOME, where the app-server's environment points.
    let home = agent::RuntimeEnv::builder(
        dir.path().join("runtime"),
        "user:alice".parse().unwrap(),
        dir.path().join("workspace"),
    )
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .unwrap()
    .state_dir(&driver_codex::RUNTIME.descriptor)
    .unwrap()
    .to_owned();
    let live = || test_kit::resident::processes_with_env("app-server", "CODEX_HOME", &home);

    let agent = host(dir.path(), &codex, &model.base_url()).await.unwrap();
    agent.thread("alice/hello").run("Say hello.").await.unwrap();
    assert!(
        !live().is_empty(),
        "the resident app-server is kept between turns"
    );
    drop(agent);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !live().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        live(),
        Default::default(),
        "dropped, the app-server still runs"
    );
}
