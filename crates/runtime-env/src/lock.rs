//! The one place that takes advisory file locks (std `File::lock`, `flock(2)` on Linux).
//!
//! Locks are whole-file, exclusive and advisory: they serialize cooperating writers (this crate
//! in any process) and are released when the guard drops or the process dies. Lock files are
//! created 0600 through [`secure_fs`](crate::secure_fs).

use std::fs::{File, TryLockError};
use std::path::Path;

use crate::secure_fs::{self, FsError};

/// An exclusive advisory lock, held until dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    file: File,
}

impl FileLock {
    /// Opens (creating 0600 if needed) `dir/name` and blocks until the exclusive lock is held.
    pub(crate) fn acquire(dir: &Path, name: &str) -> Result<Self, FsError> {
        let file = secure_fs::open_private_file(dir, name)?;
        file.lock()
            .map_err(secure_fs::io_err("lock", &dir.join(name)))?;
        Ok(Self { file })
    }

    /// Tries to take the exclusive lock on an existing file without blocking.
    ///
    /// `Ok(None)` when another holder has it; `Err` when the file is missing or unsafe.
    pub(crate) fn try_acquire_existing(path: &Path) -> Result<Option<Self>, FsError> {
        let Some(file) = secure_fs::open_existing_private_file(path)? else {
            return Err(FsError::Io {
                op: "lock",
                path: path.to_owned(),
                source: std::io::ErrorKind::NotFound.into(),
            });
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(secure_fs::io_err("lock", path)(e)),
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the release immediate
        // even if the descriptor was duplicated.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_between_handles() {
        let t = tempfile::tempdir().expect("tempdir");
        let held = FileLock::acquire(t.path(), "x.lock").expect("lock");
        let path = t.path().join("x.lock");
        assert!(
            FileLock::try_acquire_existing(&path)
                .expect("try")
                .is_none()
        );
        drop(held);
        assert!(
            FileLock::try_acquire_existing(&path)
                .expect("try")
                .is_some()
        );
        assert!(FileLock::try_acquire_existing(&t.path().join("missing")).is_err());
    }
}
