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
//! The lock is this crate's only file lock, and it is waited for by polling `try_lock`, so
//! an async worker thread never blocks on it and dropping the run future stops the wait.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use driver_cli::CliError;
use runtime_env::{RuntimeEnv, RuntimeKind};

/// The file Cursor reads its MCP servers from, in its config directory.
pub(crate) const MCP_FILE: &str = "mcp.json";

/// The turn lock's file, in Cursor's config directory.
pub(crate) const LOCK_FILE: &str = "sdk-turn.lock";

/// Longest pause between two attempts to take the turn lock.
const MAX_PAUSE: Duration = Duration::from_millis(200);

/// Why the turn lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The lock file could not be made or opened safely.
    Cli(CliError),
    /// Another turn of the namespace held it for this long.
    Busy(Duration),
}

impl From<CliError> for LockError {
    fn from(e: CliError) -> Self {
        Self::Cli(e)
    }
}

impl From<runtime_env::Error> for LockError {
    fn from(e: runtime_env::Error) -> Self {
        Self::Cli(e.into())
    }
}

fn io_error(op: &'static str) -> impl FnOnce(io::Error) -> CliError {
    move |source| CliError::Io { op, source }
}

/// The exclusive turn lock of one namespace's Cursor config directory; released on drop.
#[derive(Debug)]
pub(crate) struct TurnLock {
    file: File,
}

impl TurnLock {
    /// Waits (at most `wait`) until no other turn of the namespace holds the lock, then holds
    /// it.
    ///
    /// # Errors
    /// [`LockError::Cli`] when the lock file cannot be made or is not a regular file of ours,
    /// [`LockError::Busy`] after `wait`.
    pub(crate) async fn acquire(env: &RuntimeEnv, wait: Duration) -> Result<Self, LockError> {
        let file = open_lock_file(env)?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { file }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(io_error("lock the Cursor turn lock")(e).into());
                }
            }
            let Some(left) = wait.checked_sub(started.elapsed()).filter(|d| !d.is_zero()) else {
                return Err(LockError::Busy(wait));
            };
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

impl Drop for TurnLock {
    fn drop(&mut self) {
        // Closing releases it too; unlocking first makes the release immediate.
        let _ = self.file.unlock();
    }
}

/// Creates the lock file once (under the config lock, so never replaced while someone holds
/// it) and opens it without following a symlink.
fn open_lock_file(env: &RuntimeEnv) -> Result<File, LockError> {
    {
        let lock = env.lock_config()?;
        if lock.read(RuntimeKind::Cursor, LOCK_FILE)?.is_none() {
            lock.write(RuntimeKind::Cursor, LOCK_FILE, b"")?;
        }
    }
    let path = env.state_dir(RuntimeKind::Cursor).join(LOCK_FILE);
    let flags =
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(&path, flags, rustix::fs::Mode::empty())
        .map_err(|e| io_error("open the Cursor turn lock")(e.into()))?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(io_error("inspect the Cursor turn lock"))?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(io_error("check the Cursor turn lock")(io::Error::other(
            "not a regular file owned by this user",
        ))
        .into());
    }
    Ok(file)
}

/// The request's `mcp.json`, installed in the namespace for one turn. [`restore`](Self::restore)
/// (or dropping it) puts back what was there before: the previous bytes, or no file.
#[derive(Debug)]
pub(crate) struct McpFile<'e> {
    env: &'e RuntimeEnv,
    previous: Option<Vec<u8>>,
    restored: bool,
}

impl<'e> McpFile<'e> {
    /// Replaces `mcp.json` with `contents` (0600, atomic), remembering the old contents.
    ///
    /// # Errors
    /// [`CliError::Files`] when runtime-env refuses or fails the read or the write.
    pub(crate) fn install(env: &'e RuntimeEnv, contents: &[u8]) -> Result<Self, CliError> {
        let lock = env.lock_config()?;
        let previous = lock.read(RuntimeKind::Cursor, MCP_FILE)?;
        lock.write(RuntimeKind::Cursor, MCP_FILE, contents)?;
        Ok(Self {
            env,
            previous,
            restored: false,
        })
    }

    /// Puts back what was there before the turn.
    ///
    /// # Errors
    /// [`CliError::Files`] or [`CliError::Io`] when it cannot be written or removed.
    pub(crate) fn restore(mut self) -> Result<(), CliError> {
        self.restored = true;
        self.put_back()
    }

    fn put_back(&self) -> Result<(), CliError> {
        let lock = self.env.lock_config()?;
        match &self.previous {
            Some(bytes) => {
                lock.write(RuntimeKind::Cursor, MCP_FILE, bytes)?;
            }
            None => {
                let path = self.env.state_dir(RuntimeKind::Cursor).join(MCP_FILE);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        return Err(io_error("remove the run's mcp.json")(e));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Drop for McpFile<'_> {
    fn drop(&mut self) {
        if !self.restored
            && let Err(e) = self.put_back()
        {
            tracing::warn!(error = %e, "could not restore the namespace's Cursor mcp.json");
        }
    }
}
