//! `agentctl run --runtime codex` against the real `codex` binary, fully offline against the
//! test kit's mock Responses API: a run in one process, a resume-only run in a second process
//! (Codex keeps its state in the namespace), and `threads explain` agreeing with both.
//! Without `CODEX_BIN` it prints `SKIPPED` locally and fails under CI.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::process::{Command, Output};

use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};

fn agentctl(codex: &Path, dir: &Path, model_url: &str, args: &[&str]) -> Output {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    Command::new(env!("CARGO_BIN_EXE_agentctl"))
        .arg("--store")
        .arg(format!("sqlite:{}", dir.join("threads.sqlite3").display()))
        .args(args)
        .args(["--runtime", "codex", "--model", "mock-model"])
        .arg("--codex-bin")
        .arg(codex)
        .args([
            "--provider-url",
            model_url,
            "--provider-key-env",
            "MOCK_MODEL_KEY",
        ])
        .args(["--namespace", "user:agentctl-test", "--base"])
        .arg(dir.join("rt"))
        .arg("--workspace")
        .arg(&work)
        .env("MOCK_MODEL_KEY", "not-a-real-key")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn codex_runs_resumes_across_processes_and_explain_agrees() {
    let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "agentctl run --runtime codex")
    else {
        return;
    };
    let model = MockResponses::start(
        Script::new()
            .then(Reply::text("first answer"))
            .then(Reply::text("second answer")),
    )
    .unwrap();
    let url = model.base_url();
    let dir = tempfile::tempdir().unwrap();

    let first = agentctl(&codex, dir.path(), &url, &["run", "--thread", "c", "hello"]);
    assert!(first.status.success(), "{first:?}");
    let out = text(&first.stdout);
    assert!(out.contains("first answer"), "{out}");
    assert!(out.contains("session started"), "{out}");

    let explain = agentctl(
        &codex,
        dir.path(),
        &url,
        &["threads", "explain", "c", "--resume-only"],
    );
    assert!(explain.status.success(), "{explain:?}");
    assert!(
        text(&explain.stdout).starts_with("resume: record "),
        "{explain:?}"
    );

    let second = agentctl(
        &codex,
        dir.path(),
        &url,
        &["run", "--thread", "c", "--resume-only", "and again"],
    );
    assert!(second.status.success(), "{second:?}");
    let out = text(&second.stdout);
    assert!(out.contains("second answer"), "{out}");
    assert!(out.contains("session resumed"), "{out}");
    // The resumed request carried the first turn: Codex resumed its own thread.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body().to_string().contains("first answer"));
    for output in [&first, &second, &explain] {
        assert!(!text(&output.stdout).contains("not-a-real-key"));
        assert!(!text(&output.stderr).contains("not-a-real-key"));
    }
}
