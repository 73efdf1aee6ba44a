//! Idle and total timeouts. Assertions are about outcomes only, never about elapsed time.

use std::time::Duration;

use driver_spi::{ExitStatus, FailureKind};
use fake_cli::{Rule, Scenario};

use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::tests::support::{eventually, fixture, group_is_gone, limits};

#[tokio::test]
async fn a_hang_is_an_idle_timeout_and_reading_can_resume() {
    let fx = fixture();
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout("first")
            .sleep_ms(1500)
            .stdout("late")
            .hang(),
    );
    let limits = limits().with_idle_timeout(Duration::from_millis(300));
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("first"));
    let err = process.next_line().await.unwrap_err();
    assert!(
        matches!(err, ProcessError::IdleTimeout { after } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    assert_eq!(err.failure_kind(), FailureKind::Timeout);
    // An idle timeout loses nothing: the late line is still delivered.
    let mut late = None;
    for _ in 0..100 {
        match process.next_line().await {
            Err(ProcessError::IdleTimeout { .. }) => {}
            other => {
                late = Some(other.unwrap());
                break;
            }
        }
    }
    assert_eq!(late.flatten().as_deref(), Some("late"));
    let pid = process.pid();
    drop(process);
    assert!(eventually(|| group_is_gone(pid, &[])));
}

#[tokio::test]
async fn steady_output_still_hits_the_total_timeout() {
    let fx = fixture();
    let mut rule = Rule::any();
    for _ in 0..400 {
        rule = rule.sleep_ms(50).stdout("tick");
    }
    let scenario = Scenario::new().rule(rule);
    let limits = limits()
        .with_idle_timeout(Duration::from_secs(20))
        .with_total_timeout(Duration::from_millis(700));
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    let err = loop {
        match process.next_line().await {
            Ok(Some(line)) => assert_eq!(line, "tick"),
            Ok(None) => panic!("the fake finished before the total timeout"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, ProcessError::TotalTimeout { .. }), "{err:?}");
    // Every later call fails the same way.
    let again = process.next_line().await.unwrap_err();
    assert!(
        matches!(again, ProcessError::TotalTimeout { .. }),
        "{again:?}"
    );
    let finished = process.wait().await.unwrap();
    assert_eq!(finished.status, ExitStatus::TimedOut);
    assert_eq!(finished.failure().unwrap().kind, FailureKind::Timeout);
}

#[tokio::test]
async fn wait_ends_a_process_that_outlives_the_total_timeout() {
    let fx = fixture();
    let scenario = Scenario::new().rule(Rule::any().stderr("stuck").hang());
    let limits = limits().with_total_timeout(Duration::from_millis(500));
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits).unwrap();
    let pid = process.pid();
    let finished = process.wait().await.unwrap();
    assert_eq!(finished.status, ExitStatus::TimedOut);
    assert_eq!(finished.stderr_tail, "stuck\n");
    assert!(eventually(|| group_is_gone(pid, &[])));
}
