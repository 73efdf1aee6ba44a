//! Resume one real Codex thread across a host restart while the tool server gets a new port,
//! a new token and a new env-var name; then see a semantic change refused before Codex runs.
//!
//! Run with `cargo run -p driver-codex --example codex_resume`. It needs a `codex` 0.169.0 or
//! newer (`CODEX_BIN`, else `codex` on `PATH`; `npm install -g @openai/codex@0.169.0`) and no
//! account: Codex talks to a loopback mock of the Responses API from the test kit. Set
//! `CODEX_EXAMPLE_REAL_MODEL=1` to use Codex's own provider and login instead (the namespace
//! under the temporary directory then needs `OPENAI_API_KEY`, which is passed through).
//!
//! The example checks every outcome it narrates and exits with an error if one differs.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent::tools::{HostedTool, ToolOutput};
use agent::{Agent, SessionOutcome, ThreadError};
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use runtime_env::{HostEnv, RuntimeEnv};
use secrecy::SecretString;
use serde_json::json;
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

const THREAD: &str = "codex-example";

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn codex_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("CODEX_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("codex"))
            .find(|candidate| candidate.is_file())
    })
}

/// The mock model: each turn asks Codex to call the `ping` tool, then answers.
fn mock_model() -> Result<MockResponses> {
    Ok(MockResponses::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "one"}),
            ))
            .then(Reply::text("Host 1: the tool answered."))
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "two"}),
            ))
            .then(Reply::text("Host 2: the tool answered again.")),
    )?)
}

/// One host process: a runtime env on the shared namespace, the Codex driver, the Thread
/// store file and a hosted `ping` tool (served on a fresh port with a fresh token).
async fn host(
    dir: &Path,
    codex: &Path,
    model: Option<&MockResponses>,
    tool_revision: &str,
    calls: &Arc<Mutex<Vec<String>>>,
) -> Result<Agent> {
    let mut env = RuntimeEnv::builder(dir.join("rt"), "user:example".parse()?, dir.join("work"))
        .host_env(HostEnv::capture())
        .runtimes([&driver_codex::RUNTIME.descriptor]);
    let mut options = CodexOptions::new().with_binary(codex);
    if let Some(model) = model {
        env = env.secret("MOCK_MODEL_KEY", SecretString::from("not-a-real-key"));
        options = options.with_model("mock-model").with_model_provider(
            ModelProvider::new("mock", model.base_url())
                .with_env_key("MOCK_MODEL_KEY")
                .with_request_max_retries(0)
                .with_stream_max_retries(0),
        );
    } else if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        env = env.secret("OPENAI_API_KEY", SecretString::from(key));
    }
    let driver = CodexDriver::new(Arc::new(env.build()?), options);
    let version = driver.check_version().await?;
    println!("   codex {version}, CODEX_HOME in the namespace");

    let calls = calls.clone();
    let ping = HostedTool::new(
        "ping",
        "Answers pong with the text it was given.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        move |call| {
            let calls = calls.clone();
            async move {
                let text = call.arguments["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                calls
                    .lock()
                    .map_err(|_| agent::tools::ToolRejection::new("poisoned"))?
                    .push(text.clone());
                Ok(ToolOutput::text(format!("pong: {text}")))
            }
        },
    )
    .with_revision(tool_revision);
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite"))).await?;
    Ok(Agent::builder(Arc::new(driver))
        .store(Arc::new(store))
        .tool(ping)
        .workspace(dir.join("work").to_str().ok_or("non-UTF-8 temp dir")?)
        .build()?)
}

fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(format!("unexpected: {what}").into())
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let Some(codex) = codex_binary() else {
        eprintln!(
            "codex not found: set CODEX_BIN or put codex on PATH \
             (npm install -g @openai/codex@0.169.0)"
        );
        std::process::exit(2);
    };
    let real_model = std::env::var_os("CODEX_EXAMPLE_REAL_MODEL").is_some();
    let model = if real_model {
        None
    } else {
        Some(mock_model()?)
    };
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("work"))?;
    let calls = Arc::new(Mutex::new(Vec::new()));

    println!("1. Host 1 starts a Thread; the model makes Codex call the hosted `ping` tool.");
    let host1 = host(dir.path(), &codex, model.as_ref(), "1", &calls).await?;
    let first = host1
        .thread(THREAD)
        .run("Please call ping with the text one.")
        .await?;
    let thread_id = host1
        .thread(THREAD)
        .checkpoint()
        .await?
        .ok_or("no checkpoint")?
        .resume_id;
    println!(
        "   {:?}: {:?} (Codex thread {thread_id})",
        first.session, first.output
    );
    check(
        first.session == SessionOutcome::Started,
        "host 1 started a session",
    )?;
    host1.close().await;
    drop(host1);

    println!("2. Host 2 (a restart: new port, token and env-var name) resumes it, resume_only.");
    let host2 = host(dir.path(), &codex, model.as_ref(), "1", &calls).await?;
    let second = host2
        .thread(THREAD)
        .resume_only()
        .run("Please call ping with the text two.")
        .await?;
    let resumed = host2
        .thread(THREAD)
        .checkpoint()
        .await?
        .ok_or("no checkpoint")?
        .resume_id;
    println!(
        "   {:?}: {:?} (Codex thread {resumed})",
        second.session, second.output
    );
    check(second.session == SessionOutcome::Resumed, "host 2 resumed")?;
    check(resumed == thread_id, "the same Codex thread continued")?;
    if let Some(model) = &model {
        let history = model
            .model_requests()
            .last()
            .map(|r| r.input_texts().join("\n"));
        check(
            history.is_some_and(|h| h.contains("Please call ping with the text one.")),
            "the resumed turn carried the first turn",
        )?;
        let calls = calls.lock().map_err(|_| "poisoned")?.clone();
        println!("   tool calls served: {calls:?}");
        check(
            calls == ["one", "two"],
            "both tool calls reached a live server",
        )?;
    }
    host2.close().await;

    println!("3. Host 3 serves a new revision of the tool: a semantic change.");
    let host3 = host(dir.path(), &codex, model.as_ref(), "2", &calls).await?;
    match host3
        .thread(THREAD)
        .resume_only()
        .run("This must not run.")
        .await
    {
        Err(ThreadError::Incompatible {
            incompatibility, ..
        }) => {
            println!("   refused before Codex ran: {incompatibility}");
        }
        other => return Err(format!("expected Incompatible, got {other:?}").into()),
    }
    host3.close().await;
    println!("Done: one Codex thread, two hosts, and a refusal where meaning changed.");
    Ok(())
}
