//! What the real-agent tests (`real_gemini`, `real_codebuddy`) share: the driver of one agent
//! over a test directory's credential namespace (the registry's one-expression builder), the
//! agent's live processes found in `/proc`, and the scenarios both agents run: a host restart
//! over a SQLite store with a rotated MCP endpoint and token, approvals, a cancelled turn and
//! `Agent::close`.
//!
//! Every test is fully offline: the model is a test-kit loopback mock, the MCP server the
//! workspace's hosted-tools provider on a loopback port.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::{Agent, SessionOutcome, ThreadError};
use driver_acp::Limits;
use driver_cli::Runtime;
use driver_spi::{
    Action, ApprovalOutcome, ApprovalTicket, Approvals, CollectingSink, Driver, DriverEvent,
    PermissionPolicy, ProfilePayload, Request, Response, SessionContext,
};
use hosted_tools::{HostedToolsProvider, ToolSet};
use run_service::RunId;
use runtime_env::{HostEnv, RuntimeEnv};
use secrecy::SecretString;
use test_kit::restart::{self, RecordingTools, Secrets, TraceLog};
use test_kit::{RecordedRequest, Reply, Script};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// What every command line of an ACP agent process contains (Gemini's launcher and the node
/// child it starts, CodeBuddy's one process).
pub(crate) const ACP_ARGV: &str = "--acp";

/// One agent under test: its entry, binary, mock and key.
pub(crate) struct Real<'a> {
    /// `driver_acp::GEMINI` or `driver_acp::CODEBUDDY`.
    pub entry: &'static Runtime,
    /// The binary.
    pub bin: &'a Path,
    /// The mock's base URL.
    pub base_url: String,
    /// The model key (a canary).
    pub key: &'static str,
    /// The mock's model requests so far (for CodeBuddy: without its title-helper requests).
    pub requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
}

impl Real<'_> {
    /// A driver over the credential namespace of `dir` (every call the same namespace, as a
    /// restarted host has): resident processes or one per turn.
    pub(crate) fn driver(&self, dir: &Path, resident: bool) -> Arc<dyn Driver> {
        let env = RuntimeEnv::builder(
            dir.join("rt"),
            "user:e2e".parse().unwrap(),
            dir.join("workspace"),
        )
        .host_env(HostEnv::from_vars([(
            "PATH",
            std::env::var("PATH").unwrap_or_default(),
        )]));
        let builder = self
            .entry
            .driver(env)
            .binary(self.bin)
            .endpoint(self.base_url.clone())
            .key(SecretString::from(self.key))
            .limits(
                Limits::default()
                    .with_idle_timeout(Duration::from_secs(90))
                    .with_total_timeout(Duration::from_secs(180)),
            );
        let builder = if resident {
            builder.resident()
        } else {
            builder
        };
        builder.build().expect("the driver builds")
    }
}

/// The live (not zombie) ACP agent processes whose environment names a path under `dir`
/// (the namespace's HOME and state directory are under it): Gemini's launcher and the node
/// child it starts (which inherits the environment), CodeBuddy's process.
pub(crate) fn agent_pids(dir: &Path) -> BTreeSet<u32> {
    let needle = dir.display().to_string();
    test_kit::resident::processes_where(ACP_ARGV, |entry| {
        String::from_utf8_lossy(entry).contains(needle.as_str())
    })
}

/// Waits up to `limit` for every process of `pids` to be gone; the ones still alive.
pub(crate) async fn gone(dir: &Path, pids: &BTreeSet<u32>, limit: Duration) -> BTreeSet<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let alive: BTreeSet<u32> = agent_pids(dir).intersection(pids).copied().collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The hosted `ping` tool of host `label` at `revision` (never called here: it makes the
/// run-service attachment, a fresh port, token and env-var name per host).
fn tools(label: &'static str, revision: &'static str, secrets: &Secrets) -> Arc<RecordingTools> {
    let ping = agent::tools::HostedTool::new(
        "ping",
        "Answers pong.",
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        move |_call| async move { Ok(agent::tools::ToolOutput::text(format!("pong {label}"))) },
    )
    .with_revision(revision);
    Arc::new(RecordingTools::new(
        HostedToolsProvider::new(ToolSet::new([ping]).unwrap()),
        secrets.clone(),
    ))
}

/// The Thread lease of the agents here.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(6);

/// An agent over `driver` and the run-service `provider`, with the store `<dir>/threads.sqlite` and the
/// workspace `<dir>/workspace`.
pub(crate) async fn agent(
    dir: &Path,
    driver: Arc<dyn Driver>,
    provider: Option<Arc<dyn run_service::RunServiceProvider>>,
) -> Agent {
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .unwrap();
    // A short lease: a dropped run future cannot release its Thread's lease (release is
    // async), so the next run of the Thread waits for the lease to expire.
    let builder = Agent::builder(driver)
        .store(Arc::new(store))
        .lease_ttl(LEASE_TTL);
    let builder = match provider {
        Some(provider) => builder.run_service(provider),
        None => builder,
    };
    builder
        .workspace(dir.join("workspace").to_str().unwrap())
        .build()
        .unwrap()
}

/// A temporary test directory with its `workspace`.
pub(crate) fn test_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    (dir, workspace)
}

/// A script of `replies` in order; for CodeBuddy (`skip_titles`) each step waits for a request
/// that is not CodeBuddy's title helper (a first turn of each session, and a load, make one
/// extra request, `<session>…</session>` to `default-model-lite`), which gets the default.
pub(crate) fn script(replies: Vec<Reply>, skip_titles: bool) -> Script {
    replies.into_iter().fold(Script::new(), |script, reply| {
        if skip_titles {
            script.then_when(|r| !is_title(r), reply)
        } else {
            script.then(reply)
        }
    })
}

/// CodeBuddy's title-helper request.
pub(crate) fn is_title(request: &RecordedRequest) -> bool {
    request.model() == Some("default-model-lite")
        || request
            .input_texts()
            .iter()
            .any(|t| t.trim_start().starts_with("<session>"))
}

/// The restart scenario's replies.
pub(crate) fn restart_replies() -> Vec<Reply> {
    vec![Reply::text(FIRST_ANSWER), Reply::text(SECOND_ANSWER)]
}

/// The cancel scenario's replies.
pub(crate) fn cancel_replies() -> Vec<Reply> {
    vec![
        Reply::text("one"),
        Reply::text("too late").delayed(Duration::from_secs(60)),
        Reply::text("three"),
    ]
}

/// The restart scenario's texts.
pub(crate) const FIRST_PROMPT: &str = "First turn: remember the word ALPHA.";
pub(crate) const FIRST_ANSWER: &str = "Noted, the word is ALPHA.";
pub(crate) const SECOND_PROMPT: &str = "Second turn: which word was it?";
pub(crate) const SECOND_ANSWER: &str = "It was ALPHA.";

/// The host-restart scenario on one agent, resident processes, a SQLite store:
/// 1. host 1 runs turn 1 of a Thread (a new session), its hosted tools attached (port, token,
///    env-var name); `Agent::close` leaves no agent process;
/// 2. host 2 (new agent, new driver, same store and namespace; the provider hands out a new
///    port and token: a semantic identity) runs turn 2 `resume_only`: resumed, the same
///    session, and the model's request carries turn 1 (`session/load` carried the history);
/// 3. host 3 serves the tool at a new revision, and host 4 asks for another model (semantic
///    changes): `resume_only` is refused as `Incompatible` with no agent process started and
///    no model request;
/// 4. canary scan: the model key and every bearer token appear in no process's argv, event,
///    result, error, TRACE log line or file under the test directory (the store and the
///    whole namespace, the agent's own session files included).
pub(crate) async fn restart_scenario(real: &Real<'_>, log: TraceLog) {
    const THREAD: &str = "acp-restart";
    let (dir, _workspace) = test_dir();
    let dir = dir.path();
    // The key's tail too: CodeBuddy would log it without ACC_USER_ID.
    let secrets = Secrets::new([
        real.key.to_owned(),
        real.key[real.key.len() - 8..].to_owned(),
    ]);
    let watch = restart::watch_argv(ACP_ARGV, secrets.clone());

    // ---- Host 1 ----
    let started = Instant::now();
    let tools1 = tools("host-1", "1", &secrets);
    let host1 = agent(dir, real.driver(dir, true), Some(tools1.clone())).await;
    let first = host1.thread(THREAD).run(FIRST_PROMPT).await.unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    assert_eq!(first.output, FIRST_ANSWER);
    let session = host1
        .thread(THREAD)
        .checkpoint()
        .await
        .unwrap()
        .expect("a checkpoint")
        .resume_id;
    let pids1 = agent_pids(dir);
    assert!(!pids1.is_empty(), "a resident agent process serves host 1");
    host1.close().await;
    assert_eq!(
        gone(dir, &pids1, Duration::from_secs(10)).await,
        BTreeSet::new(),
        "Agent::close left host 1's agent processes"
    );
    println!(
        "1. host 1: session {session} started by pids {pids1:?} in {:?}; none left after close",
        started.elapsed()
    );

    // ---- Host 2: rotated endpoint and token, resume_only ----
    // No wait for Gemini's next session-file minute: the driver waits itself
    // (`driver_acp`'s Gemini load wait), which this restart within the minute shows.
    let started = Instant::now();
    let tools2 = tools("host-2", "1", &secrets);
    let host2 = agent(dir, real.driver(dir, true), Some(tools2.clone())).await;
    let before = (real.requests)().len();
    let second = host2.thread(THREAD).resume_only().run(SECOND_PROMPT).await;
    let second = second.unwrap_or_else(|e| {
        // What the agent answered, and what it keeps on disk, for the failure's reader.
        for line in log
            .text()
            .lines()
            .filter(|l| l.contains("session/load") || l.contains("32603"))
        {
            println!("log: {}", &line[..line.len().min(600)]);
        }
        for file in restart::files_under(dir) {
            println!("file: {}", file.display());
        }
        panic!("host 2's resume_only run failed: {e}")
    });
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert_eq!(second.output, SECOND_ANSWER);
    let resumed = host2
        .thread(THREAD)
        .checkpoint()
        .await
        .unwrap()
        .unwrap()
        .resume_id;
    assert_eq!(resumed, session, "the same agent session continued");
    let (old, new) = (tools1.first(), tools2.first());
    assert_ne!(old.url, new.url, "a fresh port");
    use run_service::ExposeSecret as _;
    assert_ne!(old.token.expose_secret(), new.token.expose_secret());
    let requests = (real.requests)();
    let turn2 = requests[before..]
        .iter()
        .find(|r| r.input_texts().iter().any(|t| t.contains(SECOND_PROMPT)))
        .expect("turn 2 asked the model");
    let history = turn2.input_texts().join("\n");
    for earlier in [FIRST_PROMPT, FIRST_ANSWER] {
        assert!(
            history.contains(earlier),
            "turn 2 lacks {earlier:?}: {history}"
        );
    }
    println!(
        "2. host 2: resumed {resumed} in {:?}; the model saw turn 1",
        started.elapsed()
    );
    host2.close().await;
    assert!(
        gone(dir, &agent_pids(dir), Duration::from_secs(10))
            .await
            .is_empty(),
        "Agent::close left host 2's agent processes"
    );

    // ---- Host 3: a semantic change, refused before launch ----
    let host3 = agent(
        dir,
        real.driver(dir, true),
        Some(tools("host-3", "2", &secrets)),
    )
    .await;
    let before = (real.requests)().len();
    let refused = host3
        .thread(THREAD)
        .resume_only()
        .run("This must not run.")
        .await
        .expect_err("a new tool revision is a semantic change");
    assert!(
        matches!(refused, ThreadError::Incompatible { .. }),
        "{refused}"
    );
    assert!(agent_pids(dir).is_empty(), "no agent process started");
    assert_eq!((real.requests)().len(), before, "no model request");
    host3.close().await;
    println!("3. host 3 (tool revision 2): refused before launch: {refused}");

    // ---- Host 4: the same tools, another model: also semantic, also refused ----
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .unwrap();
    let host4 = Agent::builder(real.driver(dir, true))
        .store(Arc::new(store))
        .run_service(tools("host-4", "1", &secrets))
        .workspace(dir.join("workspace").to_str().unwrap())
        .model("another-model")
        .build()
        .unwrap();
    let remodelled = host4
        .thread(THREAD)
        .resume_only()
        .run("This must not run either.")
        .await
        .expect_err("another model is a semantic change");
    assert!(
        matches!(remodelled, ThreadError::Incompatible { .. }),
        "{remodelled}"
    );
    assert!(agent_pids(dir).is_empty(), "no agent process started");
    assert_eq!((real.requests)().len(), before, "no model request");
    host4.close().await;
    println!("   host 4 (another model): refused before launch: {remodelled}");

    // ---- Canary scan ----
    let (saw, leaks) = watch.finish();
    assert!(saw, "the argv watcher saw the agent");
    assert!(leaks.is_empty(), "secrets in the argv of {leaks:?}");
    let secrets = secrets.all();
    assert!(
        secrets.len() >= 4,
        "the key and both hosts' tokens: {}",
        secrets.len()
    );
    let texts = [
        ("events", format!("{:?}{:?}", first.events, second.events)),
        ("results", format!("{first:?}{second:?}")),
        (
            "errors",
            format!("{refused} {refused:?} {remodelled} {remodelled:?}"),
        ),
        ("trace log", log.text()),
    ];
    for (what, text) in &texts {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a secret in the {what}");
        }
    }
    let files = restart::files_under(dir);
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_default();
        for secret in &secrets {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "a secret in {}", file.display());
        }
    }
    println!(
        "4. canary scan: {} secrets absent from argv, events, results, error, log and {} files",
        secrets.len(),
        files.len()
    );
}

/// One stateless run whose model runs the next scripted command (the agent's own shell tool), under
/// a policy that asks before commands, the host answering `approve`.
pub(crate) async fn approval_run(
    driver: &dyn Driver,
    workspace: &Path,
    approve: bool,
) -> (
    Result<Response, driver_spi::DriverError>,
    Vec<DriverEvent>,
    usize,
) {
    let tickets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = tickets.clone();
    let approvals = Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = if approve {
            ticket.approve()
        } else {
            ticket.deny("the host says no")
        };
    }));
    let fp = compat_fingerprint::Fingerprint::of(
        compat_fingerprint::Kind::new("driver-acp real approvals v1"),
        |e| e.str("p"),
    );
    let request = Request::new(
        RunId::new(if approve { "approve" } else { "deny" }),
        "Run the command.",
        ProfilePayload::new(fp, fp),
    )
    .with_session(SessionContext::stateless())
    .with_workspace(workspace.to_string_lossy())
    .with_permissions(PermissionPolicy::default().ask(Action::Commands))
    .with_approvals(approvals);
    let sink = Arc::new(CollectingSink::new());
    let result = driver.run(request, sink.clone()).await;
    let tickets = tickets.load(std::sync::atomic::Ordering::SeqCst);
    (result, sink.take(), tickets)
}

/// The approved half of the approval scenario, the same on every agent: one request reaches
/// the host, it is approved, the command writes `approved`, the turn ends cleanly with the
/// model's `done`, and the command is reported as one tool call.
pub(crate) async fn assert_an_approved_command_runs(
    driver: &dyn Driver,
    workspace: &Path,
    approved: &Path,
) {
    let (result, events, tickets) = approval_run(driver, workspace, true).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    assert_eq!(response.output, "done");
    assert_eq!(tickets, 1, "one request reached the host");
    assert_eq!(outcomes(&events), [ApprovalOutcome::Approved]);
    assert!(approved.exists(), "approved, yet no file");
    assert!(
        reported_one_call(&events),
        "the command is reported as a tool call: {events:?}"
    );
}

/// Whether a run's events report one tool call, started and finished.
pub(crate) fn reported_one_call(events: &[DriverEvent]) -> bool {
    let started = events
        .iter()
        .filter(|e| matches!(e, DriverEvent::ToolCallStarted { .. }))
        .count();
    let finished = events
        .iter()
        .filter(|e| matches!(e, DriverEvent::ToolCallResult { .. }))
        .count();
    (started, finished) == (1, 1)
}

/// The approval outcomes of a run's events.
pub(crate) fn outcomes(events: &[DriverEvent]) -> Vec<ApprovalOutcome> {
    events
        .iter()
        .filter_map(|e| match e {
            DriverEvent::ApprovalResolved { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect()
}

/// The cancel scenario on one agent (resident): turn 1 of a Thread; turn 2's model reply is
/// slow, and the host drops the run future once the request reached the model: the agent
/// process serving it is gone within the kill grace; turn 3 of the same Thread resumes on a
/// new process and works; `Agent::close` then leaves no agent process.
pub(crate) async fn cancel_scenario(real: &Real<'_>) {
    const THREAD: &str = "acp-cancel";
    let (dir, _workspace) = test_dir();
    let dir = dir.path();
    let host = agent(
        dir,
        real.driver(dir, true),
        // No run-service provider: a per-run token would make each turn's process differ.
        None,
    )
    .await;
    let one = host.thread(THREAD).run("Turn one.").await.unwrap();
    assert_eq!(one.output, "one");
    let pids = agent_pids(dir);
    assert!(!pids.is_empty(), "a resident agent process");

    let before = (real.requests)().len();
    let started = Instant::now();
    {
        let thread = host.thread(THREAD);
        let run = thread.run("Turn two, slow.");
        tokio::pin!(run);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            tokio::select! {
                result = &mut run => panic!("the slow turn ended: {result:?}"),
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            let asked = (real.requests)()[before..].iter().any(|r| {
                r.input_texts()
                    .iter()
                    .any(|t| t.contains("Turn two, slow."))
            });
            if asked {
                break;
            }
            assert!(Instant::now() < deadline, "turn 2 never reached the model");
        }
        assert_eq!(
            agent_pids(dir),
            pids,
            "turn 2 runs on turn 1's resident process"
        );
        // Dropped here: the host gives up on the run.
    }
    let dropped = Instant::now();
    let left = gone(dir, &pids, Duration::from_secs(15)).await;
    assert!(
        left.is_empty(),
        "the cancelled turn's process lives: {left:?}"
    );
    println!(
        "cancel: turn 2 reached the model after {:?}; its processes {pids:?} gone {:?} after \
         the drop",
        dropped - started,
        dropped.elapsed()
    );

    let started = Instant::now();
    // The dropped run could not release its lease: the Thread is busy until it expires.
    let three = loop {
        match host.thread(THREAD).run("Turn three.").await {
            Err(ThreadError::Busy { .. }) if started.elapsed() < LEASE_TTL * 3 => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(three.output, "three");
    assert_eq!(three.session, SessionOutcome::Resumed);
    let fresh = agent_pids(dir);
    assert!(fresh.is_disjoint(&pids), "a new process serves turn 3");
    println!(
        "cancel: turn 3 resumed on pids {fresh:?} in {:?}",
        started.elapsed()
    );

    host.close().await;
    let left = gone(dir, &fresh, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "Agent::close left {left:?}");
    assert!(
        agent_pids(dir).is_empty(),
        "no agent process of the namespace remains"
    );
}
