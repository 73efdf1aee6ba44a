//! `cargo xtask ci`: every CI step in order, with headers and timings, stopping at the first
//! failure.
//!
//! Steps: rustfmt check, clippy with `-D warnings`, clippy on the lean builds (`agent` and
//! `thread-store` without default features), rustdoc with `-D warnings`, the workspace tests (PostgreSQL tests are
//! skipped, visibly, when `THREAD_STORE_POSTGRES_URL` is unset; real-binary driver tests print
//! `SKIPPED` when their binary variable is unset, and fail instead under CI), the public-API golden check,
//! the conformance registry (the suites themselves run once, in the test step), and `cargo deny` (licenses, bans, sources) when it is installed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::util::{cargo, display, env_is_set, run_inherited};

/// The variable that points the PostgreSQL tests at a server.
const POSTGRES_URL_VAR: &str = "THREAD_STORE_POSTGRES_URL";

/// The variables that point the real-binary driver tests at the installed CLIs
/// (`.ci/run` exports them; under CI a missing one fails its tests).
const REAL_CLI_VARS: &[&str] = &["CODEX_BIN", "CLAUDE_BIN", "CODEBUDDY_BIN", "GEMINI_BIN"];

/// What a step does.
enum Action {
    /// Run a command with inherited output.
    Command(Command),
    /// Run an in-process xtask command.
    Function(fn() -> anyhow::Result<()>),
    /// Report a visible skip (the step is not run).
    Skip(String),
}

struct Step {
    name: &'static str,
    /// A line printed right after the step header (e.g. which tests are skipped).
    note: Option<String>,
    action: Action,
}

/// Run all steps.
pub(crate) fn run() -> anyhow::Result<()> {
    let steps = steps();
    let total = steps.len();
    let started = Instant::now();
    for (index, step) in steps.into_iter().enumerate() {
        let header = match &step.action {
            Action::Command(cmd) => display(cmd),
            Action::Function(_) => format!("cargo xtask {}", step.name),
            Action::Skip(_) => "skipped".to_owned(),
        };
        println!("\n==> [{}/{total}] {}: {header}", index + 1, step.name);
        if let Some(note) = &step.note {
            println!("{note}");
        }
        let step_started = Instant::now();
        let result = match step.action {
            Action::Command(mut cmd) => run_inherited(&mut cmd),
            Action::Function(f) => f(),
            Action::Skip(why) => {
                println!("SKIPPED: {why}");
                Ok(())
            }
        };
        let elapsed = seconds(step_started.elapsed());
        if let Err(err) = result {
            println!("<== {} FAILED after {elapsed}", step.name);
            bail!("ci step `{}` failed: {err:#}", step.name);
        }
        println!("<== {} ok ({elapsed})", step.name);
    }
    println!(
        "\nci: all {total} steps passed in {}",
        seconds(started.elapsed())
    );
    Ok(())
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

fn steps() -> Vec<Step> {
    let mut test = cargo(["test", "--workspace", "--all-features", "--locked"]);
    let postgres = env_is_set(POSTGRES_URL_VAR);
    if !postgres {
        test.args(["--", "--skip", "postgres"]);
    }
    let mut steps = vec![
        Step {
            name: "fmt",
            note: None,
            action: Action::Command(cargo(["fmt", "--all", "--check"])),
        },
        Step {
            name: "clippy",
            note: None,
            action: Action::Command(cargo([
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--locked",
                "--",
                "-D",
                "warnings",
            ])),
        },
        Step {
            name: "lean build",
            note: Some(
                "agent and thread-store without default features: no adapters, no tool server"
                    .to_owned(),
            ),
            action: Action::Command(cargo([
                "clippy",
                "--package",
                "agent",
                "--package",
                "thread-store",
                "--no-default-features",
                "--locked",
                "--",
                "-D",
                "warnings",
            ])),
        },
    ];
    // Docs are part of the API: a broken intra-doc link is a defect, like a clippy warning.
    let mut docs = cargo([
        "doc",
        "--workspace",
        "--no-deps",
        "--all-features",
        "--locked",
    ]);
    docs.env("RUSTDOCFLAGS", "-D warnings");
    steps.push(Step {
        name: "docs",
        note: Some("rustdoc with -D warnings (broken intra-doc links fail)".to_owned()),
        action: Action::Command(docs),
    });
    let mut notes = Vec::new();
    if !postgres {
        notes.push(format!(
            "SKIPPED: PostgreSQL tests ({POSTGRES_URL_VAR} not set)"
        ));
    }
    for var in REAL_CLI_VARS.iter().filter(|v| !env_is_set(v)) {
        notes.push(format!(
            "SKIPPED: real-binary tests that need {var} (not set)"
        ));
    }
    steps.push(Step {
        name: "test",
        note: (!notes.is_empty()).then(|| notes.join("\n")),
        action: Action::Command(test),
    });
    steps.push(Step {
        name: "public-api",
        note: None,
        action: Action::Function(|| {
            crate::public_api::run(&crate::public_api::Options::parse(&[])?)
        }),
    });
    steps.push(Step {
        name: "conformance",
        note: Some("the suites ran in the test step; this checks the registry".to_owned()),
        action: Action::Function(crate::conformance::verify_registered),
    });
    steps.push(Step {
        name: "deny",
        note: None,
        action: if cargo_deny_installed() {
            Action::Command(cargo([
                "deny", "--locked", "check", "licenses", "bans", "sources",
            ]))
        } else {
            Action::Skip("cargo-deny not installed".to_owned())
        },
    });
    steps
}

fn cargo_deny_installed() -> bool {
    cargo(["deny", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
