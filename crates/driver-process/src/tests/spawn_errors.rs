//! Start failures.

use fake_cli::Scenario;

use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::tests::support::{fixture, limits};

#[tokio::test]
async fn a_missing_program_is_not_found() {
    let fx = fixture();
    for program in [
        "/nonexistent/bin/codex",
        "definitely-not-an-installed-cli-4f2a",
    ] {
        let err = CliProcess::spawn(&fx.env, fx.command(program), limits()).unwrap_err();
        assert!(
            matches!(err, ProcessError::NotFound { .. }),
            "{program}: {err:?}"
        );
        assert_eq!(err.failure_kind(), driver_spi::FailureKind::Process);
    }
}

#[tokio::test]
async fn a_missing_working_directory_is_a_spawn_error_not_a_missing_program() {
    let fx = fixture();
    let command = fx.fake(&Scenario::new()).cwd(fx.path("no-such-dir"));
    let err = CliProcess::spawn(&fx.env, command, limits()).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }), "{err:?}");
}

#[test]
fn spawning_outside_a_runtime_is_an_error() {
    let fx = fixture();
    let err = CliProcess::spawn(&fx.env, fx.fake(&Scenario::new()), limits()).unwrap_err();
    assert!(matches!(err, ProcessError::NoRuntime), "{err:?}");
}
