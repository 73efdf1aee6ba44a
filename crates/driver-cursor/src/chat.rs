//! [`create_chat`]: a Cursor-only extra, `cursor-agent create-chat`, for a host that wants a
//! chat id before the first turn.

use driver_process::error::ProcessError;
use driver_spi::ExitStatus;

use crate::CursorDriver;

/// Why [`create_chat`] returned no chat id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateChatError {
    /// The CLI could not be run (missing binary, too old, a timeout, …).
    #[error(transparent)]
    Cli(#[from] ProcessError),
    /// `create-chat` exited unsuccessfully.
    #[error("cursor-agent create-chat failed ({status})")]
    Failed {
        /// How it ended.
        status: ExitStatus,
        /// The end of its stderr, redacted; not part of `Display`.
        stderr_tail: String,
    },
    /// `create-chat` succeeded but printed no chat id (a UUID).
    #[error("cursor-agent create-chat printed no chat id")]
    NoChatId,
}

/// Asks Cursor for a new, empty chat (`cursor-agent create-chat`, a
/// [side command](driver_cli::CliDriver::side_command) of the driver, after its version
/// check) and returns its id. Store it as the resume id of a
/// [`SessionState`](driver_spi::SessionState) with the request's
/// [`SessionGuard`](driver_spi::SessionGuard) and run the first turn as a resume.
/// [`Driver::run`](driver_spi::Driver::run) does not need it: a new session's id is taken from
/// the turn's own events.
///
/// # Errors
/// [`CreateChatError`]: the CLI could not run, failed, or printed no UUID.
pub async fn create_chat(driver: &CursorDriver) -> Result<String, CreateChatError> {
    let out = driver.side_command(&["create-chat"]).await?;
    if !out.finished.status.is_success() {
        return Err(CreateChatError::Failed {
            status: out.finished.status,
            stderr_tail: out.finished.stderr_tail,
        });
    }
    out.stdout
        .iter()
        .find_map(|line| {
            line.split(|c: char| c.is_whitespace() || c == '"' || c == ',')
                .find(|word| driver_cli::is_uuid(word))
        })
        .map(str::to_owned)
        .ok_or(CreateChatError::NoChatId)
}
