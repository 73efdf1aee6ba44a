//! The `--version` probe: [`probe_version`] runs a CLI through the same isolated spawn as a
//! turn; [`VersionCheck`] caches its first success per driver.

use std::path::Path;
use std::time::Duration;

use driver_spi::ExitStatus;
use runtime_env::RuntimeEnv;

use crate::command::{CliCommand, Limits};
use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::version::Version;

/// Runs `<program> --version` in `env` (through the same isolated spawn as a turn, in its own
/// process group) and checks the version against `minimum`.
///
/// The version is the first `x.y.z` on stdout, or else in the stderr tail. `timeout` bounds
/// the whole probe.
///
/// # Errors
///
/// [`ProcessError::NotFound`] when the program is missing, [`ProcessError::TotalTimeout`] when it
/// does not finish in time, [`ProcessError::VersionProbeFailed`] when it exits unsuccessfully,
/// [`ProcessError::VersionUnparseable`] when it prints no version, [`ProcessError::VersionTooOld`]
/// when the version is below `minimum`, and the other errors of starting the program.
pub async fn probe_version(
    env: &RuntimeEnv,
    program: &Path,
    minimum: Version,
    timeout: Duration,
) -> Result<Version, ProcessError> {
    let limits = Limits::default()
        .with_idle_timeout(timeout)
        .with_total_timeout(timeout)
        .with_max_line_bytes(64 << 10)
        .with_stderr_tail_bytes(4 << 10)
        .with_kill_grace(Limits::default().kill_grace.min(timeout));
    // No turn: the environment's secrets are all the probe can carry.
    let command = CliCommand::new(program, env.redactor()).arg("--version");
    let mut process = CliProcess::spawn(env, command, limits)?;
    let mut found = None;
    loop {
        match process.next_line().await {
            Ok(Some(line)) => {
                if found.is_none() {
                    found = Version::find_in(&line);
                }
            }
            Ok(None) => break,
            Err(ProcessError::LineTooLong { .. } | ProcessError::NonUtf8 { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let finished = process.wait().await?;
    match finished.status {
        ExitStatus::Success => {}
        ExitStatus::TimedOut => return Err(ProcessError::TotalTimeout { after: timeout }),
        status => return Err(ProcessError::VersionProbeFailed { status }),
    }
    let found = found
        .or_else(|| Version::find_in(&finished.stderr_tail))
        .ok_or(ProcessError::VersionUnparseable)?;
    if found < minimum {
        return Err(ProcessError::VersionTooOld { found, minimum });
    }
    Ok(found)
}

/// A binary's version, probed with [`probe_version`] at most once per driver instance: the
/// first successful probe is cached, and a failed probe is retried on the next call (the
/// binary may be installed meanwhile).
#[derive(Debug, Default)]
pub struct VersionCheck {
    version: tokio::sync::OnceCell<Version>,
}

impl VersionCheck {
    /// A check that has not probed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached version, or the result of probing `program` in `env` now.
    ///
    /// # Errors
    /// The errors of [`probe_version`].
    pub async fn get(
        &self,
        env: &RuntimeEnv,
        program: &Path,
        minimum: Version,
        timeout: Duration,
    ) -> Result<Version, ProcessError> {
        self.version
            .get_or_try_init(|| probe_version(env, program, minimum, timeout))
            .await
            .copied()
    }
}
