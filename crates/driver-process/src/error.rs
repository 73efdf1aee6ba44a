//! [`ProcessError`]: what can go wrong while running a CLI process.
//!
//! Messages are built from code constants, numbers, variable names and paths only: never a
//! secret value, an output line or stderr text (those go into the redacted
//! [`Finished::stderr_tail`](crate::process::Finished::stderr_tail) instead).

use std::error::Error as _;
use std::io;
use std::time::Duration;

use driver_spi::{
    DriverError, ExitStatus, FailureKind, ProgramProblem, ProgramUnavailable, RunFailure,
};

use crate::version::Version;

/// Running a CLI process failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// The program does not exist (or is not on the child's `PATH`).
    #[error("CLI program `{program}` not found")]
    NotFound {
        /// The program, as a path or a name looked up in the child's `PATH`.
        program: String,
    },
    /// The program exists but cannot be executed: a file without the execute permission, a
    /// directory, a file on a `noexec` mount, or one this system cannot run (no `#!`, another
    /// platform's binary).
    #[error("CLI program `{program}` is not executable")]
    NotExecutable {
        /// The program, as a path or a name looked up in the child's `PATH`.
        program: String,
    },
    /// The program exists but could not be started (permissions, bad working directory, …).
    /// `Display` shows the operating-system error (never a secret), which is therefore not
    /// also the [`source`](std::error::Error::source): a chain walker prints it once.
    #[error("could not start CLI program `{program}`: {error}")]
    Spawn {
        /// The program, as a path or a name looked up in the child's `PATH`.
        program: String,
        /// The operating-system error.
        error: io::Error,
    },
    /// No Tokio runtime is running on this thread.
    #[error("driver-cli needs a Tokio runtime with I/O and time enabled")]
    NoRuntime,
    /// A variable name is not `[A-Za-z_][A-Za-z0-9_]*` (at most 256 bytes).
    #[error("invalid environment variable name ({len} bytes)")]
    InvalidVarName {
        /// Length of the name; the name is not shown (it may be a misplaced value).
        len: usize,
    },
    /// The variable is managed by the runtime environment (HOME, XDG_*, TMPDIR, state
    /// variables) and a command may not override it.
    #[error("`{name}` is managed by the runtime environment and cannot be set on a command")]
    ReservedVar {
        /// The variable.
        name: String,
    },
    /// A run service's binding would set a variable a request may not set: the loader, an
    /// interpreter hook, `PATH`, TLS trust, a proxy, a model endpoint, the model key, or one
    /// the environment manages. The message names the variable and its class, never a value.
    #[error("`{name}` is {class}: a run service's binding may not set it")]
    RefusedRequestVar {
        /// The variable.
        name: String,
        /// Why it is refused.
        class: runtime_env::RefusedVar,
    },
    /// A credential variable was given as a plain variable; pass it as a secret (such as
    /// [`CliCommand::secret_env`](crate::command::CliCommand::secret_env)).
    #[error("`{name}` carries a credential: pass it as a secret binding")]
    CredentialVar {
        /// The variable.
        name: String,
    },
    /// An I/O operation on the process's pipes failed.
    /// `Display` shows the operating-system error, as [`Spawn`](Self::Spawn) does.
    #[error("I/O error while trying to {op}: {error}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The operating-system error.
        error: io::Error,
    },
    /// A stdout line is longer than [`Limits::max_line_bytes`](crate::command::Limits::max_line_bytes).
    #[error("stdout line longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// A stdout line is not valid JSON.
    #[error("stdout line {line} is not valid JSON")]
    MalformedJson {
        /// The 1-based line number.
        line: usize,
    },
    /// A stdout line is not valid UTF-8.
    #[error("stdout line {line} is not valid UTF-8")]
    NonUtf8 {
        /// The 1-based line number.
        line: usize,
    },
    /// No stdout line arrived within the idle timeout.
    #[error("no output line for {after:?}")]
    IdleTimeout {
        /// The idle timeout.
        after: Duration,
    },
    /// The run exceeded its total timeout.
    #[error("the run exceeded its total timeout of {after:?}")]
    TotalTimeout {
        /// The total timeout.
        after: Duration,
    },
    /// `--version` printed no `x.y.z` version.
    #[error("the CLI's --version output contains no x.y.z version")]
    VersionUnparseable,
    /// `--version` failed.
    #[error("the CLI's --version failed ({status})")]
    VersionProbeFailed {
        /// How it ended.
        status: ExitStatus,
    },
    /// The installed CLI is older than the driver supports.
    #[error("CLI version {found} is older than the minimum supported {minimum}")]
    VersionTooOld {
        /// The installed version.
        found: Version,
        /// The minimum version.
        minimum: Version,
    },
    /// A per-run file name is not a plain file name (empty, `.`, `..`, or containing `/`,
    /// `\` or NUL, or longer than 255 bytes).
    #[error("invalid per-run file name ({len} bytes)")]
    InvalidFileName {
        /// Length of the name.
        len: usize,
    },
    /// The runtime environment refused or failed a file operation.
    #[error(transparent)]
    Files(#[from] runtime_env::Error),
}

impl ProcessError {
    /// The failure class of this error: timeouts are [`FailureKind::Timeout`], unreadable
    /// output is [`FailureKind::Protocol`], a CLI that cannot be started, is too old or whose
    /// pipes fail is [`FailureKind::Process`], and file and configuration problems are
    /// [`FailureKind::Other`].
    pub fn failure_kind(&self) -> FailureKind {
        match self {
            Self::IdleTimeout { .. } | Self::TotalTimeout { .. } => FailureKind::Timeout,
            Self::LineTooLong { .. }
            | Self::MalformedJson { .. }
            | Self::NonUtf8 { .. }
            | Self::VersionUnparseable => FailureKind::Protocol,
            Self::NotFound { .. }
            | Self::NotExecutable { .. }
            | Self::Spawn { .. }
            | Self::Io { .. }
            | Self::VersionProbeFailed { .. }
            | Self::VersionTooOld { .. } => FailureKind::Process,
            Self::NoRuntime
            | Self::InvalidVarName { .. }
            | Self::ReservedVar { .. }
            | Self::CredentialVar { .. }
            | Self::RefusedRequestVar { .. }
            | Self::InvalidFileName { .. }
            | Self::Files(_) => FailureKind::Other,
        }
    }

    /// A [`RunFailure`] of [`failure_kind`](Self::failure_kind) whose message is this error
    /// and its sources (no secret or provider text by construction), followed by
    /// `stderr_tail` when given (pass a redacted tail, such as
    /// [`Finished::stderr_tail`](crate::process::Finished::stderr_tail)).
    ///
    /// A program that is [not found](Self::NotFound) or [not executable](Self::NotExecutable)
    /// is the failure's typed [`program`](RunFailure::program), which its `Display` (and so
    /// the host's error) names with its path.
    pub fn to_run_failure(&self, stderr_tail: Option<&str>) -> RunFailure {
        let program = match self {
            Self::NotFound { program } => {
                Some(ProgramUnavailable::new(program, ProgramProblem::NotFound))
            }
            Self::NotExecutable { program } => Some(ProgramUnavailable::new(
                program,
                ProgramProblem::NotExecutable,
            )),
            _ => None,
        };
        let mut message = self.to_string();
        let mut source = self.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        if let Some(tail) = stderr_tail.filter(|t| !t.trim().is_empty()) {
            message.push_str("\nstderr:\n");
            message.push_str(tail);
        }
        let failure = RunFailure::new(self.failure_kind(), message);
        match program {
            // Running again does not help until the host fixes its configuration.
            Some(program) => failure.with_program(program).with_retryable(false),
            None => failure,
        }
    }

    /// `DriverError::Failed` with a [`RunFailure`] of [`failure_kind`](Self::failure_kind)
    /// whose message is this error and its sources.
    pub fn into_driver_error(self) -> DriverError {
        DriverError::Failed(self.to_run_failure(None))
    }
}

impl From<ProcessError> for DriverError {
    fn from(e: ProcessError) -> Self {
        e.into_driver_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_pipe_failures_show_the_os_error_once() {
        let spawn = ProcessError::Spawn {
            program: "/opt/cli".to_owned(),
            error: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert_eq!(
            spawn.to_string(),
            "could not start CLI program `/opt/cli`: permission denied"
        );
        assert!(
            std::error::Error::source(&spawn).is_none(),
            "shown, not chained"
        );
        let io = ProcessError::Io {
            op: "attach to stdout",
            error: io::Error::from(io::ErrorKind::BrokenPipe),
        };
        assert_eq!(
            io.to_string(),
            "I/O error while trying to attach to stdout: broken pipe"
        );
        // The run failure's message holds the OS error exactly once.
        let message = io.to_run_failure(None).message;
        assert_eq!(message.matches("broken pipe").count(), 1, "{message}");
    }
}
