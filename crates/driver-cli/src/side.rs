//! [`CliDriver::side_command`]: a command of the CLI besides turns (Cursor's `create-chat`),
//! run the way a turn's process runs, so that the process layer stays private to the crate.

use std::fmt;

use crate::CommonOptions as _;
use crate::{CliCommand, CliDriver, CliError, CliProcess, Dialect, Finished};

/// What a [side command](CliDriver::side_command) printed on stdout, and how it ended.
///
/// `Debug` shows how many lines there were, never their text: a side command's stdout is
/// not redacted (it is the command's answer, such as an id).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SideOutput {
    /// The first stdout lines, in order and without their newlines, at most
    /// [`Limits::max_line_bytes`](crate::Limits::max_line_bytes) bytes together.
    pub stdout: Vec<String>,
    /// How many later lines were read and dropped because they would have passed that bound.
    pub dropped_lines: usize,
    /// How it ended, with its redacted stderr tail. An unsuccessful exit is not an error:
    /// what it means is the caller's to judge.
    pub finished: Finished,
}

impl fmt::Debug for SideOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SideOutput")
            .field("stdout_lines", &self.stdout.len())
            .field("dropped_lines", &self.dropped_lines)
            .field("finished", &self.finished)
            .finish()
    }
}

impl<D: Dialect> CliDriver<D> {
    /// Runs `<binary> <args>` once, after the version check, as a turn's process runs: in the
    /// driver's namespace and its isolated environment (the environment's injected secrets,
    /// no request's), in its own process group, within the driver's [`Limits`](crate::Limits),
    /// with stdin empty; and returns its stdout lines and how it ended.
    ///
    /// # Errors
    /// The errors of [`check_version`](Self::check_version); [`CliError::NotFound`] and the
    /// other start failures; and the first read error ([`CliError::IdleTimeout`],
    /// [`CliError::TotalTimeout`], [`CliError::LineTooLong`], [`CliError::NonUtf8`]), after
    /// which the process group is ended.
    pub async fn side_command(&self, args: &[&str]) -> Result<SideOutput, CliError> {
        self.check_version().await?;
        let cli = self.options().cli();
        // No turn: the environment's secrets are all it carries.
        let env = self.runtime_env();
        let command = CliCommand::new(&cli.binary, env.redactor()).args(args.iter().copied());
        let process = CliProcess::spawn(env, command, cli.limits)?;
        collect(process).await
    }
}

/// Reads `process`'s stdout to its end, keeping the lines that fit the line limit together,
/// then waits for it.
pub(crate) async fn collect(mut process: CliProcess) -> Result<SideOutput, CliError> {
    let budget = process.limits().max_line_bytes;
    let mut stdout = Vec::new();
    let mut kept = 0usize;
    let mut dropped_lines = 0;
    // Dropping the process on an error (the `?`) ends its group.
    while let Some(line) = process.next_line().await? {
        // Once one line is dropped, every later one is too: `stdout` stays a prefix.
        if dropped_lines == 0 && kept.saturating_add(line.len()) <= budget {
            kept += line.len();
            stdout.push(line);
        } else {
            dropped_lines += 1;
        }
    }
    let finished = process.wait().await?;
    Ok(SideOutput {
        stdout,
        dropped_lines,
        finished,
    })
}
