//! End to end against the real `codex` binary, fully offline: a loopback mock of the OpenAI
//! Responses API stands in for the model, and the workspace's hosted-tools provider serves a
//! real bearer-checking MCP tool on a fresh port with a fresh token and env-var name per host.
//!
//! The binary comes from `CODEX_BIN` (`.ci/run` installs the pinned `@openai/codex@0.169.0`
//! and exports it). Without it the test prints a visible `SKIPPED` line locally; under CI
//! (`CI` set) a missing binary fails the test, so CI never skips it
//! ([`test_kit::real_cli::binary`]).
//!
//! This is its own test binary because it installs a global TRACE subscriber for the canary
//! scan (scoped dispatchers are unreliable across tests in one binary).

#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent::tools::{HostedTool, ToolOutput};
use agent::{Agent, SessionOutcome, ThreadError};
use driver_cli::Limits;
use driver_codex::{CodexDriver, CodexOptions, ModelProvider};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, ProcessLifecycle,
    Request, Response, SessionCodec,
};
use hosted_tools::{HostedToolsProvider, ToolSet};
use run_service::{
    ExposeSecret, ProviderError, RunAttachment, RunId, RunServiceProvider, SecretString,
    async_trait,
};
use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};
use thread_store::sqlite::{SqliteConfig, SqliteStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The model API key: a canary that must reach only Codex's environment (and so the mock's
/// Authorization header).
const MODEL_KEY: &str = "model-key-canary-5b0c9e2f7a1d";
const THREAD: &str = "e2e-codex-thread";

// ---------------------------------------------------------------------------------------
// The binary, and a global TRACE log
// ---------------------------------------------------------------------------------------

fn codex_bin() -> Option<PathBuf> {
    test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex end to end against the real codex",
    )
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl std::io::Write for Log {
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

fn trace_log() -> Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        log
    })
    .clone()
}

// ---------------------------------------------------------------------------------------
// A hosted-tools provider that remembers what it handed out
// ---------------------------------------------------------------------------------------

/// One attachment as handed to the run: where the MCP server was and which token it wanted.
struct Seen {
    url: String,
    env_name: String,
    token: SecretString,
}

/// Secret values the argv watcher looks for; tokens join when they are minted.
type Secrets = Arc<Mutex<Vec<String>>>;

/// Wraps the real hosted-tools provider and records each attachment's endpoint and token, so
/// the test can compare hosts and try the old token against the new server.
struct Recording {
    inner: HostedToolsProvider,
    seen: Mutex<Vec<Seen>>,
    secrets: Secrets,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recording(..)")
    }
}

impl Recording {
    fn first(&self) -> (String, String, SecretString) {
        let seen = self.seen.lock().unwrap();
        let s = seen.first().expect("the provider was attached");
        (s.url.clone(), s.env_name.clone(), s.token.clone())
    }
}

#[async_trait]
impl RunServiceProvider for Recording {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, ProviderError> {
        let attachment = self.inner.attach_run(run).await?;
        let service = &attachment.services[0];
        self.secrets
            .lock()
            .unwrap()
            .push(service.secret_env[0].value().expose_secret().to_owned());
        self.seen.lock().unwrap().push(Seen {
            url: service.url.clone().expect("a URL"),
            env_name: service.secret_env[0].name().to_owned(),
            token: service.secret_env[0].value().clone(),
        });
        Ok(attachment)
    }

    async fn detach_run(&self, run: &RunId) -> Result<(), ProviderError> {
        self.inner.detach_run(run).await
    }

    async fn close(&self) -> Result<(), ProviderError> {
        self.inner.close().await
    }
}

// ---------------------------------------------------------------------------------------
// A driver wrapper that counts the runs that reached it
// ---------------------------------------------------------------------------------------

struct Counting {
    inner: CodexDriver,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
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
        None
    }
}

// ---------------------------------------------------------------------------------------
// One host process: a runtime env on the shared namespace, a driver, a store, a provider
// ---------------------------------------------------------------------------------------

/// The shared credential namespace of every host, with the model key injected.
fn namespace(dir: &Path) -> RuntimeEnv {
    RuntimeEnv::builder(
        dir.join("rt"),
        "user:e2e".parse().unwrap(),
        dir.join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret("MOCK_MODEL_KEY", SecretString::from(MODEL_KEY))
    .build()
    .unwrap()
}

/// Tool calls that reached a hosted tool handler: `(host, text)`.
type Calls = Arc<Mutex<Vec<(String, String)>>>;

struct Host {
    agent: Agent,
    tools: Arc<Recording>,
    runs: Arc<AtomicUsize>,
}

async fn host(
    dir: &Path,
    bin: &Path,
    model: &MockResponses,
    label: &'static str,
    tool_revision: &'static str,
    calls: &Calls,
    secrets: &Secrets,
) -> Host {
    let env = namespace(dir);
    let options = CodexOptions::new()
        .with_binary(bin)
        .with_model("mock-model")
        .with_provider(
            ModelProvider::new("mock", model.base_url())
                .with_env_key("MOCK_MODEL_KEY")
                .with_request_max_retries(0)
                .with_stream_max_retries(0),
        )
        .with_limits(
            Limits::default()
                .with_idle_timeout(Duration::from_secs(90))
                .with_total_timeout(Duration::from_secs(240)),
        );
    let runs = Arc::new(AtomicUsize::new(0));
    let driver = Counting {
        inner: CodexDriver::new(Arc::new(env), options),
        runs: runs.clone(),
    };
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
                calls.lock().unwrap().push((label.to_owned(), text.clone()));
                Ok(ToolOutput::text(format!("pong from {label}: {text}")))
            }
        },
    )
    .with_revision(tool_revision);
    let tools = Arc::new(Recording {
        inner: HostedToolsProvider::new(ToolSet::new([ping]).unwrap()),
        seen: Mutex::new(Vec::new()),
        secrets: secrets.clone(),
    });
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .unwrap();
    let agent = Agent::builder(Arc::new(driver))
        .store(Arc::new(store))
        .provider(tools.clone())
        .workspace(dir.join("workspace").to_str().unwrap())
        .build()
        .unwrap();
    Host { agent, tools, runs }
}

/// POSTs an MCP `initialize` to `url` with `token` and returns the HTTP status code.
async fn mcp_status(url: &str, token: &str) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}"#;
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

// ---------------------------------------------------------------------------------------
// The canary scan of argv: every process's command line, sampled while codex runs
// ---------------------------------------------------------------------------------------

struct ArgvWatch {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(bool, Vec<String>)>,
}

/// Samples `/proc/*/cmdline` every few milliseconds; reports whether a `codex exec` was seen
/// and every secret found in any command line.
fn watch_argv(secrets: Secrets) -> ArgvWatch {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let task = tokio::task::spawn_blocking(move || {
        let mut saw_codex = false;
        let mut leaks = Vec::new();
        while !flag.load(Ordering::SeqCst) {
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                    continue;
                };
                let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
                if cmdline.contains("exec --json") {
                    saw_codex = true;
                }
                for secret in secrets.lock().unwrap().iter() {
                    if cmdline.contains(secret.as_str()) {
                        leaks.push(format!(
                            "a secret in the argv of pid {:?}",
                            entry.file_name()
                        ));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (saw_codex, leaks)
    });
    ArgvWatch { stop, task }
}

impl ArgvWatch {
    async fn finish(mut self) -> (bool, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        (&mut self.task).await.unwrap()
    }
}

impl Drop for ArgvWatch {
    /// Stops the sampler when a failed assertion unwinds, so the runtime can shut down.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
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

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The real codex, asked to resume a thread its `CODEX_HOME` has never seen, exits 1 with "no
/// rollout found"; the driver reports `ResumeRejected` and emits nothing.
async fn unknown_thread_is_rejected(dir: &Path, bin: &Path, model: &MockResponses) {
    use compat_fingerprint::{Fingerprint, Kind};
    use driver_spi::{
        CollectingSink, ProfilePayload, ResumeRejectReason, SessionContext, SessionGuard,
        SessionState,
    };
    const K: Kind = Kind::new("driver-codex e2e 2026-11-30 profile v1");
    let env = namespace(dir);
    let driver = CodexDriver::new(
        Arc::new(env),
        CodexOptions::new().with_binary(bin).with_provider(
            ModelProvider::new("mock", model.base_url()).with_env_key("MOCK_MODEL_KEY"),
        ),
    );
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    );
    let mut state = SessionState::new("1f9c3813-6aa8-448e-8c61-b9a6080c42ad");
    SessionGuard::new(profile.session_compatibility, None).write_to(&mut state);
    let before = model.model_requests().len();
    let sink = Arc::new(CollectingSink::new());
    let request = Request::new(RunId::new("unknown"), "hello", profile)
        .with_session(SessionContext::continue_only(state));
    let result = driver.run(request, sink.clone()).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(sink.is_empty(), "no event before a rejection");
    assert_eq!(model.model_requests().len(), before, "no model request was made");
}

// ---------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------

#[test]
fn codex_resumes_one_thread_across_a_host_restart_with_a_rotated_endpoint() {
    let Some(bin) = codex_bin() else {
        return;
    };
    let log = trace_log();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario(bin, log));
}

async fn scenario(bin: PathBuf, log: Log) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    // The model lives across both hosts, as the provider's cloud would.
    let model = MockResponses::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "one"}),
            ))
            .then(Reply::text("First answer: the tool said pong."))
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "two"}),
            ))
            .then(Reply::text("Second answer: pong again.")),
    )
    .unwrap();
    let calls: Calls = Arc::default();
    // Every secret of the scenario, as the argv watcher learns them.
    let secrets: Secrets = Arc::new(Mutex::new(vec![MODEL_KEY.to_owned()]));

    // ---- Host 1: a fresh Thread; the model makes Codex call the hosted tool ----
    let host1 = host(dir.path(), &bin, &model, "host-1", "1", &calls, &secrets).await;
    let watch = watch_argv(secrets.clone());
    let first = host1
        .agent
        .thread(THREAD)
        .run("Please call ping with the text one.")
        .await
        .unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    assert_eq!(first.output, "First answer: the tool said pong.");
    assert_eq!(
        calls.lock().unwrap().as_slice(),
        [("host-1".to_owned(), "one".to_owned())]
    );
    let thread_id = host1
        .agent
        .thread(THREAD)
        .checkpoint()
        .await
        .unwrap()
        .unwrap()
        .resume_id;
    let (url1, var1, token1) = host1.tools.first();
    host1.agent.close().await;
    drop(host1);

    // ---- Host 2: new process, new port, token and env-var name; resume_only ----
    let host2 = host(dir.path(), &bin, &model, "host-2", "1", &calls, &secrets).await;
    let before = model.model_requests().len();
    let second = host2
        .agent
        .thread(THREAD)
        .resume_only()
        .run("Please call ping with the text two.")
        .await
        .unwrap();
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert_eq!(second.output, "Second answer: pong again.");
    let resumed_id = host2
        .agent
        .thread(THREAD)
        .checkpoint()
        .await
        .unwrap()
        .unwrap()
        .resume_id;
    assert_eq!(resumed_id, thread_id, "the same Codex thread continued");
    let (url2, var2, token2) = host2.tools.first();
    assert_ne!(url1, url2, "a fresh port");
    assert_ne!(var1, var2, "a fresh env-var name");
    assert_ne!(
        token1.expose_secret(),
        token2.expose_secret(),
        "a fresh token"
    );
    // The tool call reached the new server (its gate admits only the new token).
    assert_eq!(
        calls.lock().unwrap().last(),
        Some(&("host-2".to_owned(), "two".to_owned()))
    );
    // The resumed request carried the earlier turn.
    let requests = model.model_requests();
    let resumed = &requests[before];
    let history = resumed.input_texts().join("\n");
    assert!(
        history.contains("Please call ping with the text one."),
        "{history}"
    );
    assert!(
        history.contains("First answer: the tool said pong."),
        "{history}"
    );
    assert!(
        history.contains("Please call ping with the text two."),
        "{history}"
    );
    for request in &requests {
        assert_eq!(
            request.bearer(),
            Some(MODEL_KEY),
            "the model key reached codex's environment"
        );
    }
    // The old token is refused by the new server; the new one is accepted.
    assert_eq!(mcp_status(&url2, token1.expose_secret()).await, 401);
    assert_ne!(mcp_status(&url2, token2.expose_secret()).await, 401);

    // ---- An unknown thread is rejected from codex's own output ----
    unknown_thread_is_rejected(dir.path(), &bin, &model).await;

    // ---- A semantic change (a tool revision) is refused before codex is spawned ----
    let host3 = host(dir.path(), &bin, &model, "host-3", "2", &calls, &secrets).await;
    let requests_before = model.model_requests().len();
    let refused = host3
        .agent
        .thread(THREAD)
        .resume_only()
        .run("This must not run.")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ThreadError::Incompatible { .. }),
        "{refused}"
    );
    assert_eq!(host3.runs.load(Ordering::SeqCst), 0, "the driver never ran");
    assert_eq!(model.model_requests().len(), requests_before, "codex never ran");
    host3.agent.close().await;
    host2.agent.close().await;

    // ---- The canary scan ----
    let (saw_codex, argv_leaks) = watch.finish().await;
    assert!(saw_codex, "the argv watcher saw codex running");
    assert!(argv_leaks.is_empty(), "{argv_leaks:?}");
    let secrets = [
        MODEL_KEY.to_owned(),
        token1.expose_secret().to_owned(),
        token2.expose_secret().to_owned(),
    ];
    let texts = vec![
        ("events", format!("{:?}{:?}", first.events, second.events)),
        ("results", format!("{first:?}{second:?}")),
        ("error", format!("{refused} {refused:?}")),
        ("trace log", log.text()),
    ];
    for (what, text) in &texts {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a secret in the {what}");
        }
    }
    assert!(
        !log.text().is_empty(),
        "the TRACE subscriber captured the runs"
    );
    for file in files_under(dir.path()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        for secret in &secrets {
            assert!(
                !contains(&bytes, secret),
                "a secret in {} (store or namespace)",
                file.display()
            );
        }
    }
}
