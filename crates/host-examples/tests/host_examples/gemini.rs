//! The host of `docs/getting-started.md` on Gemini, as far as the Gemini CLI goes today: one
//! process per turn (it has no resident mode), Threads in SQLite, two turns, a host restart
//! that may only resume. What it cannot do is refused before anything runs, with a typed error:
//! a policy that asks (headless Gemini cannot ask the host) and a typed answer through
//! `run_as` (it has no native structured output). The code between the `host code` markers is
//! what a user writes; the rest stands in for the model (`MockGemini`) and checks what
//! happened.

use test_kit::gemini::MockGemini;
use test_kit::{Reply, Script};

// host code: begin
use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use agent::store::sqlite::{SqliteConfig, SqliteStore};
use agent::{Action, Agent, HostEnv, PermissionPolicy, RuntimeEnv, SessionOutcome};
use agent::{JsonSchema, ThreadError, Unsupported, schemars};

/// The typed answer a host would ask for (never built here: Gemini refuses it).
#[derive(serde::Deserialize, JsonSchema)]
struct Summary {
    _written: bool,
}

/// One start of the host: Gemini in tenant alice's namespace, one process per turn, whose
/// Threads live in SQLite, under the default policy (the request's MCP tools only).
async fn host(dir: &Path, gemini: &Path, url: &str) -> Result<Agent, Box<dyn Error>> {
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
    let agent = Agent::builder(driver)
        .store(Arc::new(store))
        .model("gemini-mock")
        .build()?;
    Ok(agent)
}

/// Two turns, a restart, a resumed turn; what Gemini cannot do is refused before it runs.
async fn first_hour(dir: &Path, gemini: &Path, url: &str) -> Result<(), Box<dyn Error>> {
    let agent = host(dir, gemini, url).await?;
    let thread = agent.thread("alice/notes");
    let first = thread.run("Say hello.").await?;
    assert_eq!(first.session, SessionOutcome::Started);
    let second = thread.run("And again?").await?;
    assert_eq!(second.session, SessionOutcome::Resumed);
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
    let third = thread.run("Summarise what happened.").await?;
    assert_eq!(third.session, SessionOutcome::Resumed);
    agent.close().await;
    Ok(())
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
            .then(Reply::text("Hello."))
            .then(Reply::text("Hello again."))
            .then(Reply::text("We said hello twice.")),
    )
    .unwrap();
    first_hour(dir.path(), &gemini, &model.base_url())
        .await
        .unwrap_or_else(|e| panic!("the host failed: {e}"));
    // Three turns reached the model (the refused ones never ran), each with the key.
    let requests = model.model_requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests.iter().all(|r| r.bearer() == Some("sk-mock")));
}
