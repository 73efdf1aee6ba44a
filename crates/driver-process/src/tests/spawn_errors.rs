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

/// Issue 40: a missing program reaches the host as a typed failure that names its path and
/// says what to do; a file that cannot be executed (no `x` bit, a directory) is
/// `NotExecutable`, not an opaque spawn error.
#[tokio::test]
async fn a_missing_or_unexecutable_program_is_named_by_its_path() {
    let fx = fixture();
    let err =
        CliProcess::spawn(&fx.env, fx.command("/nonexistent/bin/codex"), limits()).unwrap_err();
    let failure = err.to_run_failure(None);
    let shown = driver_spi::DriverError::Failed(failure.clone()).to_string();
    assert!(
        shown.contains("`/nonexistent/bin/codex` not found"),
        "{shown}"
    );
    assert_eq!(
        failure.program.map(|p| p.problem),
        Some(driver_spi::ProgramProblem::NotFound)
    );

    let plain = fx.path("plain-file");
    std::fs::write(&plain, "not a program").unwrap();
    // Executable, but not a format this system runs (ENOEXEC: no `#!`, another platform's
    // binary).
    let garbage = fx.path("garbage");
    std::fs::write(&garbage, [0u8, 1, 2, 3, 0xff]).unwrap();
    std::fs::set_permissions(
        &garbage,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for program in [plain, fx.path(""), garbage] {
        let program = program.to_string_lossy().into_owned();
        let err = CliProcess::spawn(&fx.env, fx.command(&program), limits()).unwrap_err();
        assert!(
            matches!(err, ProcessError::NotExecutable { .. }),
            "{program}: {err:?}"
        );
        let shown = driver_spi::DriverError::from(err).to_string();
        assert!(
            shown.contains(&format!("`{program}` is not executable")),
            "{shown}"
        );
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
