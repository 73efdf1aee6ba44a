//! The four recorded scenarios, played for one CLI through `agent::Agent` (the public driver
//! API, unchanged), each turn's raw stdout captured by the wrapper of [`crate::capture`].
//!
//! 1. `new-session`: a fresh Thread; the mock answers a plain text.
//! 2. `resume`: a second, `resume_only` turn on that Thread; the CLI resumes its session.
//! 3. `tool-call`: a fresh Thread; the mock calls the `ping` tool of a real bearer-checking MCP
//!    server (`hosted-tools`, through `test_kit::restart::RecordingTools`), then answers.
//! 4. `failure`: a fresh Thread on a mock that answers every model request with an HTTP error,
//!    with the driver's retries off where it has the option; the turn must fail.
//!
//! Each outcome is checked (the answer, the session outcome, the tool call reaching the
//! server, every scripted reply consumed), so a fixture is only written for a scenario that
//! really happened.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent::tools::{HostedTool, ToolOutput};
use agent::{Agent, RunResult, SessionOutcome, Thread, ThreadError};
use driver_process::version::Version;
use hosted_tools::{HostedToolsProvider, ToolSet};
use test_kit::Reply;
use test_kit::Script;
use test_kit::restart::{RecordingTools, Secrets};
use thread_store::memory::MemoryStore;

use crate::capture::Capture;
use crate::clis::{Cli, Mock};
use crate::normalize::Canary;

/// The scenarios, in recording order (each is a `<name>.jsonl` fixture).
pub(crate) const SCENARIOS: [&str; 4] = ["new-session", "resume", "tool-call", "failure"];

const SESSION_THREAD: &str = "transcripts/session";
const NEW_SESSION_PROMPT: &str = "Say hello.";
const NEW_SESSION_ANSWER: &str = "Hello from the mock model.";
const RESUME_PROMPT: &str = "Say it once more.";
const RESUME_ANSWER: &str = "Hello again, in the same session.";
const TOOL_THREAD: &str = "transcripts/tool-call";
const TOOL_PROMPT: &str = "Please call ping with the text one.";
const TOOL_ANSWER: &str = "The tool answered: pong one.";
const FAILURE_THREAD: &str = "transcripts/failure";
const FAILURE_PROMPT: &str = "This turn fails.";

/// What one CLI's recording produced.
#[derive(Debug)]
pub(crate) struct Recording {
    /// The binary's `--version`.
    pub(crate) version: Version,
    /// `(scenario, raw stdout)`, in [`SCENARIOS`] order.
    pub(crate) transcripts: Vec<(&'static str, String)>,
    /// Every secret value the runs were given.
    pub(crate) canaries: Vec<Canary>,
    /// The temporary directory the runs used, as given and canonical.
    pub(crate) temp_dirs: Vec<String>,
}

/// Plays every scenario for `cli`, whose real binary is `real`; `path` is the `PATH` the CLI
/// runs with.
pub(crate) async fn record(cli: Cli, real: &Path, path: &OsStr) -> Result<Recording, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let root = dir.path();
    let workspace = root.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(|e| format!("the workspace: {e}"))?;
    let workspace = workspace
        .to_str()
        .ok_or("the temporary directory is not UTF-8")?
        .to_owned();
    let env = Arc::new(cli.env(root, path)?);
    let version = driver_process::probe::probe_version(
        &env,
        real,
        Version::new(0, 0, 0),
        Duration::from_secs(60),
    )
    .await
    .map_err(|e| format!("`{} --version`: {e}", real.display()))?;
    println!("{} {version} ({})", cli.name(), real.display());
    let capture = Capture::install(root, cli.name(), real)?;

    // Scenarios 1-3: one agent with the hosted `ping` tool, over one mock.
    let secrets = Secrets::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let tools = ToolSet::new([ping(calls.clone())]).map_err(|e| format!("the tool set: {e}"))?;
    let provider = Arc::new(RecordingTools::new(
        HostedToolsProvider::new(tools),
        secrets.clone(),
    ));
    let mock = cli.start_mock(Script::new())?;
    let agent = Agent::builder(cli.driver(env.clone(), capture.wrapper(), &mock))
        .store(Arc::new(MemoryStore::new()))
        .run_service(provider)
        .workspace(workspace.as_str())
        .build()
        .map_err(|e| format!("the agent: {e}"))?;
    let play = Play {
        capture: &capture,
        mock: &mock,
    };

    let first = play
        .turn(
            "new-session",
            agent.thread(SESSION_THREAD),
            NEW_SESSION_PROMPT,
            vec![Reply::text(NEW_SESSION_ANSWER)],
        )
        .await?;
    expect_answer(
        "new-session",
        first,
        SessionOutcome::Started,
        NEW_SESSION_ANSWER,
    )?;

    let second = play
        .turn(
            "resume",
            agent.thread(SESSION_THREAD).resume_only(),
            RESUME_PROMPT,
            vec![Reply::text(RESUME_ANSWER)],
        )
        .await?;
    expect_answer("resume", second, SessionOutcome::Resumed, RESUME_ANSWER)?;

    let tool = play
        .turn(
            "tool-call",
            agent.thread(TOOL_THREAD),
            TOOL_PROMPT,
            vec![
                Reply::tool_call(
                    hosted_tools::SERVICE_ID,
                    "ping",
                    serde_json::json!({"text": "one"}),
                ),
                Reply::text(TOOL_ANSWER),
            ],
        )
        .await?;
    expect_answer("tool-call", tool, SessionOutcome::Started, TOOL_ANSWER)?;
    if calls.load(Ordering::SeqCst) != 1 {
        return Err("tool-call: the ping tool was not called exactly once".to_owned());
    }
    agent.close().await;

    // Scenario 4: a mock that fails every model request.
    let failing = cli.start_mock(Script::new().with_default(cli.failure_reply()))?;
    let agent = Agent::builder(cli.driver(env.clone(), capture.wrapper(), &failing))
        .store(Arc::new(MemoryStore::new()))
        .workspace(workspace.as_str())
        .build()
        .map_err(|e| format!("the agent: {e}"))?;
    let play = Play {
        capture: &capture,
        mock: &failing,
    };
    match play
        .turn(
            "failure",
            agent.thread(FAILURE_THREAD),
            FAILURE_PROMPT,
            vec![],
        )
        .await?
    {
        Ok(result) => {
            return Err(format!(
                "failure: the turn succeeded ({:?}) although every model request failed",
                result.output
            ));
        }
        Err(err) => println!(
            "  failure: failed as scripted after {} model request(s): {err}",
            failing.model_requests().len()
        ),
    }
    if failing.model_requests().is_empty() {
        return Err("failure: the CLI never reached the failing mock".to_owned());
    }
    agent.close().await;

    let mut transcripts = Vec::new();
    for scenario in SCENARIOS {
        let file = root.join("raw").join(format!("{scenario}.jsonl"));
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("{scenario}: the CLI's stdout is not UTF-8"))?;
        transcripts.push((scenario, text));
    }
    let mut canaries = cli.canaries();
    canaries.extend(
        secrets
            .all()
            .iter()
            .map(|token| Canary::new("an MCP bearer token", token)),
    );
    let mut temp_dirs = vec![root.to_string_lossy().into_owned()];
    if let Ok(canonical) = root.canonicalize() {
        temp_dirs.push(canonical.to_string_lossy().into_owned());
    }
    Ok(Recording {
        version,
        transcripts,
        canaries,
        temp_dirs,
    })
}

/// Plays turns against one mock, capturing each.
struct Play<'a> {
    capture: &'a Capture,
    mock: &'a Mock,
}

impl Play<'_> {
    /// Scripts `replies`, runs `prompt` on `thread` while capturing into `<scenario>.jsonl`,
    /// and checks that every scripted reply was consumed.
    async fn turn(
        &self,
        scenario: &str,
        thread: Thread,
        prompt: &str,
        replies: Vec<Reply>,
    ) -> Result<Result<RunResult, ThreadError>, String> {
        for reply in replies {
            self.mock.push_reply(reply);
        }
        self.capture.begin(scenario)?;
        let started = Instant::now();
        let result = thread.run(prompt).await;
        self.capture.end()?;
        println!(
            "  {scenario}: {:.1}s, {} model request(s) so far",
            started.elapsed().as_secs_f64(),
            self.mock.model_requests().len()
        );
        if self.mock.pending_replies() != 0 {
            return Err(format!(
                "{scenario}: {} scripted replies were never requested ({result:?})",
                self.mock.pending_replies()
            ));
        }
        Ok(result)
    }
}

/// Checks a turn that must have succeeded with `answer` and `session`.
fn expect_answer(
    scenario: &str,
    result: Result<RunResult, ThreadError>,
    session: SessionOutcome,
    answer: &str,
) -> Result<(), String> {
    let result = result.map_err(|e| format!("{scenario}: the turn failed: {e}"))?;
    if result.session != session || result.output != answer {
        return Err(format!(
            "{scenario}: expected {session:?} with {answer:?}, got {:?} with {:?}",
            result.session, result.output
        ));
    }
    Ok(())
}

/// The hosted tool the `tool-call` scenario calls: answers `pong <text>`, counting calls.
fn ping(calls: Arc<AtomicUsize>) -> HostedTool {
    HostedTool::new(
        "ping",
        "Answers pong with the text it was given.",
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }),
        move |call| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let text = call.arguments["text"].as_str().unwrap_or_default();
                Ok(ToolOutput::text(format!("pong {text}")))
            }
        },
    )
    .with_revision("1")
}
