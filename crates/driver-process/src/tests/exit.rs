//! Exit statuses, their classification, and the redacted stderr tail.

use driver_spi::{DriverError, ExitStatus, FailureKind};
use fake_cli::{Rule, Scenario};
use run_service::EnvBinding;

use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::process::failure_kind;
use crate::tests::support::{ENV_SECRET, fixture, limits};

#[tokio::test]
async fn a_crash_mid_stream_ends_the_stream_and_is_a_process_failure() {
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout(r#"{"type":"turn.started"}"#)
            .stderr("about to crash")
            .kill_self()
            .stdout("never printed"),
    );
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    assert!(process.next_json().await.unwrap().is_some());
    assert_eq!(process.next_json().await.unwrap(), None);
    let finished = process.wait().await.unwrap();
    assert_eq!(finished.status, ExitStatus::Signal(9));
    assert_eq!(failure_kind(finished.status), Some(FailureKind::Process));
    assert!(finished.stderr_tail.contains("about to crash"));
    let failure = finished.failure().unwrap();
    assert_eq!(failure.kind, FailureKind::Process);
    assert!(failure.message.contains("signal 9") && failure.message.contains("about to crash"));
}

#[tokio::test]
async fn exit_codes_are_reported_and_classified() {
    let fx = fixture();
    for (code, kind) in [(3, FailureKind::Process), (124, FailureKind::Timeout)] {
        let scenario = Scenario::new().rule(Rule::any().stderr("boom").exit(code));
        let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
        let finished = process.wait().await.unwrap();
        assert_eq!(finished.status, ExitStatus::Code(code));
        assert_eq!(failure_kind(finished.status), Some(kind));
        assert_eq!(finished.stderr_tail, "boom\n");
    }
    assert_eq!(
        failure_kind(ExitStatus::TimedOut),
        Some(FailureKind::Timeout)
    );
    assert_eq!(
        failure_kind(ExitStatus::Signal(24)),
        Some(FailureKind::Limit)
    );
    assert_eq!(
        failure_kind(ExitStatus::Signal(15)),
        Some(FailureKind::Process)
    );
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_and_redacted() {
    let fx = fixture();
    let binding = EnvBinding::new("OPENAI_API_KEY", "tenant-key-0123456789");
    let request_secret = EnvBinding::new("MCP_TOKEN", "request-only-secret-456");
    let mut rule = Rule::any();
    for i in 0..300 {
        rule = rule.stderr(format!("noise line {i:04} ............................"));
    }
    let scenario = Scenario::new().rule(
        rule.stderr("key tenant-key-0123456789 env env-injected-secret-789")
            .stderr("request request-only-secret-456 header Authorization: Bearer abc.def.ghi")
            .stderr("the last line")
            .stdout("done"),
    );
    // A turn's redactor knows the environment's secrets and the request's; the command's own
    // binding joins it.
    let mut redactor = fx.env.redactor();
    redactor.add_secret(request_secret.value().clone());
    let command = fx.fake_redacted(&scenario, redactor).secret_env([&binding]);
    let limits = limits().with_stderr_tail_bytes(512);
    let mut process = CliProcess::spawn(&fx.env, command, limits).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("done"));
    let finished = process.wait().await.unwrap();

    let tail = &finished.stderr_tail;
    assert!(tail.len() <= 512, "{} bytes", tail.len());
    assert!(tail.ends_with("the last line\n"), "{tail}");
    for secret in [
        "tenant-key-0123456789",
        ENV_SECRET,
        "request-only-secret-456",
        "abc.def.ghi",
    ] {
        assert!(!tail.contains(secret), "{secret} leaked: {tail}");
    }
    assert_eq!(tail.matches("[REDACTED]").count(), 4, "{tail}");
    assert!(!tail.contains("noise line 0000"));
}

#[tokio::test]
async fn stderr_tail_is_available_while_running() {
    let fx = fixture();
    let scenario = Scenario::new().rule(Rule::any().stderr("warming up").stdout("ready").hang());
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ready"));
    // The tail fills concurrently; poll without blocking the runtime.
    let mut tail = String::new();
    for _ in 0..1500 {
        tail = process.stderr_tail();
        if tail.ends_with('\n') {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(tail, "warming up\n");
    let finished = process.terminate().await;
    assert_eq!(finished.status, ExitStatus::Signal(15));
    assert_eq!(finished.stderr_tail, "warming up\n");
}

#[test]
fn errors_map_to_failure_kinds_without_content() {
    use std::time::Duration;
    let cases = [
        (
            ProcessError::IdleTimeout {
                after: Duration::from_millis(300),
            },
            FailureKind::Timeout,
        ),
        (
            ProcessError::TotalTimeout {
                after: Duration::from_secs(1),
            },
            FailureKind::Timeout,
        ),
        (
            ProcessError::LineTooLong { limit: 10 },
            FailureKind::Protocol,
        ),
        (ProcessError::NonUtf8 { line: 4 }, FailureKind::Protocol),
        (
            ProcessError::MalformedJson { line: 4 },
            FailureKind::Protocol,
        ),
        (
            ProcessError::NotFound {
                program: "codex".into(),
            },
            FailureKind::Process,
        ),
        (ProcessError::VersionUnparseable, FailureKind::Protocol),
    ];
    for (err, kind) in cases {
        assert_eq!(err.failure_kind(), kind);
        let shown = err.to_string();
        match err.into_driver_error() {
            DriverError::Failed(f) => {
                assert_eq!(f.kind, kind);
                assert_eq!(f.message, shown);
            }
            other => panic!("{other:?}"),
        }
    }
    let with_tail = ProcessError::TotalTimeout {
        after: Duration::from_secs(1),
    }
    .to_run_failure(Some("last words"));
    assert!(with_tail.message.ends_with("stderr:\nlast words"));
    // Display of a RunFailure is the kind only.
    assert_eq!(with_tail.to_string(), "timed out");
}
