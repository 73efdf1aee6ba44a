//! `agentctl run` with a permission policy (`--allow`, `--ask`, `--deny`) and approvals
//! (`--approve`), on the reference runtime, whose `/tool <action> <name> [arguments]` prompt
//! makes it use a tool: allowed, the tool runs without a request; asked, the host's answer
//! decides (`--approve allow`, `--approve deny`, and the default without a terminal: deny;
//! on a terminal, a `y` typed at the prompt); the policy is part of the Thread's fingerprint.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::agentctl;

use std::path::Path;
use std::process::{Command, Output, Stdio};

const TOOL: &str = r#"/tool write notes {"path":"notes.txt"}"#;

fn run(root: &Path, thread: &str, flags: &[&str]) -> (Output, String) {
    let ws = root.to_str().unwrap();
    let args = [
        &["run", "--thread", thread, "--workspace", ws][..],
        flags,
        &[TOOL],
    ]
    .concat();
    let out = agentctl(root, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stderr)
}

#[test]
fn the_policy_and_the_answer_decide_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    // The default policy forbids writes: no request, the tool fails.
    let (out, err) = run(root, "default", &[]);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("[tool] notes") && err.contains("[tool] failed"),
        "{err}"
    );
    assert!(!err.contains("[approval]"), "{err}");

    // Allowed: no request, the tool runs.
    let (out, err) = run(root, "allowed", &["--allow", "write"]);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("[tool] failed") && !err.contains("[approval]"),
        "{err}"
    );

    // Asked: the answer decides.
    let (out, err) = run(root, "approved", &["--ask", "write", "--approve", "allow"]);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(r#"[approval] "approved""#), "{err}");
    assert!(!err.contains("[tool] failed"), "{err}");
    let (out, err) = run(root, "denied", &["--ask", "write", "--approve", "deny"]);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(r#"[approval] "denied""#) && err.contains("[tool] failed"),
        "{err}"
    );

    // Without a terminal the default is deny, and `ask` is refused.
    let (out, err) = run(root, "no-terminal", &["--ask", "write"]);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(r#"[approval] "denied""#), "{err}");
    let (out, err) = run(root, "no-terminal", &["--ask", "write", "--approve", "ask"]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs a terminal"), "{err}");

    // An action given two permissions is a usage error.
    let (out, err) = run(root, "twice", &["--allow", "write", "--deny", "write"]);
    assert_eq!(out.status.code(), Some(2), "{err}");
}

#[test]
fn a_wider_policy_does_not_resume_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (out, err) = run(root, "t", &[]);
    assert!(out.status.success(), "{err}");
    let (out, err) = run(root, "t", &["--allow", "write", "--resume-only"]);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("drifted") && err.contains("permissions"),
        "{err}"
    );
    let (out, err) = run(root, "t", &["--resume-only"]);
    assert!(out.status.success(), "the same policy resumes: {err}");
}

/// On a terminal (`script` gives agentctl a pseudo-terminal), the request is shown and a
/// typed `y` approves it.
#[test]
fn on_a_terminal_ask_shows_the_request_and_reads_the_answer() {
    if Command::new("script").arg("--version").output().is_err() {
        println!("SKIPPED: `script` (util-linux) is not installed");
        assert!(std::env::var_os("CI").is_none(), "CI must have `script`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = root.to_str().unwrap();
    let inner = format!(
        "{bin} --store sqlite:{db} run --thread t --workspace {ws} --ask write '{TOOL}'",
        bin = env!("CARGO_BIN_EXE_agentctl"),
        db = root.join("threads.sqlite3").display(),
    );
    let mut child = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env("XDG_DATA_HOME", root.join("xdg-data"))
        .env("HOME", root.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"y\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("[approve] write `notes`"), "{screen}");
    assert!(screen.contains(r#"[approval] "approved""#), "{screen}");
}
