//! The host of `docs/getting-started.md` on Claude Code, the same as on Codex but for the
//! runtime's crate and what its CLI does differently (it writes with its own `Write` tool, so
//! the policy asks about writes alone; its typed answer is a `StructuredOutput` tool call).
//! The code between the `host code` markers is what a user writes; the rest stands in for the
//! model (`MockAnthropic`) and checks what happened.

use agent::SessionOutcome;
use agent::tools::SERVICE_ID;
use test_kit::anthropic::MockAnthropic;
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

/// Approves a write when the file it names is inside `allowed`, and denies it otherwise
/// (Claude Code's `Write` tool names it as `{"file_path",…}`, an absolute path).
fn decide(ticket: ApprovalTicket, allowed: &Path) {
    let asked: serde_json::Value = ticket.request().arguments.parse().unwrap_or_default();
    let inside = |p: &str| Path::new(p).starts_with(allowed) && !p.contains("..");
    let _ = match asked["file_path"].as_str().is_some_and(inside) {
        true => ticket.approve(),
        false => ticket.deny("this host writes only in its workspace"),
    };
}

/// One start of the host: a resident Claude Code in tenant alice's namespace, whose Threads live
/// in SQLite, which may call the host's tool and must ask before it writes a file.
async fn host(dir: &Path, claude: &Path, url: &str) -> Fallible<Agent> {
    let workspace = dir.join("workspace");
    // The tenant's credential namespace, `user:alice`, and the CLI's working directory.
    let env = RuntimeEnv::builder(dir.join("runtime"), "user:alice".parse()?, &workspace)
        .host_env(HostEnv::capture()); // `claude` is a Node script: the child needs PATH
    let driver = driver_claude_code::RUNTIME
        .driver(env)
        .binary(claude)
        .endpoint(url)
        .key("sk-mock")
        .resident()
        .build()?;
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite3"))).await?;
    let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}});
    let lookup = HostedTool::new("lookup_order", "An order's status.", schema, lookup_order);
    Ok(Agent::builder(driver)
        .store(Arc::new(store))
        .model("claude-mock")
        .tool(lookup.with_revision("1")) // served to Claude Code over MCP for this agent's runs
        .permissions(PermissionPolicy::default().ask(Action::Write))
        .approvals(Approvals::new(Arc::new(move |t| decide(t, &workspace))))
        .build()?)
}

/// Two turns, a restart, and a typed answer from the resumed conversation.
async fn first_hour(dir: &Path, claude: &Path, url: &str) -> Fallible<([RunResult; 2], Summary)> {
    let agent = host(dir, claude, url).await?;
    let thread = agent.thread("alice/notes");
    let first = thread.run("Note order 42's status in notes.txt.").await?;
    let second = thread.run("Where did you write it?").await?;
    agent.close().await; // ends the resident claude now

    // The host restarts: the same namespace and store, and a Thread that may only resume.
    let agent = host(dir, claude, url).await?;
    let thread = agent.thread("alice/notes").resume_only();
    // Resume-only: the run resumes the stored conversation, or fails before anything runs.
    let (summary, _) = thread.run_as::<Summary>("Summarise what happened.").await?;
    agent.close().await;
    Ok(([first, second], summary))
}
// host code: end

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_first_hour() {
    let Some(claude) =
        test_kit::real_cli::binary("CLAUDE_BIN", "the getting-started host on claude")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    // The model writes with the CLI's own `Write` tool: first outside the workspace, then inside.
    let outside = dir.path().join("elsewhere/notes.txt");
    let inside = dir.path().join("workspace/notes.txt");
    let model = MockAnthropic::start(
        Script::new()
            .then(Reply::tool_call(
                SERVICE_ID,
                "lookup_order",
                serde_json::json!({"id": "42"}),
            ))
            .then(Reply::claude_write(&outside, "#42 shipped\n"))
            .then(Reply::claude_write(&inside, "#42 shipped\n"))
            .then(Reply::text("Order 42 has shipped; noted in notes.txt."))
            .then(Reply::text("In the workspace: the host said no elsewhere."))
            .then(Reply::builtin_call(
                "StructuredOutput",
                serde_json::json!({"written": true, "reason": "inside the workspace only"}),
            )),
    )
    .unwrap();
    let ([first, second], summary) = first_hour(dir.path(), &claude, &model.base_url())
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
    // The model got the tool's output and read the host's reason, and the key reached it only
    // through Claude Code's environment.
    let requests = model.model_requests();
    let outputs: Vec<String> = requests
        .iter()
        .flat_map(|r| r.function_call_outputs())
        .map(|o| o.output)
        .collect();
    assert!(
        outputs.iter().any(|o| o.contains("#42 shipped")),
        "{outputs:?}"
    );
    assert!(
        outputs
            .iter()
            .any(|o| o.contains("this host writes only in its workspace")),
        "{outputs:?}"
    );
    assert!(requests.iter().all(|r| r.bearer() == Some("sk-mock")));
}
