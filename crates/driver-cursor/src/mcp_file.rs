//! The namespace's `mcp.json`, and the turn lock that keeps it one run's for the whole turn.
//!
//! Cursor has no per-run MCP flag: it reads `<CURSOR_CONFIG_DIR>/mcp.json`, one file per
//! namespace. Two concurrent turns of a namespace would therefore overwrite each other's
//! servers. Every turn takes the namespace's *turn lock* (`<CURSOR_CONFIG_DIR>/sdk-turn.lock`,
//! an advisory `flock`, so it also holds across processes) before it writes the file, and
//! keeps it until the process has ended and the file is restored. Writes themselves go
//! through runtime-env's config lock (0600, atomic, symlink-safe), held only briefly, so the
//! other runtimes of the namespace are never blocked for a whole Cursor turn.
//!
//! The lock and the install-then-restore are driver-cli's [`driver_cli::TurnLock`] and
//! [`NamespaceFiles`], shared with the Gemini driver.

use std::time::Duration;

use driver_cli::{CliError, NamespaceFiles, TurnLockError};
use runtime_env::{RuntimeEnv, RuntimeKind};

/// The file Cursor reads its MCP servers from, in its config directory.
pub(crate) const MCP_FILE: &str = "mcp.json";

/// The turn lock's file, in Cursor's config directory.
pub(crate) const LOCK_FILE: &str = "sdk-turn.lock";

/// Why the turn lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The lock file could not be made or opened safely.
    Cli(CliError),
    /// Another turn of the namespace held it for this long.
    Busy(Duration),
}

impl From<runtime_env::Error> for LockError {
    fn from(e: runtime_env::Error) -> Self {
        Self::Cli(e.into())
    }
}

/// The exclusive turn lock of one namespace's Cursor config directory; released on drop.
#[derive(Debug)]
pub(crate) struct TurnLock {
    _lock: driver_cli::TurnLock,
}

impl TurnLock {
    /// Waits (at most `wait`) until no other turn of the namespace holds the lock, then holds
    /// it.
    ///
    /// # Errors
    /// [`LockError::Cli`] when the lock file cannot be made or is not a regular file of ours,
    /// [`LockError::Busy`] after `wait`.
    pub(crate) async fn acquire(env: &RuntimeEnv, wait: Duration) -> Result<Self, LockError> {
        // Created once under the config lock (with runtime-env's directory checks), so it is
        // never replaced while someone holds it.
        {
            let lock = env.lock_config()?;
            if lock.read(RuntimeKind::Cursor, LOCK_FILE)?.is_none() {
                lock.write(RuntimeKind::Cursor, LOCK_FILE, b"")?;
            }
        }
        let path = env.state_dir(RuntimeKind::Cursor).join(LOCK_FILE);
        match driver_cli::TurnLock::acquire(&path, wait).await {
            Ok(lock) => Ok(Self { _lock: lock }),
            Err(TurnLockError::TimedOut { .. }) => Err(LockError::Busy(wait)),
            Err(TurnLockError::Io { op, source }) => {
                let op = match op {
                    "open" => "open the Cursor turn lock",
                    "inspect" => "inspect the Cursor turn lock",
                    "trust" => "check the Cursor turn lock",
                    _ => "lock the Cursor turn lock",
                };
                Err(LockError::Cli(CliError::Io { op, source }))
            }
            Err(e) => Err(LockError::Cli(CliError::Io {
                op: "lock the Cursor turn lock",
                source: std::io::Error::other(e),
            })),
        }
    }
}

/// Installs the request's `mcp.json` (0600, atomic) in the namespace for one turn; restoring
/// (or dropping) the result puts back what was there before: the previous bytes, or no file.
///
/// # Errors
/// [`CliError::Files`] when runtime-env refuses or fails the read or the write.
pub(crate) fn install<'e>(
    env: &'e RuntimeEnv,
    contents: &[u8],
) -> Result<NamespaceFiles<'e>, CliError> {
    NamespaceFiles::install(env, RuntimeKind::Cursor, &[MCP_FILE], |_| {
        vec![Some(contents.to_vec())]
    })
}
