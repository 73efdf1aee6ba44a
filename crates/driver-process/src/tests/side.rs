//! A side command's output: the stdout lines that fit the line limit together, and the exit.

use driver_spi::ExitStatus;
use fake_cli::{Rule, Scenario};

use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::tests::support::{fixture, limits};

#[tokio::test]
async fn lines_are_kept_up_to_the_line_limit_then_counted() {
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout("aaaa")
            .stdout("bbbb")
            .stdout("cc")
            .stdout("dddd")
            .stdout("e"),
    );
    let limits = limits().with_max_line_bytes(10);
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    let out = process.collect().await.unwrap();
    // "e" would fit after "dddd" was dropped, but the kept lines stay a prefix.
    assert_eq!(out.stdout, ["aaaa", "bbbb", "cc"]);
    assert_eq!(out.dropped_lines, 2);
    assert_eq!(out.finished.status, ExitStatus::Success);
    let debug = format!("{out:?}");
    assert!(debug.contains("stdout_lines: 3"), "{debug}");
    assert!(!debug.contains("aaaa"), "{debug}");
}

#[tokio::test]
async fn an_unsuccessful_exit_is_reported_not_an_error() {
    let fx = fixture();
    let scenario = Scenario::new().rule(Rule::any().stdout("partial").stderr("nope").exit(3));
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    let out = process.collect().await.unwrap();
    assert_eq!(out.stdout, ["partial"]);
    assert_eq!(out.finished.status, ExitStatus::Code(3));
    assert_eq!(out.finished.stderr_tail, "nope\n");
}

#[tokio::test]
async fn a_read_error_is_the_error() {
    let fx = fixture();
    let scenario = Scenario::new().rule(Rule::any().stdout("0123456789ABC"));
    let limits = limits().with_max_line_bytes(10);
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    let err = process.collect().await.unwrap_err();
    assert!(
        matches!(err, ProcessError::LineTooLong { limit: 10 }),
        "{err:?}"
    );
}
