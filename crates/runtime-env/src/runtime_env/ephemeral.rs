//! Ephemeral sessions: creating one under its live lock, and sweeping those left behind.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{CREATING_PREFIX, LIVE_LOCK, NS_DIR, SESSIONS_DIR};
use crate::error::Error;
use crate::lock::FileLock;
use crate::namespace::SessionId;
use crate::secure_fs::{self, FsError, Strictness};

/// Creates `sessions/<id>` so that it only ever appears with its liveness lock held: the tree
/// is made under a `.creating-` name, locked, then renamed into place.
pub(super) fn create_session(
    sessions: &Path,
    id: &SessionId,
) -> Result<(PathBuf, EphemeralGuard), Error> {
    let name = id.dir_name();
    let root = sessions.join(&name);
    if fs::symlink_metadata(&root).is_ok() {
        return Err(Error::SessionExists(id.clone()));
    }
    let staging = sessions.join(format!("{CREATING_PREFIX}{name}"));
    match secure_fs::create_private_dir(&staging) {
        Ok(()) => {}
        Err(FsError::AlreadyExists { .. }) => return Err(Error::SessionExists(id.clone())),
        Err(e) => return Err(e.into()),
    }
    let lock = match FileLock::acquire(&staging, LIVE_LOCK) {
        Ok(lock) => lock,
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(e.into());
        }
    };
    if let Err(e) = fs::rename(&staging, &root) {
        let _ = fs::remove_dir_all(&staging);
        return Err(FsError::Io {
            op: "rename session into place",
            path: root,
            source: e,
        }
        .into());
    }
    let guard = EphemeralGuard {
        root: root.clone(),
        lock: Some(lock),
        armed: true,
    };
    Ok((root, guard))
}

/// Removes an ephemeral session's tree when dropped (errors are ignored there; use
/// [`RuntimeEnv::close`] to see them). Holds the session's liveness lock until then.
#[derive(Debug)]
pub(super) struct EphemeralGuard {
    pub(super) root: PathBuf,
    pub(super) lock: Option<FileLock>,
    pub(super) armed: bool,
}

impl EphemeralGuard {
    pub(super) fn remove(&mut self) -> Result<(), FsError> {
        if !self.armed {
            return Ok(());
        }
        self.armed = false;
        // Remove while still holding the lock, so a concurrent sweep treats it as live.
        let result = match fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(secure_fs::io_err("remove session", &self.root)(e)),
        };
        self.lock = None;
        result
    }
}

impl Drop for EphemeralGuard {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// What [`sweep_ephemeral`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepReport {
    /// Sessions removed (stale: unlocked and older than the threshold).
    pub removed: Vec<SessionId>,
    /// Interrupted session creations removed.
    pub removed_incomplete: usize,
    /// Sessions kept because their liveness lock is held.
    pub live: usize,
    /// Sessions kept because they are younger than the threshold.
    pub young: usize,
    /// Entries left alone because they are not session directories or failed a safety check.
    pub skipped: usize,
}

/// Removes stale ephemeral sessions of every namespace under `base_dir`: those whose liveness
/// lock is free (their owner dropped them without cleanup, or died) and whose directory was
/// last modified at least `older_than` ago. Live sessions are never touched.
///
/// # Errors
///
/// [`FsError`] when `base_dir` or a namespace directory fails a safety check; problems with
/// individual entries are counted in [`SweepReport::skipped`] instead.
pub fn sweep_ephemeral(base_dir: &Path, older_than: Duration) -> Result<SweepReport, FsError> {
    let mut report = SweepReport::default();
    secure_fs::require_absolute(base_dir)?;
    let ns_dir = base_dir.join(NS_DIR);
    match fs::symlink_metadata(base_dir) {
        Ok(_) => secure_fs::check_dir(base_dir, Strictness::HostOwned)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(secure_fs::io_err("inspect", base_dir)(e)),
    }
    match fs::symlink_metadata(&ns_dir) {
        Ok(_) => secure_fs::check_dir(&ns_dir, Strictness::Private)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(secure_fs::io_err("inspect", &ns_dir)(e)),
    }
    let now = SystemTime::now();
    for ns in fs::read_dir(&ns_dir).map_err(secure_fs::io_err("list", &ns_dir))? {
        let ns = ns.map_err(secure_fs::io_err("list", &ns_dir))?;
        let sessions = ns.path().join(SESSIONS_DIR);
        if secure_fs::check_dir(&ns.path(), Strictness::Private).is_err() {
            report.skipped += 1;
            continue;
        }
        match fs::symlink_metadata(&sessions) {
            Ok(_) => {}
            Err(_) => continue,
        }
        if secure_fs::check_dir(&sessions, Strictness::Private).is_err() {
            report.skipped += 1;
            continue;
        }
        let Ok(entries) = fs::read_dir(&sessions) else {
            report.skipped += 1;
            continue;
        };
        for entry in entries.flatten() {
            sweep_one(
                &entry.path(),
                &entry.file_name(),
                now,
                older_than,
                &mut report,
            );
        }
    }
    Ok(report)
}

fn sweep_one(
    path: &Path,
    name: &OsStr,
    now: SystemTime,
    older_than: Duration,
    report: &mut SweepReport,
) {
    let Some(name) = name.to_str() else {
        report.skipped += 1;
        return;
    };
    let (incomplete, dir_name) = match name.strip_prefix(CREATING_PREFIX) {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let Some(id) = SessionId::from_dir_name(dir_name) else {
        report.skipped += 1;
        return;
    };
    let Ok(meta) = fs::symlink_metadata(path) else {
        report.skipped += 1;
        return;
    };
    if secure_fs::check_dir(path, Strictness::Private).is_err() {
        report.skipped += 1;
        return;
    }
    let age = meta
        .modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .unwrap_or(Duration::ZERO);
    if age < older_than {
        report.young += 1;
        return;
    }
    let live = path.join(LIVE_LOCK);
    let lock = match FileLock::try_acquire_existing(&live) {
        Ok(Some(lock)) => Some(lock),
        Ok(None) => {
            report.live += 1;
            return;
        }
        // No lock file: a creation interrupted before locking, or a damaged tree.
        Err(_) if fs::symlink_metadata(&live).is_err() => None,
        Err(_) => {
            report.skipped += 1;
            return;
        }
    };
    match fs::remove_dir_all(path) {
        Ok(()) if incomplete => report.removed_incomplete += 1,
        Ok(()) => report.removed.push(id),
        Err(_) => report.skipped += 1,
    }
    drop(lock);
}
