//! A bad scenario never panics: one line on stderr, exit 97.

use std::process::Command;

use fake_cli::{BAD_SCENARIO_EXIT, SCENARIO_ENV};

use crate::support::stderr;

fn run_with_scenario_text(text: Option<&str>) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(fake_cli::binary_path());
    cmd.env_clear();
    if let Some(text) = text {
        let path = dir.path().join("scenario.json");
        std::fs::write(&path, text).unwrap();
        cmd.env(SCENARIO_ENV, &path);
    }
    cmd.output().unwrap()
}

fn assert_bad(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(BAD_SCENARIO_EXIT));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("fake-cli: "), "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked"));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_scenario_variable_is_reported() {
    assert_bad(
        &run_with_scenario_text(None),
        "FAKE_CLI_SCENARIO is not set",
    );
}

#[test]
fn an_unreadable_scenario_is_reported() {
    let out = Command::new(fake_cli::binary_path())
        .env_clear()
        .env(SCENARIO_ENV, "/nonexistent/scenario.json")
        .output()
        .unwrap();
    assert_bad(&out, "cannot read scenario");
}

#[test]
fn invalid_json_unknown_fields_and_unknown_steps_are_reported() {
    for (text, needle) in [
        ("{not json", "invalid scenario"),
        (r#"{"rules": [], "typo": 1}"#, "unknown field"),
        (
            r#"{"rules": [{"steps": [{"explode": true}]}]}"#,
            "unknown variant",
        ),
        (
            r#"{"rules": [{"steps": [{"exit": "zero"}]}]}"#,
            "invalid scenario",
        ),
        (
            r#"{"rules": [{"when_args_contain": "x", "steps": []}]}"#,
            "invalid scenario",
        ),
        (
            r#"{"rules": [{"steps": [{"stdout": "a", "stderr": "b"}]}]}"#,
            "invalid scenario",
        ),
        (
            r#"{"serve": [{"when_contains": ["x"], "typo": 1}]}"#,
            "unknown field",
        ),
        (r#"{"serve": [{"once": "yes"}]}"#, "invalid scenario"),
        (r#"{"serve_exit_delay_ms": -1}"#, "invalid scenario"),
    ] {
        assert_bad(&run_with_scenario_text(Some(text)), needle);
    }
}

#[test]
fn an_unwritable_record_is_reported() {
    let text = r#"{"record": "/nonexistent/dir/record.jsonl"}"#;
    assert_bad(&run_with_scenario_text(Some(text)), "cannot open record");
}

#[test]
fn an_unwritable_serve_record_is_reported_before_serving() {
    let text = r#"{"serve_record": "/nonexistent/dir/served.txt", "serve": [{}]}"#;
    assert_bad(
        &run_with_scenario_text(Some(text)),
        "cannot open serve record",
    );
}
