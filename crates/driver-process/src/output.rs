//! [`SideOutput`]: a short command's whole stdout (a CLI's command besides turns, such as
//! Cursor's `create-chat`), collected within the line limit.

use std::fmt;

use crate::error::ProcessError;
use crate::process::{CliProcess, Finished};

/// What a short command printed on stdout, and how it ended ([`CliProcess::collect`]).
///
/// `Debug` shows how many lines there were, never their text: such a command's stdout is
/// not redacted (it is the command's answer, such as an id).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SideOutput {
    /// The first stdout lines, in order and without their newlines, at most
    /// [`Limits::max_line_bytes`](crate::command::Limits::max_line_bytes) bytes together.
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

impl CliProcess {
    /// Reads stdout to its end, keeping the lines that fit the line limit together, then
    /// waits for the process.
    ///
    /// # Errors
    /// The first read error ([`ProcessError::IdleTimeout`], [`ProcessError::TotalTimeout`],
    /// [`ProcessError::LineTooLong`], [`ProcessError::NonUtf8`]), after which the process
    /// group is ended; and the errors of [`wait`](Self::wait).
    pub async fn collect(mut self) -> Result<SideOutput, ProcessError> {
        let budget = self.limits().max_line_bytes;
        let mut stdout = Vec::new();
        let mut kept = 0usize;
        let mut dropped_lines = 0;
        // Dropping the process on an error (the `?`) ends its group.
        while let Some(line) = self.next_line().await? {
            // Once one line is dropped, every later one is too: `stdout` stays a prefix.
            if dropped_lines == 0 && kept.saturating_add(line.len()) <= budget {
                kept += line.len();
                stdout.push(line);
            } else {
                dropped_lines += 1;
            }
        }
        let finished = self.wait().await?;
        Ok(SideOutput {
            stdout,
            dropped_lines,
            finished,
        })
    }
}
