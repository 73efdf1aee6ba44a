//! The turn lock: at most one Gemini turn per namespace at a time.
//!
//! Gemini takes MCP servers, the auth type and the privacy switch only from settings files,
//! and the one the namespace can own is `$GEMINI_CLI_HOME/.gemini/settings.json`. A per-run
//! file does not work: `GEMINI_CLI_SYSTEM_SETTINGS_PATH` is honoured only for a file owned by
//! root in directories owned by root that nobody else can write (verified against 0.61.0,
//! which otherwise skips it with a "Security Warning"). So every turn installs its settings
//! in the shared file and holds this lock until its process has ended and the file is put
//! back: concurrent turns of one namespace (in one host process or several) run one after
//! the other, and none sees another's servers.
//!
//! Why not runtime-env's config lock: that lock is namespace-wide, for every runtime, and
//! every writer takes it synchronously (the per-run files of the other CLI drivers
//! included). Held for a whole turn it would stall those writers' threads for minutes, and
//! deadlock a single-threaded runtime. This lock belongs to the Gemini turn alone; the
//! settings file itself is still written through runtime-env, under its config lock, for a
//! moment. Waiting polls `try_lock`, so a waiting turn blocks no thread and is cancelled by
//! dropping its future. The lock itself is driver-cli's [`driver_cli::TurnLock`].

use std::io;
#[cfg(test)]
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use driver_cli::TurnLockError;

/// The lock file, in `$GEMINI_CLI_HOME/.gemini/`.
pub(crate) const LOCK_FILE: &str = "sdk-turn.lock";

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// The lock file could not be opened, is not a private regular file, or cannot be
    /// locked.
    #[error("could not {op} the Gemini turn lock")]
    Io {
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// Another turn held it for longer than the wait allowed.
    #[error("another Gemini turn of this namespace held the turn lock for {waited:?}")]
    TimedOut { waited: Duration },
}

/// A held turn lock (driver-cli's, shared with the Cursor driver); released when dropped.
#[derive(Debug)]
pub(crate) struct TurnLock {
    _lock: driver_cli::TurnLock,
}

impl TurnLock {
    /// Takes the lock at `path`, waiting at most `wait` for another turn to release it.
    pub(crate) async fn acquire(path: &Path, wait: Duration) -> Result<Self, LockError> {
        match driver_cli::TurnLock::acquire(path, wait).await {
            Ok(lock) => Ok(Self { _lock: lock }),
            Err(TurnLockError::TimedOut { waited }) => Err(LockError::TimedOut { waited }),
            Err(TurnLockError::Io { op, source }) => Err(LockError::Io { op, source }),
            Err(e) => Err(LockError::Io {
                op: "lock",
                source: io::Error::other(e),
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let held = TurnLock::acquire(&path, Duration::ZERO).await.unwrap();
        let busy = TurnLock::acquire(&path, Duration::from_millis(30)).await;
        assert!(matches!(busy, Err(LockError::TimedOut { .. })));
        let waiter = tokio::spawn({
            let path = path.clone();
            async move { TurnLock::acquire(&path, Duration::from_secs(10)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
        waiter.await.unwrap().unwrap();
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[tokio::test]
    async fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"").unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(matches!(
            TurnLock::acquire(&path, Duration::ZERO).await,
            Err(LockError::Io { op: "open", .. })
        ));
    }
}
