//! Safe creation of private directories (0700) and files (0600), with the ownership, symlink and
//! permission checks that make later path operations race-free.
//!
//! # Trust model
//!
//! * The base directory's ancestors may be symlinks the operator chose (`/var` on macOS), but
//!   every ancestor, followed and canonical, must be owned by root or the current user and must
//!   not be group- or world-writable unless it has the sticky bit (`/tmp`).
//! * The base directory itself must be a real directory (not a symlink), owned by the current
//!   user and not group- or world-writable. It is created 0700 when missing.
//! * Every directory below the base must be a real directory owned by the current user with no
//!   group or other permission bits at all. Missing ones are created 0700.
//!
//! Because nobody but the current user (and root) can write any directory on the path, nobody
//! else can swap a component for a symlink between a check and its use.
//!
//! Modes are set explicitly after creation, so the result is 0700/0600 whatever the umask. The
//! permissions of an existing directory are never changed: a directory that fails a check is
//! refused with an [`FsError`], never repaired.

use std::ffi::OsStr;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Mode of every directory this crate creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file this crate creates.
pub const FILE_MODE: u32 = 0o600;

const STICKY: u32 = 0o1000;

/// A directory or file failed a safety check, or a file-system operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// A path that must be absolute is relative, or contains `..`.
    #[error("`{}` must be an absolute path without `..` components", path.display())]
    NotAbsolute {
        /// The offending path.
        path: PathBuf,
    },
    /// A path component is a symbolic link.
    #[error("`{}` is a symbolic link; refusing to follow it", path.display())]
    Symlink {
        /// The symlink.
        path: PathBuf,
    },
    /// A directory or file is owned by another user.
    #[error("`{}` is owned by uid {owner}, not by the current user", path.display())]
    OwnedByOtherUser {
        /// The path.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
    },
    /// A directory is writable by its group or by everyone.
    #[error("`{}` is group- or world-writable (mode {mode:04o})", path.display())]
    WritableByOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A private directory or file grants permissions to its group or to others.
    #[error("`{}` has mode {mode:04o}; private paths must grant nothing to group or others", path.display())]
    PermissionsTooOpen {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A path that must be a directory is something else.
    #[error("`{}` is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A path that must be a regular file is something else.
    #[error("`{}` is not a regular file", path.display())]
    NotARegularFile {
        /// The path.
        path: PathBuf,
    },
    /// A directory that must be new already exists.
    #[error("`{}` already exists", path.display())]
    AlreadyExists {
        /// The path.
        path: PathBuf,
    },
    /// An I/O operation failed.
    #[error("{op} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

pub(crate) fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> FsError + 'a {
    move |source| FsError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// The effective uid of this process.
pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn perm_bits(meta: &fs::Metadata) -> u32 {
    meta.mode() & 0o7777
}

/// `O_NOFOLLOW | O_NONBLOCK` for opening files: never through a final symlink, never blocking
/// on a FIFO.
pub(crate) fn open_flags() -> i32 {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    // The flag bits are small positive constants on every Unix.
    i32::try_from(flags.bits()).unwrap_or(0)
}

/// Rejects relative paths and `..` components.
pub(crate) fn require_absolute(path: &Path) -> Result<(), FsError> {
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(FsError::NotAbsolute {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// An ancestor is trusted when it is a directory owned by root or us and nobody else can write
/// it (sticky directories excepted).
fn check_trusted_ancestor(path: &Path, meta: &fs::Metadata, uid: u32) -> Result<(), FsError> {
    if !meta.is_dir() {
        return Err(FsError::NotADirectory {
            path: path.to_owned(),
        });
    }
    if meta.uid() != 0 && meta.uid() != uid {
        return Err(FsError::OwnedByOtherUser {
            path: path.to_owned(),
            owner: meta.uid(),
        });
    }
    let mode = perm_bits(meta);
    if mode & 0o022 != 0 && mode & STICKY == 0 {
        return Err(FsError::WritableByOthers {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

fn check_ancestor_chain(dir: &Path, uid: u32) -> Result<(), FsError> {
    for ancestor in dir.ancestors() {
        let meta = fs::metadata(ancestor).map_err(io_err("inspect", ancestor))?;
        check_trusted_ancestor(ancestor, &meta, uid)?;
    }
    Ok(())
}

/// Checks the base directory's ancestors and the base itself, creating the base (0700) when it
/// is missing. The parent of `base` must exist.
///
/// # Errors
///
/// [`FsError`] when any check fails or the base cannot be created.
pub(crate) fn prepare_base(base: &Path) -> Result<(), FsError> {
    require_absolute(base)?;
    let uid = euid();
    let parent = base.parent().ok_or_else(|| FsError::NotAbsolute {
        path: base.to_owned(),
    })?;
    // The lexical chain (each followed) and the canonical chain.
    check_ancestor_chain(parent, uid)?;
    let canonical = fs::canonicalize(parent).map_err(io_err("resolve", parent))?;
    check_ancestor_chain(&canonical, uid)?;

    match fs::symlink_metadata(base) {
        Ok(meta) => check_base_dir(base, &meta, uid),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match create_private_dir(base) {
            Ok(()) => Ok(()),
            Err(FsError::AlreadyExists { .. }) => {
                let meta = fs::symlink_metadata(base).map_err(io_err("inspect", base))?;
                check_base_dir(base, &meta, uid)
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(io_err("inspect", base)(e)),
    }
}

fn check_base_dir(path: &Path, meta: &fs::Metadata, uid: u32) -> Result<(), FsError> {
    check_not_symlink_dir(path, meta)?;
    check_owner(path, meta, uid)?;
    let mode = perm_bits(meta);
    if mode & 0o022 != 0 {
        return Err(FsError::WritableByOthers {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Refuses a path owned by anyone but `uid`.
fn check_owner(path: &Path, meta: &fs::Metadata, uid: u32) -> Result<(), FsError> {
    if meta.uid() == uid {
        Ok(())
    } else {
        Err(FsError::OwnedByOtherUser {
            path: path.to_owned(),
            owner: meta.uid(),
        })
    }
}

fn check_not_symlink_dir(path: &Path, meta: &fs::Metadata) -> Result<(), FsError> {
    if meta.file_type().is_symlink() {
        return Err(FsError::Symlink {
            path: path.to_owned(),
        });
    }
    if !meta.is_dir() {
        return Err(FsError::NotADirectory {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// How strictly an existing directory below the base is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// Crate-managed: owned by us, no group/other bits at all.
    Private,
    /// The host's own directory (shared level): owned by us, not writable by others.
    HostOwned,
}

/// Checks an existing directory (never following a symlink).
pub(crate) fn check_dir(path: &Path, strictness: Strictness) -> Result<(), FsError> {
    let meta = fs::symlink_metadata(path).map_err(io_err("inspect", path))?;
    check_dir_meta(path, &meta, strictness)
}

fn check_dir_meta(path: &Path, meta: &fs::Metadata, strictness: Strictness) -> Result<(), FsError> {
    check_not_symlink_dir(path, meta)?;
    let uid = euid();
    check_owner(path, meta, uid)?;
    let mode = perm_bits(meta);
    if mode & 0o022 != 0 {
        return Err(FsError::WritableByOthers {
            path: path.to_owned(),
            mode,
        });
    }
    if strictness == Strictness::Private && mode & 0o077 != 0 {
        return Err(FsError::PermissionsTooOpen {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Creates one directory with mode 0700 regardless of the umask. Fails with
/// [`FsError::AlreadyExists`] when the path exists.
pub(crate) fn create_private_dir(path: &Path) -> Result<(), FsError> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(FsError::AlreadyExists {
                path: path.to_owned(),
            });
        }
        Err(e) => return Err(io_err("create directory", path)(e)),
    }
    // The umask can only remove bits; set the mode explicitly anyway so that a umask such as
    // 0o200 cannot leave the directory unusable. We just created it, so it is ours.
    fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
        .map_err(io_err("set permissions of", path))
}

/// Ensures `parent/name` is a directory that passes the checks for `strictness`, creating it
/// (0700) when missing. `parent` must already have been checked.
pub(crate) fn ensure_dir(
    parent: &Path,
    name: &OsStr,
    strictness: Strictness,
) -> Result<PathBuf, FsError> {
    let path = parent.join(name);
    match fs::symlink_metadata(&path) {
        Ok(meta) => check_dir_meta(&path, &meta, strictness)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => match create_private_dir(&path) {
            Ok(()) => {}
            // Lost a creation race with another process of ours: judge what it made.
            Err(FsError::AlreadyExists { .. }) => check_dir(&path, strictness)?,
            Err(e) => return Err(e),
        },
        Err(e) => return Err(io_err("inspect", &path)(e)),
    }
    Ok(path)
}

/// Ensures every component of `rel` below the checked directory `root` (see [`ensure_dir`]).
pub(crate) fn ensure_dirs<'a>(
    root: &Path,
    rel: impl IntoIterator<Item = &'a OsStr>,
    strictness: Strictness,
) -> Result<PathBuf, FsError> {
    let mut dir = root.to_owned();
    for name in rel {
        dir = ensure_dir(&dir, name, strictness)?;
    }
    Ok(dir)
}

/// Checks an existing file: a regular file (not a symlink) owned by us with no group/other bits.
fn check_private_file(path: &Path, meta: &fs::Metadata) -> Result<(), FsError> {
    if meta.file_type().is_symlink() {
        return Err(FsError::Symlink {
            path: path.to_owned(),
        });
    }
    if !meta.is_file() {
        return Err(FsError::NotARegularFile {
            path: path.to_owned(),
        });
    }
    check_owner(path, meta, euid())?;
    let mode = perm_bits(meta);
    if mode & 0o077 != 0 {
        return Err(FsError::PermissionsTooOpen {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Creates a new file with mode 0600 regardless of the umask; fails if it exists.
fn create_private_file(path: &Path) -> Result<File, FsError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(open_flags())
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                FsError::AlreadyExists {
                    path: path.to_owned(),
                }
            } else {
                io_err("create file", path)(e)
            }
        })?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(io_err("set permissions of", path))?;
    Ok(file)
}

/// Opens `dir/name` for reading and writing, creating it (0600) when missing. An existing file
/// must pass the private-file checks. `dir` must already have been checked.
pub(crate) fn open_private_file(dir: &Path, name: &str) -> Result<File, FsError> {
    let path = dir.join(name);
    loop {
        match fs::symlink_metadata(&path) {
            Ok(meta) => {
                check_private_file(&path, &meta)?;
                return OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(open_flags())
                    .open(&path)
                    .map_err(io_err("open", &path));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match create_private_file(&path) {
                Ok(file) => return Ok(file),
                Err(FsError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            },
            Err(e) => return Err(io_err("inspect", &path)(e)),
        }
    }
}

/// Opens an existing private file without creating it; `Ok(None)` when it does not exist.
pub(crate) fn open_existing_private_file(path: &Path) -> Result<Option<File>, FsError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            check_private_file(path, &meta)?;
            OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(open_flags())
                .open(path)
                .map(Some)
                .map_err(io_err("open", path))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("inspect", path)(e)),
    }
}

/// Atomically replaces `dir/name` with `contents`: a 0600 temporary file in `dir`, fsync,
/// rename, fsync of `dir`. `dir` must already have been checked. An existing `name` that is a
/// symlink is replaced, never followed.
pub(crate) fn write_private_file(
    dir: &Path,
    name: &str,
    contents: &[u8],
) -> Result<PathBuf, FsError> {
    let target = dir.join(name);
    if let Ok(meta) = fs::symlink_metadata(&target)
        && meta.is_dir()
    {
        return Err(FsError::NotARegularFile { path: target });
    }
    let (tmp_path, mut file) = loop {
        let tmp = dir.join(format!(
            ".{name}.tmp-{}",
            crate::namespace::SessionId::generate()
        ));
        match create_private_file(&tmp) {
            Ok(file) => break (tmp, file),
            Err(FsError::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        file.write_all(contents)
            .map_err(io_err("write", &tmp_path))?;
        file.sync_all().map_err(io_err("sync", &tmp_path))?;
        fs::rename(&tmp_path, &target).map_err(io_err("rename into place", &target))?;
        // Make the rename durable; a failure here leaves the new content in place.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result.map(|()| target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).expect("stat").mode() & 0o7777
    }

    #[test]
    fn base_is_created_private_and_reused() {
        let t = tempfile::tempdir().expect("tempdir");
        let base = t.path().join("base");
        prepare_base(&base).expect("create");
        assert_eq!(mode(&base), 0o700);
        prepare_base(&base).expect("reuse");
    }

    #[test]
    fn relative_and_dotdot_bases_are_refused() {
        assert!(matches!(
            prepare_base(Path::new("rel/base")),
            Err(FsError::NotAbsolute { .. })
        ));
        assert!(matches!(
            prepare_base(Path::new("/tmp/../tmp/x")),
            Err(FsError::NotAbsolute { .. })
        ));
    }

    #[test]
    fn base_symlink_and_writable_base_are_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        let real = t.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        fs::set_permissions(&real, Permissions::from_mode(0o700)).expect("chmod");
        let link = t.path().join("link");
        symlink(&real, &link).expect("symlink");
        assert!(matches!(prepare_base(&link), Err(FsError::Symlink { .. })));
        fs::set_permissions(&real, Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(
            prepare_base(&real),
            Err(FsError::WritableByOthers { mode: 0o777, .. })
        ));
        // Never repaired.
        assert_eq!(mode(&real), 0o777);
    }

    #[test]
    fn untrusted_ancestor_is_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        let open = t.path().join("open");
        fs::create_dir(&open).expect("mkdir");
        fs::set_permissions(&open, Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(
            prepare_base(&open.join("base")),
            Err(FsError::WritableByOthers { .. })
        ));
        // Sticky world-writable directories (like /tmp) are fine.
        fs::set_permissions(&open, Permissions::from_mode(0o1777)).expect("chmod");
        prepare_base(&open.join("base")).expect("sticky parent");
    }

    #[test]
    fn ensure_dir_checks_existing_dirs() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("root");
        prepare_base(&root).expect("base");
        let a = ensure_dir(&root, OsStr::new("a"), Strictness::Private).expect("create");
        assert_eq!(mode(&a), 0o700);
        fs::set_permissions(&a, Permissions::from_mode(0o755)).expect("chmod");
        assert!(matches!(
            ensure_dir(&root, OsStr::new("a"), Strictness::Private),
            Err(FsError::PermissionsTooOpen { mode: 0o755, .. })
        ));
        ensure_dir(&root, OsStr::new("a"), Strictness::HostOwned).expect("host-owned accepts 0755");
        assert_eq!(mode(&a), 0o755, "never changed");
        fs::write(root.join("f"), b"x").expect("write");
        assert!(matches!(
            ensure_dir(&root, OsStr::new("f"), Strictness::Private),
            Err(FsError::NotADirectory { .. })
        ));
        symlink(&a, root.join("l")).expect("symlink");
        assert!(matches!(
            ensure_dir(&root, OsStr::new("l"), Strictness::Private),
            Err(FsError::Symlink { .. })
        ));
    }

    #[test]
    fn private_files() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("root");
        prepare_base(&root).expect("base");
        let p = write_private_file(&root, "c.toml", b"one").expect("write");
        assert_eq!(mode(&p), 0o600);
        write_private_file(&root, "c.toml", b"two").expect("rewrite");
        assert_eq!(fs::read(&p).expect("read"), b"two");
        let leftovers: Vec<_> = fs::read_dir(&root)
            .expect("list")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());

        let f = open_private_file(&root, "l.lock").expect("lock file");
        drop(f);
        assert_eq!(mode(&root.join("l.lock")), 0o600);
        fs::set_permissions(root.join("l.lock"), Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(
            open_private_file(&root, "l.lock"),
            Err(FsError::PermissionsTooOpen { .. })
        ));
        symlink(root.join("c.toml"), root.join("s.lock")).expect("symlink");
        assert!(matches!(
            open_private_file(&root, "s.lock"),
            Err(FsError::Symlink { .. })
        ));
        // Writing over a symlink replaces the link, never the target.
        write_private_file(&root, "s.lock", b"new").expect("replace link");
        assert_eq!(fs::read(root.join("c.toml")).expect("read"), b"two");
        assert!(
            !fs::symlink_metadata(root.join("s.lock"))
                .expect("stat")
                .file_type()
                .is_symlink()
        );
    }
}
