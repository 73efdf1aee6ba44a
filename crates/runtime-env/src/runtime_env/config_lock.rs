//! [`ConfigLock`]: the lock that serializes writers of a runtime's configuration files.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::{MAX_RUNTIME_FILE, RuntimeEnv};
use crate::error::Error;
use crate::lock::FileLock;
use crate::runtime::{Anchor, RuntimeDescriptor, SourceKind};
use crate::secure_fs::{self, FsError};

/// The exclusive config lock of a namespace or session; released when dropped.
#[derive(Debug)]
pub struct ConfigLock<'e> {
    pub(super) env: &'e RuntimeEnv,
    pub(super) _lock: FileLock,
}

impl ConfigLock<'_> {
    /// Validates `relative` and returns its components; refuses credential files.
    fn components<'r>(
        runtime: &RuntimeDescriptor,
        relative: &'r str,
    ) -> Result<Vec<&'r str>, Error> {
        let parts: Vec<&str> = relative.split('/').collect();
        if relative.len() > 1024
            || parts
                .iter()
                .any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains(['\\', '\0']))
        {
            return Err(Error::InvalidRelativePath);
        }
        let d = runtime;
        let is_credential = d.sources.iter().chain(d.credential_files).any(|s| {
            s.kind == SourceKind::Credential && s.anchor == Anchor::StateDir && s.path == relative
        });
        if is_credential {
            return Err(Error::CredentialFile {
                runtime: runtime.name,
                path: relative.to_owned(),
            });
        }
        Ok(parts)
    }

    /// The runtime's state directory, checked (and, at the shared level, created if missing).
    fn state_dir(
        &self,
        runtime: &RuntimeDescriptor,
        create: bool,
    ) -> Result<Option<PathBuf>, Error> {
        let state = self.env.state_dir(runtime)?.to_owned();
        let strictness = self.env.strictness();
        match fs::symlink_metadata(&state) {
            Ok(_) => {
                secure_fs::check_dir(&state, strictness)?;
                Ok(Some(state))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                let (Some(parent), Some(name)) = (state.parent(), state.file_name()) else {
                    return Err(Error::InvalidRelativePath);
                };
                secure_fs::check_dir(parent, strictness)?;
                Ok(Some(secure_fs::ensure_dir(parent, name, strictness)?))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(secure_fs::io_err("inspect", &state)(e).into()),
        }
    }

    /// Reads a runtime file under the state directory (`config.toml`, `mcp.json`, …);
    /// `Ok(None)` when it does not exist. Credential files are refused.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRuntime`], [`Error::InvalidRelativePath`], [`Error::CredentialFile`],
    /// [`Error::FileTooLarge`], and [`Error::Fs`] for unsafe directories or I/O failures.
    pub fn read(
        &self,
        runtime: &RuntimeDescriptor,
        relative: &str,
    ) -> Result<Option<Vec<u8>>, Error> {
        let parts = Self::components(runtime, relative)?;
        let Some(mut dir) = self.state_dir(runtime, false)? else {
            return Ok(None);
        };
        let (file, parents) = parts.split_last().ok_or(Error::InvalidRelativePath)?;
        for p in parents {
            dir.push(p);
            match fs::symlink_metadata(&dir) {
                Ok(_) => secure_fs::check_dir(&dir, self.env.strictness())?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(secure_fs::io_err("inspect", &dir)(e).into()),
            }
        }
        let path = dir.join(file);
        let handle = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(secure_fs::open_flags())
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(secure_fs::io_err("open", &path)(e).into()),
        };
        let meta = handle
            .metadata()
            .map_err(secure_fs::io_err("inspect", &path))?;
        if !meta.is_file() {
            return Err(FsError::NotARegularFile { path }.into());
        }
        if meta.len() > MAX_RUNTIME_FILE {
            return Err(Error::FileTooLarge {
                max: MAX_RUNTIME_FILE,
            });
        }
        let mut buf = Vec::new();
        handle
            .take(MAX_RUNTIME_FILE + 1)
            .read_to_end(&mut buf)
            .map_err(secure_fs::io_err("read", &path))?;
        if buf.len() as u64 > MAX_RUNTIME_FILE {
            return Err(Error::FileTooLarge {
                max: MAX_RUNTIME_FILE,
            });
        }
        Ok(Some(buf))
    }

    /// Atomically replaces a runtime file under the state directory with `contents` (0600,
    /// temp file + fsync + rename), creating missing parent directories 0700. Credential files
    /// are refused.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRuntime`], [`Error::InvalidRelativePath`], [`Error::CredentialFile`],
    /// and [`Error::Fs`] for unsafe directories or I/O failures.
    pub fn write(
        &self,
        runtime: &RuntimeDescriptor,
        relative: &str,
        contents: &[u8],
    ) -> Result<PathBuf, Error> {
        let parts = Self::components(runtime, relative)?;
        let state = self
            .state_dir(runtime, true)?
            .ok_or(Error::InvalidRelativePath)?;
        let (file, parents) = parts.split_last().ok_or(Error::InvalidRelativePath)?;
        let dir = secure_fs::ensure_dirs(
            &state,
            parents.iter().map(OsStr::new),
            self.env.strictness(),
        )?;
        Ok(secure_fs::write_private_file(&dir, file, contents)?)
    }
}
