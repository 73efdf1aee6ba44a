//! `agentctl run` against the real CLIs (Codex, Claude Code, CodeBuddy, Gemini), fully offline against
//! the test kit's mock model servers: a run in one process, `threads explain` saying resume,
//! and a resume-only run in a second process that resumes (each CLI keeps its state in the
//! credential namespace). Every invocation logs at TRACE, and no output holds the model key.
//! Without the binary a test prints `SKIPPED` locally and fails under CI.

use std::path::Path;
use std::process::{Command, Output};

use test_kit::RecordedRequest;
use test_kit::{Reply, Script};

use crate::support::{self, assert_no_secret, sqlite_url, text};

/// Shaped like an API key, so the trace output below would show it if anything logged it.
const MODEL_KEY: &str = "sk-agentctl-not-a-real-key-0123456789abcdef";

fn script() -> Script {
    Script::new()
        .then(Reply::text("first answer"))
        .then(Reply::text("second answer"))
}

struct Cli<'a> {
    runtime: &'a str,
    binary: &'a Path,
    model_url: String,
    dir: &'a Path,
    /// A PostgreSQL URL (with `schema`) instead of a SQLite file in `dir`.
    store: Option<String>,
    schema: String,
    /// Flags added to every invocation (`--worker=sandbox …`).
    extra: Vec<String>,
}

impl<'a> Cli<'a> {
    /// `runtime` (its binary `binary`, its model at `model_url`) on a SQLite store in `dir`.
    fn on_sqlite(runtime: &'a str, binary: &'a Path, model_url: String, dir: &'a Path) -> Self {
        Cli {
            runtime,
            binary,
            model_url,
            dir,
            store: None,
            schema: String::new(),
            extra: Vec::new(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let work = self.dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut command = support::command();
        match &self.store {
            Some(url) => command
                .arg("--store")
                .arg(url)
                .args(["--pg-schema", &self.schema]),
            None => command
                .arg("--store")
                .arg(sqlite_url(&self.dir.join("threads.sqlite3"))),
        };
        command
            .args(args)
            .args(["--runtime", self.runtime, "--model", "mock-model"])
            .arg("--runtime-bin")
            .arg(self.binary)
            .args(["--provider-url", &self.model_url])
            .args(["--provider-key-env", "MOCK_MODEL_KEY"])
            .args(["--namespace", "user:agentctl-test", "--base"])
            .arg(self.dir.join("rt"))
            .arg("--workspace")
            .arg(&work)
            .args(&self.extra)
            .env("MOCK_MODEL_KEY", MODEL_KEY)
            .env("RUST_LOG", "trace");
        command
    }
}

/// Run, explain, resume in a second process; the last model request carries the first turn.
fn resumes_across_processes(cli: &Cli<'_>, model_requests: impl Fn() -> Vec<RecordedRequest>) {
    let first = cli.run(&["run", "--thread", "c", "hello"]);
    assert!(first.status.success(), "{first:?}");
    let out = text(&first.stdout);
    assert!(out.contains("first answer"), "{out}");
    assert!(out.contains("session started"), "{out}");

    let explain = cli.run(&["threads", "explain", "c", "--resume-only"]);
    assert!(explain.status.success(), "{explain:?}");
    assert!(
        text(&explain.stdout).starts_with("resume: record "),
        "{explain:?}"
    );

    let second = cli.run(&["run", "--thread", "c", "--resume-only", "and again"]);
    assert!(second.status.success(), "{second:?}");
    let out = text(&second.stdout);
    assert!(out.contains("second answer"), "{out}");
    assert!(out.contains("session resumed"), "{out}");
    let requests = model_requests();
    let last = requests.last().unwrap();
    assert!(
        last.body().to_string().contains("first answer"),
        "the resumed request carries the first turn"
    );
    for output in [&first, &second, &explain] {
        assert_no_secret(output, MODEL_KEY);
    }
}

#[test]
fn codex_resumes_across_processes() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "agentctl run --runtime codex")
    else {
        return;
    };
    let model = test_kit::responses::MockResponses::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli::on_sqlite("codex", &binary, model.base_url(), dir.path());
    resumes_across_processes(&cli, || model.requests());
}

/// The same through a worker in a bubblewrap sandbox: one flag, and the Thread resumes across
/// processes as in process (each run starts its own worker).
#[test]
fn codex_resumes_across_processes_through_a_sandboxed_worker() {
    let Some(binary) =
        test_kit::real_cli::binary("CODEX_BIN", "agentctl run --runtime codex --worker=sandbox")
    else {
        return;
    };
    let model = test_kit::responses::MockResponses::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cli = Cli::on_sqlite("codex", &binary, model.base_url(), dir.path());
    cli.extra = vec![
        "--worker=sandbox".to_owned(),
        "--worker-bin".to_owned(),
        crate::worker::worker_bin().display().to_string(),
    ];
    resumes_across_processes(&cli, || model.requests());
}

#[test]
fn claude_code_resumes_across_processes() {
    let Some(binary) =
        test_kit::real_cli::binary("CLAUDE_BIN", "agentctl run --runtime claude-code")
    else {
        return;
    };
    let model = test_kit::anthropic::MockAnthropic::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli::on_sqlite("claude-code", &binary, model.base_url(), dir.path());
    resumes_across_processes(&cli, || model.model_requests());
}

#[test]
fn codebuddy_resumes_across_processes() {
    let Some(binary) =
        test_kit::real_cli::binary("CODEBUDDY_BIN", "agentctl run --runtime codebuddy")
    else {
        return;
    };
    let model = test_kit::chat::MockChat::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli::on_sqlite("codebuddy", &binary, model.base_url(), dir.path());
    resumes_across_processes(&cli, || model.model_requests());
}

#[test]
fn gemini_resumes_across_processes() {
    let Some(binary) = test_kit::real_cli::binary("GEMINI_BIN", "agentctl run --runtime gemini")
    else {
        return;
    };
    let model = test_kit::gemini::MockGemini::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli::on_sqlite("gemini", &binary, model.base_url(), dir.path());
    resumes_across_processes(&cli, || model.model_requests());
    // The key reached Gemini (and so the mock) through the typed option.
    for request in model.model_requests() {
        assert_eq!(request.bearer(), Some(MODEL_KEY));
    }
}

/// Processes whose environment mentions `needle` (the test's unique directory).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && String::from_utf8_lossy(&environ).contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn ctrl_c_during_a_run_leaves_no_child_and_no_record() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "agentctl run, interrupted") else {
        return;
    };
    // The model answers only after a minute: the run is in flight when SIGINT arrives.
    let model = test_kit::responses::MockResponses::start(
        Script::new().then(Reply::text("too late").delayed(std::time::Duration::from_secs(60))),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli::on_sqlite("codex", &binary, model.base_url(), dir.path());
    let mut command = cli.command(&["run", "--thread", "interrupted", "hello"]);
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while model.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "codex never asked the model"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let unique = dir.path().join("rt").display().to_string();
    assert!(
        !processes_mentioning(&unique).is_empty(),
        "the runtime runs in the namespace"
    );

    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "agentctl did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "a cancelled run is a failure");

    // No child left behind (the driver kills the process group), and nothing persisted.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_mentioning(&unique).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "runtime processes outlived agentctl: {:?}",
            processes_mentioning(&unique)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let list = support::command()
        .arg("--store")
        .arg(sqlite_url(&dir.path().join("threads.sqlite3")))
        .args(["threads", "list", "--json", "--archived"])
        .output()
        .unwrap();
    assert!(list.status.success(), "{list:?}");
    assert!(list.stdout.is_empty(), "no record: {}", text(&list.stdout));
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn codex_resumes_when_its_mcp_server_moves_to_another_port_and_token() {
    mcp_moved(None);
}

#[test]
fn postgres_store_codex_resumes_when_its_mcp_server_moves() {
    mcp_moved(Some(support::postgres_url()));
}

/// Run, then (a "restart": a second process) resume-only with the MCP server on another port
/// and token, on SQLite or PostgreSQL.
fn mcp_moved(store: Option<String>) {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "agentctl run, MCP server moved")
    else {
        return;
    };
    let model = test_kit::responses::MockResponses::start(script()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        store,
        schema: support::unique_schema("agentctl_codex"),
        ..Cli::on_sqlite("codex", &binary, model.base_url(), dir.path())
    };
    let run = |port: u16, token: &str, args: &[&str]| {
        cli.command(args)
            .arg("--mcp")
            .arg(format!("ui=http://127.0.0.1:{port}/mcp"))
            .args(["--mcp-bearer-env", "ui=UI_TOKEN"])
            .env("UI_TOKEN", token)
            .output()
            .unwrap()
    };
    let first = run(
        closed_port(),
        "ui-token-one-0123456789",
        &["run", "--thread", "moved", "hello"],
    );
    assert!(first.status.success(), "{first:?}");
    assert!(text(&first.stdout).contains("session started"));
    let second = run(
        closed_port(),
        "ui-token-two-0123456789",
        &["run", "--thread", "moved", "--resume-only", "again"],
    );
    assert!(second.status.success(), "{second:?}");
    assert!(
        text(&second.stdout).contains("session resumed"),
        "{second:?}"
    );
    for output in [&first, &second] {
        assert_no_secret(output, "ui-token-");
    }
}
