//! `agentctl run` against the real CLIs (Codex, Claude Code, CodeBuddy), fully offline against
//! the test kit's mock model servers: a run in one process, `threads explain` saying resume,
//! and a resume-only run in a second process that resumes (each CLI keeps its state in the
//! credential namespace). Without the binary a test prints `SKIPPED` locally and fails under
//! CI.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::process::{Command, Output};

use test_kit::RecordedRequest;
use test_kit::{Reply, Script};

const MODEL_KEY: &str = "not-a-real-key-agentctl";

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
}

impl Cli<'_> {
    fn run(&self, args: &[&str]) -> Output {
        let work = self.dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        Command::new(env!("CARGO_BIN_EXE_agentctl"))
            .arg("--store")
            .arg(format!(
                "sqlite:{}",
                self.dir.join("threads.sqlite3").display()
            ))
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
            .env("MOCK_MODEL_KEY", MODEL_KEY)
            .output()
            .unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
        assert!(!text(&output.stdout).contains(MODEL_KEY));
        assert!(!text(&output.stderr).contains(MODEL_KEY));
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
    let cli = Cli {
        runtime: "codex",
        binary: &binary,
        model_url: model.base_url(),
        dir: dir.path(),
    };
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
    let cli = Cli {
        runtime: "claude-code",
        binary: &binary,
        model_url: model.base_url(),
        dir: dir.path(),
    };
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
    let cli = Cli {
        runtime: "codebuddy",
        binary: &binary,
        model_url: model.base_url(),
        dir: dir.path(),
    };
    resumes_across_processes(&cli, || model.model_requests());
}
