//! [`Version`] and the `--version` probe.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use driver_spi::ExitStatus;
use runtime_env::RuntimeEnv;

use crate::command::{CliCommand, Limits};
use crate::error::CliError;
use crate::process::CliProcess;

/// A `major.minor.patch` version, ordered numerically.
///
/// ```
/// use driver_cli::Version;
///
/// let v = Version::new(0, 169, 0);
/// assert!(v > Version::new(0, 99, 12));
/// assert_eq!(v.to_string(), "0.169.0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major number.
    pub major: u64,
    /// The minor number.
    pub minor: u64,
    /// The patch number.
    pub patch: u64,
}

impl Version {
    /// A version.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// The first `x.y.z` in `text` whose first digit does not follow a digit or a dot (so
    /// `1.2.3` is found in `v1.2.3-rc1`, and nothing in `a.1.2.3`'s middle). Numbers that
    /// overflow `u64` are not versions.
    pub(crate) fn find_in(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        (0..bytes.len())
            .filter(|&i| {
                bytes[i].is_ascii_digit()
                    && (i == 0 || !(bytes[i - 1].is_ascii_digit() || bytes[i - 1] == b'.'))
            })
            .find_map(|i| parse_at(&bytes[i..]))
    }
}

/// `x.y.z` at the start of `bytes`.
fn parse_at(bytes: &[u8]) -> Option<Version> {
    let mut parts = [0u64; 3];
    let mut rest = bytes;
    for (n, part) in parts.iter_mut().enumerate() {
        if n > 0 {
            rest = rest.strip_prefix(b".")?;
        }
        let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        *part = std::str::from_utf8(&rest[..len]).ok()?.parse().ok()?;
        rest = &rest[len..];
    }
    Some(Version::new(parts[0], parts[1], parts[2]))
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Runs `<program> --version` in `env` (through the same isolated spawn as a turn, in its own
/// process group) and checks the version against `minimum`.
///
/// The version is the first `x.y.z` on stdout, or else in the stderr tail. `timeout` bounds
/// the whole probe.
///
/// # Errors
///
/// [`CliError::NotFound`] when the program is missing, [`CliError::TotalTimeout`] when it
/// does not finish in time, [`CliError::VersionProbeFailed`] when it exits unsuccessfully,
/// [`CliError::VersionUnparseable`] when it prints no version, [`CliError::VersionTooOld`]
/// when the version is below `minimum`, and the other errors of starting the program.
pub async fn probe_version(
    env: &RuntimeEnv,
    program: &Path,
    minimum: Version,
    timeout: Duration,
) -> Result<Version, CliError> {
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
            Err(CliError::LineTooLong { .. } | CliError::NonUtf8 { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let finished = process.wait().await?;
    match finished.status {
        ExitStatus::Success => {}
        ExitStatus::TimedOut => return Err(CliError::TotalTimeout { after: timeout }),
        status => return Err(CliError::VersionProbeFailed { status }),
    }
    let found = found
        .or_else(|| Version::find_in(&finished.stderr_tail))
        .ok_or(CliError::VersionUnparseable)?;
    if found < minimum {
        return Err(CliError::VersionTooOld { found, minimum });
    }
    Ok(found)
}

/// A binary's version, probed with [`probe_version`] at most once per driver instance: the
/// first successful probe is cached, and a failed probe is retried on the next call (the
/// binary may be installed meanwhile).
#[derive(Debug, Default)]
pub(crate) struct VersionCheck {
    version: tokio::sync::OnceCell<Version>,
}

impl VersionCheck {
    /// A check that has not probed yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The cached version, or the result of probing `program` in `env` now.
    ///
    /// # Errors
    /// The errors of [`probe_version`].
    pub(crate) async fn get(
        &self,
        env: &RuntimeEnv,
        program: &Path,
        minimum: Version,
        timeout: Duration,
    ) -> Result<Version, CliError> {
        self.version
            .get_or_try_init(|| probe_version(env, program, minimum, timeout))
            .await
            .copied()
    }
}
