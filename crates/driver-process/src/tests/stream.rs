//! Reading stdout: lines, JSON, over-long lines and bad bytes.

use driver_spi::ExitStatus;
use fake_cli::{Rule, Scenario};

use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::tests::support::{fixture, limits};

#[tokio::test]
async fn lines_are_streamed_in_order_then_end() {
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout(r#"{"type":"thread.started","id":"${NEW_UUID}"}"#)
            .stdout("")
            .sleep_ms(50)
            .stdout(r#"{"type":"turn.completed","id":"${NEW_UUID}"}"#),
    );
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    let first = process.next_json().await.unwrap().unwrap();
    assert_eq!(process.line_number(), 1);
    // The blank line is skipped by next_json but still counted.
    let second = process.next_json().await.unwrap().unwrap();
    assert_eq!(process.line_number(), 3);
    assert_eq!(first["type"], "thread.started");
    assert_eq!(second["type"], "turn.completed");
    assert_eq!(first["id"], second["id"]);
    assert_eq!(process.next_line().await.unwrap(), None);
    assert_eq!(process.next_line().await.unwrap(), None);
    let finished = process.wait().await.unwrap();
    assert_eq!(finished.status, ExitStatus::Success);
    assert_eq!(crate::process::failure_kind(finished.status), None);
    assert!(finished.failure().is_none());
}

/// Peak and current resident memory of this process, in bytes (Linux).
fn memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

#[tokio::test]
async fn an_over_long_line_is_an_error_and_never_buffered_whole() {
    const MIB: usize = 1 << 20;
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout_unterminated_bytes(64 * MIB as u64)
            .stdout(" <- end of the long line")
            .stdout("after"),
    );
    let before = memory();
    let limits = limits().with_max_line_bytes(MIB);
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    let err = process.next_line().await.unwrap_err();
    assert!(
        matches!(err, ProcessError::LineTooLong { limit } if limit == MIB),
        "{err:?}"
    );
    // The rest of the 64 MiB line is skipped; reading resumes after it.
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("after"));
    assert_eq!(process.next_line().await.unwrap(), None);
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);

    if let (Some((_, rss_before)), Some((peak_after, _))) = (before, memory()) {
        // Holding the line would have added 64 MiB; the bound is one limit plus a buffer.
        assert!(
            peak_after < rss_before + 40 * MIB as u64,
            "peak {peak_after} vs {rss_before} before"
        );
    }
}

#[tokio::test]
async fn malformed_json_names_the_line_not_the_content() {
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout(r#"{"ok":1}"#)
            .stdout("not json: sk-proj-should-not-leak-0123456789")
            .stdout(r#"{"ok":2}"#),
    );
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    assert_eq!(process.next_json().await.unwrap().unwrap()["ok"], 1);
    let err = process.next_json().await.unwrap_err();
    assert!(
        matches!(err, ProcessError::MalformedJson { line: 2 }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("not json"));
    let failure = match err.into_driver_error() {
        driver_spi::DriverError::Failed(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(failure.kind, driver_spi::FailureKind::Protocol);
    assert!(!failure.message.contains("sk-proj"));
    // The stream continues after the bad line.
    assert_eq!(process.next_json().await.unwrap().unwrap()["ok"], 2);
    process.wait().await.unwrap();
}

#[tokio::test]
async fn non_utf8_lines_are_typed_errors_and_crlf_is_trimmed() {
    let fx = fixture();
    // printf from the host PATH: the fake's scenarios are UTF-8 by construction.
    let command = fx.command("printf").arg(r"ok\r\n\377\376\nnext\nlast");
    let mut process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ok"));
    let err = process.next_line().await.unwrap_err();
    assert!(matches!(err, ProcessError::NonUtf8 { line: 2 }), "{err:?}");
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("next"));
    // A final line without a newline is still a line.
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("last"));
    assert_eq!(process.next_line().await.unwrap(), None);
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);
}

#[tokio::test]
async fn wait_discards_unread_output_so_a_chatty_child_can_finish() {
    let fx = fixture();
    let mut rule = Rule::any();
    for i in 0..2000 {
        rule = rule.stdout(format!("{i:0>200}"));
    }
    let scenario = Scenario::new().rule(rule.exit(0));
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    // 400 KB of output, never read: more than a pipe holds.
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);
}
