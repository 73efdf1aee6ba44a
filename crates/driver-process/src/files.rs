//! [`RunFiles`]: private files of one run (generated configs, MCP declarations).

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use runtime_env::{RuntimeDescriptor, RuntimeEnv};

use crate::error::ProcessError;

/// The directory, under a runtime's state directory, that holds per-run directories.
pub const RUNS_DIR: &str = "sdk-runs";

/// Written to claim a new directory, then removed.
const CLAIM: &str = ".claim";

/// Longest part of the run id kept in the directory name.
const MAX_ID_CHARS: usize = 64;

/// A private directory for one run's files, `<state dir>/sdk-runs/<run id>-<random>/`.
///
/// Every file is written through [`RuntimeEnv::write_runtime_file`], so it is 0600 in 0700
/// directories, atomically replaced, under the namespace's config lock, with runtime-env's
/// symlink and ownership checks. Each `RunFiles` gets its own directory (the run id plus 64
/// random bits, claimed under the config lock), so two concurrent runs in one namespace,
/// even with the same run id, never share or clobber files. Dropping it removes the
/// directory; a failure to remove it is logged.
#[derive(Debug)]
pub struct RunFiles<'e> {
    env: &'e RuntimeEnv,
    runtime: &'static RuntimeDescriptor,
    /// `sdk-runs/<unique>`, relative to the state directory.
    relative: String,
    dir: PathBuf,
    removed: bool,
}

impl<'e> RunFiles<'e> {
    /// Claims a new, empty directory for `run_id` under `runtime`'s state directory.
    ///
    /// The run id is only a readable prefix: characters other than ASCII letters, digits,
    /// `-` and `_` become `_`, and it is cut to 64 characters.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Files`] when the runtime environment refuses or fails the write (or does
    /// not serve `runtime`), and
    /// [`ProcessError::Io`] when no random name can be drawn or the claim cannot be finished.
    pub fn create(
        env: &'e RuntimeEnv,
        runtime: &'static RuntimeDescriptor,
        run_id: &str,
    ) -> Result<Self, ProcessError> {
        let prefix = sanitize(run_id);
        let lock = env.lock_config()?;
        let runs = env.state_dir(runtime)?.join(RUNS_DIR);
        loop {
            let unique = format!("{prefix}-{}", random_suffix()?);
            // Under the config lock nobody else claims names, so "absent" stays true until
            // the claim below creates the directory.
            match fs::symlink_metadata(runs.join(&unique)) {
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(ProcessError::Io {
                        op: "inspect the per-run directory",
                        error: source,
                    });
                }
            }
            let relative = format!("{RUNS_DIR}/{unique}");
            let claim = lock.write(runtime, &format!("{relative}/{CLAIM}"), b"")?;
            fs::remove_file(&claim).map_err(|source| ProcessError::Io {
                op: "finish claiming the per-run directory",
                error: source,
            })?;
            let dir = claim
                .parent()
                .map_or_else(|| runs.join(&unique), Path::to_path_buf);
            return Ok(Self {
                env,
                runtime,
                relative,
                dir,
                removed: false,
            });
        }
    }

    /// The directory.
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes (or atomically replaces) the file `name` in the directory, mode 0600, and
    /// returns its path.
    ///
    /// # Errors
    ///
    /// [`ProcessError::InvalidFileName`] unless `name` is a plain file name (not empty, `.` or
    /// `..`, without `/`, `\` or NUL, at most 255 bytes), and [`ProcessError::Files`] when the
    /// runtime environment refuses or fails the write.
    pub fn write(&self, name: &str, contents: &[u8]) -> Result<PathBuf, ProcessError> {
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.len() > 255
            || name.contains(['/', '\\', '\0'])
        {
            return Err(ProcessError::InvalidFileName { len: name.len() });
        }
        Ok(self.env.write_runtime_file(
            self.runtime,
            &format!("{}/{name}", self.relative),
            contents,
        )?)
    }

    /// Removes the directory and everything in it (symlinks are removed, not followed).
    ///
    /// # Errors
    ///
    /// [`ProcessError::Io`] when it cannot be removed.
    #[cfg(test)]
    pub fn remove(mut self) -> Result<(), ProcessError> {
        self.removed = true;
        remove_dir(&self.dir).map_err(|source| ProcessError::Io {
            op: "remove the per-run directory",
            error: source,
        })
    }
}

impl RunFiles<'_> {
    /// The directory, with its files written, for a holder that outlives the environment
    /// borrow (a resident process): removed when the returned guard is dropped.
    pub fn keep(mut self) -> RunDir {
        self.removed = true;
        RunDir {
            dir: std::mem::take(&mut self.dir),
        }
    }
}

/// A per-run directory whose files are written, removed when dropped ([`RunFiles::keep`]).
#[derive(Debug)]
pub struct RunDir {
    dir: PathBuf,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Err(e) = remove_dir(&self.dir) {
            tracing::warn!(
                dir = %self.dir.display(),
                error = %e,
                "could not remove a resident process's config directory"
            );
        }
    }
}

impl Drop for RunFiles<'_> {
    fn drop(&mut self) {
        if !self.removed
            && let Err(e) = remove_dir(&self.dir)
        {
            tracing::warn!(
                dir = %self.dir.display(),
                error = %e,
                "could not remove a per-run directory"
            );
        }
    }
}

fn remove_dir(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn sanitize(run_id: &str) -> String {
    let id: String = run_id
        .chars()
        .take(MAX_ID_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.is_empty() {
        String::from("run")
    } else {
        id
    }
}

fn random_suffix() -> Result<String, ProcessError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| ProcessError::Io {
        op: "draw a random directory name",
        error: io::Error::other(e.to_string()),
    })?;
    let mut hex = String::with_capacity(16);
    for b in bytes {
        let _ = write!(hex, "{b:02x}");
    }
    Ok(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_become_safe_prefixes() {
        assert_eq!(sanitize("run-1_a"), "run-1_a");
        assert_eq!(sanitize("../etc/passwd"), "___etc_passwd");
        assert_eq!(sanitize(""), "run");
        assert_eq!(sanitize(&"x".repeat(300)).len(), MAX_ID_CHARS);
        assert_eq!(sanitize("é/ü"), "___");
    }
}
