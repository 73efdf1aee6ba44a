//! The real `codex app-server`, resident, fully offline against the test kit's Responses
//! mock: the restart scenario with its canary scan; two turns of one Thread on one live
//! process; a token rotation that retires the process and resumes the thread on a new one,
//! whose tool call uses the new token; a fork with its parent's history; `Agent::close`
//! leaving no process. Skipped with a visible line without `CODEX_BIN`; never under CI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent::tools::{HostedTool, ToolOutput};
use agent::{Agent, SessionOutcome};
use driver_cli::{Limits, PoolLimits, ProcessMode};
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use driver_spi::ProcessLifecycle as _;
use hosted_tools::{HostedToolsProvider, ToolSet};
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::responses::MockResponses;
use test_kit::restart::{self, Secrets, Setup, TOOL_SERVER};
use test_kit::{Reply, Script};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// The model API key: a canary that must reach only Codex's environment.
const MODEL_KEY: &str = "model-key-canary-app-server-3e81";

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
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .unwrap()
}

/// A resident Codex driver over the mock.
fn driver(dir: &Path, bin: &Path, model: &MockResponses) -> CodexDriver {
    let options = CodexOptions::new()
        .with_binary(bin)
        .with_model("mock-model")
        .with_provider(
            ModelProvider::new("mock", model.base_url())
                .with_env_key("MOCK_MODEL_KEY")
                .with_request_max_retries(0)
                .with_stream_max_retries(0),
        )
        .with_process_mode(ProcessMode::Resident(PoolLimits::default()))
        .with_limits(
            Limits::default()
                .with_idle_timeout(std::time::Duration::from_secs(90))
                .with_total_timeout(std::time::Duration::from_secs(240)),
        );
    CodexDriver::new(Arc::new(namespace(dir)), options)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The pids of every running process (the Node shim and the native binary) of an
/// `app-server` whose `CODEX_HOME` is `home`, from `/proc`.
fn app_servers(home: &Path) -> BTreeSet<u32> {
    let want = format!("CODEX_HOME={}", home.display());
    let mut pids = BTreeSet::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z');
        let has = |bytes: &[u8], s: &str| bytes.split(|b| *b == 0).any(|w| w == s.as_bytes());
        if !zombie && has(&cmdline, "app-server") && has(&environ, &want) {
            pids.insert(pid);
        }
    }
    pids
}

fn codex_home(driver: &CodexDriver) -> PathBuf {
    driver
        .runtime_env()
        .state_dir(&driver_codex::RUNTIME.descriptor)
        .unwrap()
        .to_owned()
}

#[test]
fn codex_app_server_resumes_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex app-server end to end against the real codex",
    ) else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockResponses::start(restart::script()).unwrap();
    runtime().block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            driver: &|_| Arc::new(driver(dir.path(), &bin, &model)),
            model_requests: &|| model.model_requests(),
            argv_marker: "app-server",
            secrets: Secrets::new([MODEL_KEY.to_owned()]),
            log,
        })
        .await;
        let resident = driver(dir.path(), &bin, &model);
        restart::unknown_session_is_rejected(&resident, &|| model.model_requests()).await;
        resident.close_processes().await.unwrap();
        assert!(app_servers(&codex_home(&resident)).is_empty());
    });
}

/// Tool calls that reached a host's `ping`: `(host, text)`.
type Calls = Arc<Mutex<Vec<(&'static str, String)>>>;

/// An agent of host `label` over the shared driver and store, with its own hosted `ping`
/// (its own port, token and env-var name).
async fn host(label: &'static str, driver: Arc<CodexDriver>, dir: &Path, calls: &Calls) -> Agent {
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
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((label, text.clone()));
                Ok(ToolOutput::text(format!("pong from {label}: {text}")))
            }
        },
    )
    .with_revision("1");
    let tools = HostedToolsProvider::new(ToolSet::new([ping]).unwrap());
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .unwrap();
    Agent::builder(driver)
        .store(Arc::new(store))
        .provider(Arc::new(tools))
        .workspace(dir.join("workspace").to_str().unwrap())
        .build()
        .unwrap()
}

#[test]
fn codex_app_server_reuses_recycles_forks_and_closes() {
    let Some(bin) = test_kit::real_cli::binary(
        "CODEX_BIN",
        "driver-codex app-server process pool against the real codex",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let script = Script::new()
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "one"}),
        ))
        .then(Reply::text("Answer one."))
        .then(Reply::text("Answer two, same process."))
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "three"}),
        ))
        .then(Reply::text("Answer three, after the rotation."))
        .then(Reply::text("Answer of the fork."));
    let model = MockResponses::start(script).unwrap();
    runtime().block_on(async {
        let driver = Arc::new(driver(dir.path(), &bin, &model));
        let home = codex_home(&driver);
        let calls: Calls = Arc::default();

        // Two turns of one Thread on one live process.
        let host1 = host("host-1", Arc::clone(&driver), dir.path(), &calls).await;
        let one = host1.thread("t").run("Call ping with one.").await.unwrap();
        assert_eq!(one.session, SessionOutcome::Started);
        assert_eq!(one.output, "Answer one.");
        let first = app_servers(&home);
        assert!(
            !first.is_empty(),
            "a resident app-server runs between turns"
        );
        let two = host1.thread("t").run("Just answer.").await.unwrap();
        assert_eq!(two.output, "Answer two, same process.");
        assert_eq!(app_servers(&home), first, "the same process, no respawn");
        let stats = driver.pool_stats().unwrap();
        assert_eq!((stats.started, stats.reused), (1, 1));
        assert_eq!(
            calls.lock().unwrap().as_slice(),
            [("host-1", "one".to_owned())]
        );

        // A rotation: host 2's tools have a new port, token and env-var name.
        let host2 = host("host-2", Arc::clone(&driver), dir.path(), &calls).await;
        let before = model.model_requests().len();
        let three = host2
            .thread("t")
            .resume_only()
            .run("Call ping with three.")
            .await
            .unwrap();
        assert_eq!(three.session, SessionOutcome::Resumed);
        assert_eq!(three.output, "Answer three, after the rotation.");
        let rotated = app_servers(&home);
        assert!(
            rotated.is_disjoint(&first),
            "the old process exited and a new one serves"
        );
        assert_eq!(driver.pool_stats().unwrap().recycled, 1);
        assert_eq!(
            calls.lock().unwrap().last(),
            Some(&("host-2", "three".to_owned())),
            "the tool call reached host 2's server, which admits only the new token"
        );
        let history = model.model_requests()[before].input_texts().join("\n");
        for earlier in [
            "Call ping with one.",
            "Answer one.",
            "Answer two, same process.",
        ] {
            assert!(
                history.contains(earlier),
                "resumed without {earlier:?}: {history}"
            );
        }

        // A fork with its parent's history.
        let before = model.model_requests().len();
        let forked = host2
            .thread("t")
            .fork("t-fork")
            .run("Fork here.")
            .await
            .unwrap();
        assert_eq!(forked.output, "Answer of the fork.");
        let history = model.model_requests()[before].input_texts().join("\n");
        assert!(
            history.contains("Answer three, after the rotation."),
            "{history}"
        );
        let parent = host2.thread("t").checkpoint().await.unwrap().unwrap();
        let child = host2.thread("t-fork").checkpoint().await.unwrap().unwrap();
        assert_ne!(parent.resume_id, child.resume_id);

        // Agent::close leaves no process.
        host2.close().await;
        host1.close().await;
        assert!(
            app_servers(&home).is_empty(),
            "a process outlived Agent::close"
        );
    });
}
