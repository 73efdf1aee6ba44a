//! The host of `docs/getting-started.md` on CodeBuddy, the same as on Claude Code but for the
//! runtime's crate and its model: CodeBuddy writes with its own `Write` tool too (the policy
//! asks about writes alone), tells the model its own refusal rather than the host's reason, and
//! keeps its default model. The code between the `host code` markers is what a user writes;
//! the rest stands in for the model (`MockChat`, Chat Completions) and checks what happened.

use agent::{ApprovalOutcome, ThreadEventKind};
use test_kit::chat::MockChat;
use test_kit::{Reply, Script};

// host code: begin
use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use agent::store::sqlite::{SqliteConfig, SqliteStore};
use agent::{Action, Agent, ApprovalTicket, Approvals, HostEnv, PermissionPolicy, RunResult};
use agent::{JsonSchema, RuntimeEnv, SessionOutcome, schemars};

/// The typed answer of the last turn.
#[derive(Debug, serde::Deserialize, JsonSchema)]
struct Summary {
    written: bool,
    reason: String,
}

/// One start of the host: a resident CodeBuddy in tenant alice's namespace, whose Threads live in
/// SQLite, and which must ask before it writes a file.
async fn host(dir: &Path, codebuddy: &Path, url: &str) -> Result<Agent, Box<dyn Error>> {
    let tenant = "user:alice".parse()?;
    let env = RuntimeEnv::builder(dir.join("runtime"), tenant, dir.join("workspace"))
        .host_env(HostEnv::capture()); // `codebuddy` is a Node script: the child needs PATH
    let driver = driver_codebuddy::RUNTIME
        .driver(env)
        .binary(codebuddy)
        .endpoint(url)
        .key("sk-mock")
        .resident()
        .build()?;
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite3"))).await?;
    let agent = Agent::builder(driver)
        .store(Arc::new(store))
        .permissions(PermissionPolicy::default().ask(Action::Write))
        .approvals(Approvals::new(Arc::new(|ticket: ApprovalTicket| {
            let _ = ticket.deny("this host writes no files");
        })))
        .build()?;
    Ok(agent)
}

/// Two turns, a restart, and a typed answer from the resumed conversation.
async fn first_hour(
    dir: &Path,
    codebuddy: &Path,
    url: &str,
) -> Result<(RunResult, Summary), Box<dyn Error>> {
    let agent = host(dir, codebuddy, url).await?;
    let thread = agent.thread("alice/notes");
    let first = thread.run("Write notes.txt saying hello.").await?;
    assert_eq!(first.session, SessionOutcome::Started);
    let second = thread.run("Why not?").await?;
    assert_eq!(second.session, SessionOutcome::Resumed);
    agent.close().await; // ends the resident codebuddy now

    // The host restarts: the same namespace and store, and a Thread that may only resume.
    let agent = host(dir, codebuddy, url).await?;
    let thread = agent.thread("alice/notes").resume_only();
    let (summary, third) = thread.run_as::<Summary>("Summarise what happened.").await?;
    assert_eq!(third.session, SessionOutcome::Resumed);
    agent.close().await;
    Ok((first, summary))
}
// host code: end

/// CodeBuddy's own way to write a file: its `Write` tool, with an absolute path.
fn write_notes(workspace: &Path) -> Reply {
    let file = workspace.join("notes.txt");
    Reply::builtin_call(
        "Write",
        serde_json::json!({"file_path": file, "content": "hello\n"}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn codebuddy_first_hour() {
    let Some(codebuddy) =
        test_kit::real_cli::binary("CODEBUDDY_BIN", "the getting-started host on codebuddy")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let model = MockChat::start(
        Script::new()
            .then(write_notes(&dir.path().join("workspace")))
            .then(Reply::text("I was not allowed to write notes.txt."))
            .then(Reply::text("The host denied the write."))
            .then(Reply::builtin_call(
                "StructuredOutput",
                serde_json::json!({"written": false, "reason": "the host denied it"}),
            ))
            .then(Reply::text("Recorded the summary.")),
    )
    .unwrap();
    let (first, summary) = first_hour(dir.path(), &codebuddy, &model.base_url())
        .await
        .unwrap_or_else(|e| panic!("the host failed: {e}"));
    assert!(!summary.written, "{summary:?}");
    assert_eq!(summary.reason, "the host denied it");
    // The handler was asked about the write, once, and denied it.
    let asked: Vec<(Action, Option<ApprovalOutcome>)> = first
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ApprovalRequested { action, .. } => Some((*action, None)),
            ThreadEventKind::ApprovalResolved { outcome, .. } => {
                Some((Action::Write, Some(*outcome)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            (Action::Write, None),
            (Action::Write, Some(ApprovalOutcome::Denied))
        ],
        "{:?}",
        first.events
    );
    assert!(!dir.path().join("workspace/notes.txt").exists());
    // The model read CodeBuddy's refusal, and the key reached it only through CodeBuddy's
    // options (its environment).
    let requests = model.model_requests();
    let outputs: Vec<String> = requests
        .iter()
        .flat_map(|r| r.function_call_outputs())
        .map(|o| o.output)
        .collect();
    assert!(
        outputs
            .iter()
            .any(|o| o.contains("doesn't want to proceed")),
        "{outputs:?}"
    );
    assert!(requests.iter().all(|r| r.bearer() == Some("sk-mock")));
}
