//! The private-file checks of the SQLite database and its companions.

// The file checks below are local on purpose: runtime-env has similar ones in its crate-private
// `secure_fs`, but the store is a lower layer than the runtime environment, and a dependency
// edge for four checks would pull its whole crate into every store user. rustix supplies what
// std lacks (O_NOFOLLOW, the effective uid) without unsafe code.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::{StoreError, StoreFile, UnsafeFileReason};

/// The companions SQLite may keep next to the database file, by suffix.
const COMPANIONS: [(&str, StoreFile); 3] = [
    ("-wal", StoreFile::WriteAheadLog),
    ("-shm", StoreFile::SharedMemory),
    ("-journal", StoreFile::RollbackJournal),
];

/// The exact mode of every file the store creates.
const PRIVATE_MODE: u32 = 0o600;

/// Opens the database file without following a symlink, creating it with mode exactly 0600 if
/// it is missing, and checks it and every existing companion (see the module docs).
pub(super) fn open_private_file(path: &Path) -> Result<std::fs::File, StoreError> {
    use rustix::fs::{Mode, OFlags};
    let uid = rustix::process::geteuid().as_raw();
    // NONBLOCK: opening a FIFO planted at the path must not hang; it is refused below.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(PRIVATE_MODE);
    let file = match rustix::fs::open(path, flags | OFlags::CREATE | OFlags::EXCL, mode) {
        Ok(fd) => {
            // We created it: fchmod makes it exactly 0600, whatever the umask.
            rustix::fs::fchmod(&fd, mode).map_err(|e| cannot("set the mode of", e.into()))?;
            std::fs::File::from(fd)
        }
        Err(rustix::io::Errno::EXIST) => match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => std::fs::File::from(fd),
            Err(e) => {
                // O_NOFOLLOW reports a symlink as ELOOP (EMLINK on some BSDs): ask lstat.
                if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(unsafe_file(StoreFile::Database, UnsafeFileReason::Symlink));
                }
                return Err(cannot("open", e.into()));
            }
        },
        Err(e) => return Err(cannot("create", e.into())),
    };
    let meta = file.metadata().map_err(|e| cannot("inspect", e))?;
    check_private(StoreFile::Database, &meta, uid)?;
    check_companions(path, uid)?;
    Ok(file)
}

/// After SQLite opened the path: it is still the file that was checked, and the companions
/// SQLite created (or found) are private.
pub(super) fn verify_after_open(path: &Path, checked: &std::fs::File) -> Result<(), StoreError> {
    let uid = rustix::process::geteuid().as_raw();
    let now = std::fs::symlink_metadata(path).map_err(|e| cannot("inspect", e))?;
    let was = checked.metadata().map_err(|e| cannot("inspect", e))?;
    if (now.dev(), now.ino()) != (was.dev(), was.ino()) {
        return Err(StoreError::unavailable(
            "the SQLite file was replaced while the store opened it",
        ));
    }
    check_private(StoreFile::Database, &now, uid)?;
    check_companions(path, uid)
}

fn check_companions(path: &Path, uid: u32) -> Result<(), StoreError> {
    for (suffix, file) in COMPANIONS {
        let mut name = OsString::from(path.as_os_str());
        name.push(suffix);
        match std::fs::symlink_metadata(&name) {
            Ok(meta) => check_private(file, &meta, uid)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot("inspect", e)),
        }
    }
    Ok(())
}

/// A regular file (not a symlink), owned by `uid`, with no group or other permission bits.
fn check_private(file: StoreFile, meta: &std::fs::Metadata, uid: u32) -> Result<(), StoreError> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(unsafe_file(file, UnsafeFileReason::Symlink));
    }
    if !kind.is_file() {
        return Err(unsafe_file(file, UnsafeFileReason::NotARegularFile));
    }
    if meta.uid() != uid {
        return Err(unsafe_file(
            file,
            UnsafeFileReason::OwnedByAnotherUser { owner: meta.uid() },
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_file(file, UnsafeFileReason::OpenToOthers { mode }));
    }
    Ok(())
}

fn unsafe_file(file: StoreFile, reason: UnsafeFileReason) -> StoreError {
    StoreError::UnsafeFile { file, reason }
}

/// A file-system failure, named by the operation and the error kind, never by the path.
fn cannot(what: &str, e: std::io::Error) -> StoreError {
    StoreError::unavailable(format!("cannot {what} the SQLite file: {}", e.kind()))
}
