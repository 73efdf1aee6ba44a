//! [`TurnLock`] and [`NamespaceFiles`]: for CLIs that read their config only from a file of
//! the namespace (no per-run flag), one turn at a time installs its files there and puts back
//! what was there before.
//!
//! Why a lock of its own rather than runtime-env's config lock: that lock is namespace-wide,
//! for every runtime, and every writer takes it synchronously. Held for a whole turn it would
//! stall the other writers' threads for minutes and deadlock a single-threaded runtime. The
//! turn lock is an advisory `flock` (so it holds across processes too), waited for by polling
//! `try_lock`: a waiting turn blocks no thread and is cancelled by dropping its future. The
//! files themselves are written through runtime-env, under its config lock, for a moment.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use runtime_env::{RuntimeDescriptor, RuntimeEnv};
use tokio::time::Instant;

use crate::error::ProcessError;

/// First pause between two attempts to take the lock; doubled up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// Longest pause between two attempts to take the lock.
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Why a [`TurnLock`] was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnLockError {
    /// The lock file could not be opened (a symlink is not followed), is not a regular file
    /// of this user, or cannot be locked.
    #[error("could not {op} the turn lock")]
    Io {
        /// `open`, `inspect`, `trust` or `lock`.
        op: &'static str,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Another holder kept it for longer than the wait allowed.
    #[error("another turn held the turn lock for {waited:?}")]
    TimedOut {
        /// How long this turn waited.
        waited: Duration,
    },
}

/// An exclusive, advisory, cross-process lock on a file; released when dropped.
#[derive(Debug)]
pub struct TurnLock {
    file: File,
}

impl TurnLock {
    /// Takes the lock at `path` (creating the file 0600 when missing), waiting at most `wait`
    /// for another holder to release it.
    ///
    /// The file is opened without following a symlink and must be a regular file of this
    /// user; it holds nothing, so its mode does not matter, whose it is does.
    ///
    /// # Errors
    /// [`TurnLockError::Io`] when the file cannot be opened, trusted or locked,
    /// [`TurnLockError::TimedOut`] after `wait`.
    pub async fn acquire(path: &Path, wait: Duration) -> Result<Self, TurnLockError> {
        let file = open(path)?;
        let start = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { file }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(source)) => {
                    return Err(TurnLockError::Io { op: "lock", source });
                }
            }
            let waited = start.elapsed();
            if waited >= wait {
                return Err(TurnLockError::TimedOut { waited });
            }
            tokio::time::sleep(pause.min(wait - waited)).await;
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

fn open(path: &Path) -> Result<File, TurnLockError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|source| TurnLockError::Io { op: "open", source })?;
    let meta = file.metadata().map_err(|source| TurnLockError::Io {
        op: "inspect",
        source,
    })?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(TurnLockError::Io {
            op: "trust",
            source: io::Error::other("not a regular file of this user"),
        });
    }
    Ok(file)
}

/// Files of a runtime's state directory replaced for one turn. [`restore`](Self::restore), or
/// dropping it, puts back what was there before: the previous bytes, or no file.
///
/// Every read, write and removal happens under runtime-env's config lock (writes are 0600,
/// atomic and symlink-safe); hold a [`TurnLock`] around it so that no other turn of the
/// namespace replaces the files meanwhile.
#[derive(Debug)]
pub struct NamespaceFiles<'e> {
    env: &'e RuntimeEnv,
    runtime: &'static RuntimeDescriptor,
    /// Each file's path relative to the state directory, and its bytes before the turn.
    previous: Vec<(String, Option<Vec<u8>>)>,
    restored: bool,
}

impl<'e> NamespaceFiles<'e> {
    /// Reads the files at `relative` (paths under `runtime`'s state directory), then writes
    /// what `contents` makes of their previous bytes: one entry per path, in order, `None`
    /// for no file. Both happen under one hold of the config lock, so `contents` may merge
    /// over what it is given.
    ///
    /// # Errors
    /// [`ProcessError::Files`] or [`ProcessError::Io`] when a file cannot be read, written or
    /// removed; whatever was already changed is put back.
    pub fn install(
        env: &'e RuntimeEnv,
        runtime: &'static RuntimeDescriptor,
        relative: &[&str],
        contents: impl FnOnce(&[Option<Vec<u8>>]) -> Vec<Option<Vec<u8>>>,
    ) -> Result<Self, ProcessError> {
        let (previous, written) = {
            let lock = env.lock_config()?;
            let mut before = Vec::with_capacity(relative.len());
            for path in relative {
                before.push(lock.read(runtime, path)?);
            }
            let new = contents(&before);
            let written = relative.iter().zip(new).try_for_each(|(path, bytes)| {
                match bytes {
                    Some(bytes) => lock.write(runtime, path, &bytes).map(drop)?,
                    None => remove(env, runtime, path)?,
                }
                Ok::<_, ProcessError>(())
            });
            let previous = relative.iter().map(|p| (*p).to_owned()).zip(before);
            (previous.collect(), written)
        };
        // Built after the config lock is released: on failure, dropping it takes the lock
        // again to put back what was written.
        let files = Self {
            env,
            runtime,
            previous,
            restored: false,
        };
        written?;
        Ok(files)
    }

    /// Puts back what was there before the turn.
    ///
    /// # Errors
    /// [`ProcessError::Files`] or [`ProcessError::Io`] when a file cannot be written or removed.
    pub fn restore(mut self) -> Result<(), ProcessError> {
        self.restored = true;
        self.put_back()
    }

    fn put_back(&self) -> Result<(), ProcessError> {
        let lock = self.env.lock_config()?;
        for (relative, bytes) in &self.previous {
            match bytes {
                Some(bytes) => {
                    lock.write(self.runtime, relative, bytes)?;
                }
                None => remove(self.env, self.runtime, relative)?,
            }
        }
        Ok(())
    }
}

impl Drop for NamespaceFiles<'_> {
    fn drop(&mut self) {
        if !self.restored
            && let Err(e) = self.put_back()
        {
            tracing::warn!(
                error = %e,
                runtime = self.runtime.name,
                "could not restore the namespace's config files after a turn"
            );
        }
    }
}

/// Removes a file under the state directory; a missing file is fine.
fn remove(
    env: &RuntimeEnv,
    runtime: &RuntimeDescriptor,
    relative: &str,
) -> Result<(), ProcessError> {
    match std::fs::remove_file(env.state_dir(runtime)?.join(relative)) {
        Err(source) if source.kind() != io::ErrorKind::NotFound => Err(ProcessError::Io {
            op: "remove a per-turn namespace file",
            error: source,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_wait_is_bounded_and_only_a_regular_file_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let _held = TurnLock::acquire(&path, Duration::from_secs(1))
            .await
            .unwrap();
        match TurnLock::acquire(&path, Duration::from_millis(20)).await {
            Err(TurnLockError::TimedOut { waited }) => assert!(waited >= Duration::from_millis(20)),
            other => panic!("expected a timeout, got {other:?}"),
        }
        // A directory opens read-write only with an error; either way it is never locked.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(matches!(
            TurnLock::acquire(&sub, Duration::ZERO).await,
            Err(TurnLockError::Io { .. })
        ));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            TurnLock::acquire(&link, Duration::ZERO).await,
            Err(TurnLockError::Io { op: "open", .. })
        ));
    }

    #[test]
    fn files_are_merged_over_and_put_back() {
        use runtime_env::{IsolationMode, KeyringUse, McpMechanism};
        // State in HOME itself, as Gemini's.
        static IN_HOME: RuntimeDescriptor = RuntimeDescriptor {
            name: "in_home",
            program: "in-home",
            state_var: "IN_HOME_HOME",
            state_subdir: "",
            state_dir_must_exist: false,
            private_subdirs: &[".in-home"],
            sources: &[],
            credential_files: &[],
            api_key_vars: &[],
            endpoint_vars: &[],
            keyring: KeyringUse::Never,
            mcp: McpMechanism::GeminiSettings,
            supported_modes: &[IsolationMode::Subprocess],
        };
        let base = tempfile::tempdir().unwrap();
        let env = RuntimeEnv::builder(base.path().join("rt"), "user:a".parse().unwrap(), "/")
            .runtimes([&IN_HOME])
            .build()
            .unwrap();
        let kind = &IN_HOME;
        env.write_runtime_file(kind, ".gemini/settings.json", b"old")
            .unwrap();
        let files = NamespaceFiles::install(&env, kind, &[".gemini/settings.json", "x"], |p| {
            assert_eq!(p, [Some(b"old".to_vec()), None]);
            vec![Some(b"old+new".to_vec()), Some(b"x".to_vec())]
        })
        .unwrap();
        let dir = env.state_dir(kind).unwrap();
        assert_eq!(
            std::fs::read(dir.join(".gemini/settings.json")).unwrap(),
            b"old+new"
        );
        drop(files);
        assert_eq!(
            std::fs::read(dir.join(".gemini/settings.json")).unwrap(),
            b"old"
        );
        assert!(!dir.join("x").exists());
    }
}
