//! The host-restart scenario every real-CLI driver test runs, written once.
//!
//! [`run_scenario`] plays the proposal's story against a real CLI, offline:
//! 1. **Host 1**: an [`Agent`] over a SQLite file, with the driver under test and a real
//!    bearer-checking MCP tool (`hosted-tools`, one `ping` tool) on a fresh port, token and
//!    env-var name. The mock model (scripted with [`script`]) makes the CLI call the tool; the
//!    call reaches host 1's server.
//! 2. **Host 2**: a new agent, driver and provider (new port, token and env-var name). A
//!    `resume_only` run resumes the same provider session; the mock sees the earlier turn in
//!    the resumed request; the tool call reaches the new server; the old token is refused by
//!    it and the new one accepted.
//! 3. **Host 3** serves the tool at a new revision, a semantic change: `resume_only` is
//!    refused as `Incompatible` before the driver runs (a counting wrapper proves it) and no
//!    model request is made.
//! 4. **Canary scan**: no secret (the model key and both tokens) appears in any process's
//!    argv (sampled from `/proc` while the CLI runs), the events, results, the error, the
//!    TRACE log (a global subscriber, see [`trace_log`]), or any file under the test
//!    directory (the Thread store and the whole credential namespace).
//!
//! The driver test supplies how to build its driver for a host (over the same credential
//! namespace every time) and a view of the mock's model requests ([`Setup`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent::{Agent, SessionOutcome, ThreadError};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, ProcessLifecycle,
    Request, Response, SessionCodec,
};
use hosted_tools::{HostedToolsProvider, ToolSet};
use run_service::{
    ExposeSecret, RunAttachment, RunId, RunServiceError, RunServiceProvider, SecretString,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::hosts::{Calls, agent, last_call, ping_tool};
use crate::{RecordedRequest, Reply, Script};

/// The Thread key of the scenario.
pub const THREAD: &str = "restart-scenario";
/// The first prompt (host 1).
pub const FIRST_PROMPT: &str = "Please call ping with the text one.";
/// The model's answer after host 1's tool call.
pub const FIRST_ANSWER: &str = "First answer: the tool said pong.";
/// The second prompt (host 2, resumed).
pub const SECOND_PROMPT: &str = "Please call ping with the text two.";
/// The model's answer after host 2's tool call.
pub const SECOND_ANSWER: &str = "Second answer: pong again.";
/// The MCP server key of the hosted tool (`hosted_tools::SERVICE_ID`).
pub const TOOL_SERVER: &str = hosted_tools::SERVICE_ID;

/// The model's script for the scenario: a `ping` call and an answer, twice.
pub fn script() -> Script {
    Script::new()
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "one"}),
        ))
        .then(Reply::text(FIRST_ANSWER))
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "two"}),
        ))
        .then(Reply::text(SECOND_ANSWER))
}

/// A boxed future, for the driver factory.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Secret values the scan looks for; tokens join when they are minted.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Arc<Mutex<Vec<String>>>);

impl Secrets {
    /// A list holding `initial`.
    pub fn new<I: IntoIterator<Item = String>>(initial: I) -> Self {
        Self(Arc::new(Mutex::new(initial.into_iter().collect())))
    }

    /// Adds one secret value.
    pub fn push(&self, secret: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(secret);
    }

    /// A copy of the values.
    pub fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

// ---------------------------------------------------------------------------------------
// A global TRACE log
// ---------------------------------------------------------------------------------------

/// Everything written by the global TRACE subscriber [`trace_log`] installs.
#[derive(Debug, Clone, Default)]
pub struct TraceLog(Arc<Mutex<Vec<u8>>>);

impl TraceLog {
    /// The log so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl std::io::Write for TraceLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs (once per process) a global `tracing` subscriber at TRACE level that writes into
/// the returned log. Use it from a test binary of its own: a global subscriber is shared by
/// every test in the binary.
pub fn trace_log() -> TraceLog {
    static LOG: OnceLock<TraceLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = TraceLog::default();
        let writer = log.clone();
        // Another subscriber may already be installed; the scan then checks what it saw.
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init();
        log
    })
    .clone()
}

// ---------------------------------------------------------------------------------------
// The tool provider, the driver wrapper, the argv watcher
// ---------------------------------------------------------------------------------------

/// One attachment as handed to a run: where the MCP server was and which token it wanted.
#[derive(Debug, Clone)]
pub struct Attached {
    /// The endpoint URL.
    pub url: String,
    /// The name of the variable carrying the bearer.
    pub env_name: String,
    /// The bearer.
    pub token: SecretString,
}

/// The real hosted-tools provider, recording each attachment's endpoint and token.
#[derive(Debug)]
pub struct RecordingTools {
    inner: HostedToolsProvider,
    seen: Mutex<Vec<Attached>>,
    secrets: Secrets,
}

impl RecordingTools {
    /// Wraps `inner`; every bearer it mints is pushed onto `secrets` as it is attached.
    pub fn new(inner: HostedToolsProvider, secrets: Secrets) -> Self {
        Self {
            inner,
            seen: Mutex::new(Vec::new()),
            secrets,
        }
    }

    /// The first attachment.
    ///
    /// # Panics
    /// When the provider was never attached.
    pub fn first(&self) -> Attached {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .first()
            .cloned()
            .expect("the provider was attached")
    }
}

#[async_trait::async_trait]
impl RunServiceProvider for RecordingTools {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let attachment = self.inner.attach_run(run).await?;
        for service in &attachment.services {
            for binding in &service.secret_env {
                self.secrets
                    .push(binding.value().expose_secret().to_owned());
            }
            if let (Some(url), Some(binding)) = (&service.url, service.secret_env.first()) {
                self.seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Attached {
                        url: url.clone(),
                        env_name: binding.name().to_owned(),
                        token: binding.value().clone(),
                    });
            }
        }
        Ok(attachment)
    }

    async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError> {
        self.inner.detach_run(run).await
    }

    async fn close(&self) -> Result<(), RunServiceError> {
        self.inner.close().await
    }
}

/// Counts the runs that reach the wrapped driver.
struct Counting {
    inner: Arc<dyn Driver>,
    runs: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counting")
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Driver for Counting {
    fn descriptor(&self) -> Descriptor {
        self.inner.descriptor()
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.inner.validate_config()
    }
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inner.run(request, sink).await
    }
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.inner.session_codec()
    }
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.inner.config_fingerprinter()
    }
    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        self.inner.process_lifecycle()
    }
    fn credential_namespace(&self) -> Option<&str> {
        self.inner.credential_namespace()
    }
}

/// Samples every process's command line (`/proc/*/cmdline`) while a CLI runs.
#[derive(Debug)]
pub struct ArgvWatch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(bool, Vec<String>)>>,
}

/// Starts sampling: `marker` identifies the CLI's command line (for example
/// `--output-format stream-json`), `secrets` are looked for in every command line.
pub fn watch_argv(marker: &'static str, secrets: Secrets) -> ArgvWatch {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut saw_cli = false;
        let mut leaks = Vec::new();
        while !flag.load(Ordering::SeqCst) {
            let secrets = secrets.all();
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                    continue;
                };
                let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
                saw_cli |= cmdline.contains(marker);
                if secrets.iter().any(|s| cmdline.contains(s.as_str())) {
                    leaks.push(format!("pid {:?}", entry.file_name()));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (saw_cli, leaks)
    });
    ArgvWatch {
        stop,
        thread: Some(thread),
    }
}

impl ArgvWatch {
    /// Stops sampling: whether the CLI was seen, and the processes whose argv held a secret.
    pub fn finish(mut self) -> (bool, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for ArgvWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Every regular file under `dir`, recursively (symlinks are not followed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => out.extend(files_under(&path)),
                Ok(t) if t.is_file() => out.push(path),
                _ => {}
            }
        }
    }
    out
}

/// POSTs an MCP `initialize` to `url` with `token`; the HTTP status code.
///
/// # Panics
/// When `url` is not `http://host:port/path` or the server cannot be reached.
pub async fn mcp_status(url: &str, token: &str) -> u16 {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}"#;
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("the MCP server is reachable");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request written");
    let mut head = vec![0u8; 12];
    stream.read_exact(&mut head).await.expect("a status line");
    String::from_utf8_lossy(&head[9..12])
        .parse()
        .expect("a status code")
}

// ---------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------

/// One host: its agent, its tool provider and how many runs reached its driver.
#[derive(Debug)]
struct Host {
    agent: Agent,
    tools: Arc<RecordingTools>,
    runs: Arc<AtomicUsize>,
}

/// What a driver test supplies.
pub struct Setup<'a> {
    /// The test's directory: the SQLite store, the workspace (`<dir>/workspace`, created
    /// here) and whatever the driver keeps (its namespace should be under it, so the scan
    /// covers it).
    pub dir: &'a Path,
    /// Builds the driver of a host (`"host-1"`, `"host-2"`, `"host-3"`); every host must
    /// use the same credential namespace.
    pub driver: &'a (dyn Fn(&'static str) -> Arc<dyn Driver> + Sync),
    /// The mock's model requests so far.
    pub model_requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
    /// A string every command line of the CLI contains, for the argv watcher.
    pub argv_marker: &'static str,
    /// Secrets the driver was given (the model key); the tokens are added as minted.
    pub secrets: Secrets,
    /// The TRACE log to scan ([`trace_log`]).
    pub log: TraceLog,
    /// How the runtime's tool-call events and the hosted tool's `tool_call.*` events name
    /// one call: what this runtime is expected to do (checked on host 1's run).
    pub call_ids: CallIds,
}

/// How one hosted-tool call is named in a run's events: by the runtime's `ToolCallStarted`
/// and by the hosted tool's `tool_call.*` service events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallIds {
    /// The runtime passes its own call id to the MCP server and its events carry the same id:
    /// the service events' `runtime_call_id` is the `ToolCallStarted`'s `call_id` (Codex's
    /// app-server, Claude Code).
    Shared,
    /// The runtime passes its own call id, but its events name the call otherwise (Codex's
    /// `exec --json`, whose items have ids of their own): match by order and tool name.
    Separate,
    /// The runtime passes no call id to the MCP server (CodeBuddy, Gemini): match by order
    /// and tool name.
    NotPassed,
}

/// How `events` name the hosted `ping` tool's call (the first one).
///
/// # Panics
/// When the run holds no hosted-tool call or no runtime tool-call event for it.
pub fn call_ids(events: &[agent::ThreadEvent]) -> CallIds {
    use agent::ThreadEventKind;
    let runtime_ids: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            ThreadEventKind::ToolCallStarted { call_id, name } if name.contains("ping") => {
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(
        !runtime_ids.is_empty(),
        "the runtime reported the ping call: {events:?}"
    );
    let started = events
        .iter()
        .find_map(|e| match &e.kind {
            ThreadEventKind::ServiceEvent { name, data, .. }
                if name == hosted_tools::EVENT_STARTED =>
            {
                Some(data)
            }
            _ => None,
        })
        .expect("the hosted tool reported the call");
    match started
        .get("runtime_call_id")
        .and_then(serde_json::Value::as_str)
    {
        None => CallIds::NotPassed,
        Some(id) if runtime_ids.contains(&id) => CallIds::Shared,
        Some(_) => CallIds::Separate,
    }
}

impl std::fmt::Debug for Setup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

async fn host(
    setup: &Setup<'_>,
    label: &'static str,
    revision: &'static str,
    calls: &Calls,
) -> Host {
    let runs = Arc::new(AtomicUsize::new(0));
    let driver = Counting {
        inner: (setup.driver)(label),
        runs: runs.clone(),
    };
    let ping = ping_tool(label, revision, calls);
    let tools = Arc::new(RecordingTools::new(
        HostedToolsProvider::new(ToolSet::new([ping]).expect("a valid tool set")),
        setup.secrets.clone(),
    ));
    let agent = agent(setup.dir, Arc::new(driver), tools.clone()).await;
    Host { agent, tools, runs }
}

/// Plays the restart scenario (see the [module docs](self)) and panics at the first outcome
/// that differs. The mock must be scripted with [`script`].
///
/// # Panics
/// On any failed check: that is the test.
pub async fn run_scenario(setup: Setup<'_>) {
    let workspace = setup.dir.join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace created");
    let calls: Calls = Arc::default();
    let watch = watch_argv(setup.argv_marker, setup.secrets.clone());

    // ---- Host 1 ----
    println!("1. host 1: a new Thread; the model makes the CLI call the hosted `ping` tool");
    let host1 = host(&setup, "host-1", "1", &calls).await;
    let first = host1
        .agent
        .thread(THREAD)
        .run(FIRST_PROMPT)
        .await
        .expect("host 1's run succeeds");
    assert_eq!(first.session, SessionOutcome::Started);
    assert_eq!(first.output, FIRST_ANSWER);
    let call_ids = call_ids(&first.events);
    println!("   one tool call, its ids: {call_ids:?}");
    assert_eq!(
        call_ids, setup.call_ids,
        "how the runtime's events and the hosted tool's name one call"
    );
    assert_eq!(
        last_call(&calls),
        Some(("host-1".to_owned(), "one".to_owned())),
        "the tool call reached host 1's server"
    );
    let session_id = host1
        .agent
        .thread(THREAD)
        .checkpoint()
        .await
        .expect("the store answers")
        .expect("a checkpoint")
        .resume_id;
    let old = host1.tools.first();
    host1.agent.close().await;
    drop(host1);

    // ---- Host 2: new port, token and env-var name; resume_only ----
    println!("   started session {session_id}; the call reached host 1's server");
    println!("2. host 2 (new port, token and env-var name): resume_only");
    let host2 = host(&setup, "host-2", "1", &calls).await;
    let before = (setup.model_requests)().len();
    let second = host2
        .agent
        .thread(THREAD)
        .resume_only()
        .run(SECOND_PROMPT)
        .await
        .expect("host 2's resume_only run succeeds");
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert_eq!(second.output, SECOND_ANSWER);
    let resumed_id = host2
        .agent
        .thread(THREAD)
        .checkpoint()
        .await
        .expect("the store answers")
        .expect("a checkpoint")
        .resume_id;
    assert_eq!(
        resumed_id, session_id,
        "the same provider session continued"
    );
    let new = host2.tools.first();
    assert_ne!(old.url, new.url, "a fresh port");
    assert_ne!(old.env_name, new.env_name, "a fresh env-var name");
    assert_ne!(
        old.token.expose_secret(),
        new.token.expose_secret(),
        "a fresh token"
    );
    assert_eq!(
        last_call(&calls),
        Some(("host-2".to_owned(), "two".to_owned())),
        "the tool call reached the new server, whose gate admits only the new token"
    );
    let requests = (setup.model_requests)();
    let resumed = requests.get(before).expect("host 2 asked the model");
    let history = resumed.input_texts().join("\n");
    for earlier in [FIRST_PROMPT, FIRST_ANSWER, SECOND_PROMPT] {
        assert!(
            history.contains(earlier),
            "resumed request lacks {earlier:?}: {history}"
        );
    }
    assert_eq!(mcp_status(&new.url, old.token.expose_secret()).await, 401);
    assert_ne!(mcp_status(&new.url, new.token.expose_secret()).await, 401);

    // ---- Host 3: a new tool revision, refused before the driver runs ----
    println!(
        "   resumed session {resumed_id}; the model saw the first turn; the call reached the \
         new server; the old token gets 401"
    );
    println!("3. host 3 serves a new tool revision: resume_only must refuse");
    let host3 = host(&setup, "host-3", "2", &calls).await;
    let before = (setup.model_requests)().len();
    let refused = host3
        .agent
        .thread(THREAD)
        .resume_only()
        .run("This must not run.")
        .await
        .expect_err("a semantic change is refused");
    assert!(
        matches!(refused, ThreadError::Incompatible { .. }),
        "{refused}"
    );
    assert_eq!(host3.runs.load(Ordering::SeqCst), 0, "the driver never ran");
    assert_eq!((setup.model_requests)().len(), before, "the CLI never ran");
    host3.agent.close().await;
    host2.agent.close().await;

    // ---- The canary scan ----
    println!("   refused before the driver ran: {refused}");
    println!(
        "4. canary scan: argv, events, results, error, TRACE log, every file under the test dir"
    );
    let (saw_cli, leaks) = watch.finish();
    assert!(saw_cli, "the argv watcher saw the CLI running");
    assert!(leaks.is_empty(), "secrets in the argv of {leaks:?}");
    let secrets = setup.secrets.all();
    assert!(
        secrets.len() >= 3,
        "the model key and both tokens are known"
    );
    let log = setup.log.text();
    assert!(!log.is_empty(), "the TRACE subscriber captured the runs");
    let texts = [
        ("events", format!("{:?}{:?}", first.events, second.events)),
        ("results", format!("{first:?}{second:?}")),
        ("error", format!("{refused} {refused:?}")),
        ("trace log", log),
    ];
    for (what, text) in &texts {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a secret in the {what}");
        }
    }
    for file in files_under(setup.dir) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        for secret in &secrets {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "a secret in {}", file.display());
        }
    }
}

/// The real CLI, asked to resume a session its namespace has never seen, must say so in its
/// own words: the driver reports `ResumeRejected { UnknownSession }`, emits no event, and no
/// model request is made. The stored state carries a valid guard, so only the CLI can refuse.
///
/// # Panics
/// When the driver does anything else.
pub async fn unknown_session_is_rejected(
    driver: &dyn Driver,
    model_requests: &(dyn Fn() -> Vec<RecordedRequest> + Sync),
) {
    session_is_unknown(driver, model_requests, false).await;
}

/// [`unknown_session_is_rejected`], with a pre-warm of the same request first: it is refused
/// with the same `ResumeRejected(UnknownSession)` the run gets (`Driver::prewarm`'s contract).
///
/// # Panics
/// When the driver does anything else.
pub async fn unknown_session_is_rejected_at_prewarm_too(
    driver: &dyn Driver,
    model_requests: &(dyn Fn() -> Vec<RecordedRequest> + Sync),
) {
    session_is_unknown(driver, model_requests, true).await;
}

async fn session_is_unknown(
    driver: &dyn Driver,
    model_requests: &(dyn Fn() -> Vec<RecordedRequest> + Sync),
    prewarm: bool,
) {
    use compat_fingerprint::{Fingerprint, Kind};
    use driver_spi::{
        CollectingSink, ProfilePayload, ResumeRejectReason, SessionContext, SessionGuard,
        SessionState,
    };
    const K: Kind = Kind::new("agent-sdk 2026-11-30 test-kit unknown-session profile v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    );
    let mut state = SessionState::new("1f9c3813-6aa8-448e-8c61-b9a6080c42ad");
    SessionGuard::new(profile.session_compatibility, None).write_to(&mut state);
    let before = model_requests().len();
    let sink = Arc::new(CollectingSink::new());
    let request = Request::new(RunId::new("unknown-session"), "hello", profile)
        .with_session(SessionContext::continue_only(state));
    let rejected = DriverError::resume_rejected(ResumeRejectReason::UnknownSession);
    if prewarm {
        let refused = driver.prewarm(request.clone()).await;
        assert_eq!(
            refused.expect_err("an unknown session cannot be pre-warmed"),
            rejected,
            "the pre-warm refuses as the run does"
        );
    }
    let result = driver.run(request, sink.clone()).await;
    assert_eq!(
        result.expect_err("an unknown session cannot continue"),
        rejected
    );
    assert!(sink.is_empty(), "no event before a rejection");
    assert_eq!(model_requests().len(), before, "no model request was made");
}
