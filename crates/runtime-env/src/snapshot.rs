//! Snapshot of each runtime's implicit config and policy sources: placeholder paths, a status
//! per source, raw-byte BLAKE3 hashes, and a deterministic JSON serialization.
//!
//! * Paths are written relative to placeholders (`${HOME}/.codex/config.toml`,
//!   `${CWD}/AGENTS.md`; machine-wide files keep their absolute path), so two namespaces whose
//!   files have equal content give byte-identical snapshots.
//! * A file's hash is `blake3(raw bytes)` in lower-case hex: what `b3sum` prints.
//! * A directory's hash covers its sorted, recursive listing: for each entry, a tag (file,
//!   directory, symlink, other), the length-prefixed relative path, and the file's hash or the
//!   symlink's target. Symlinks inside are recorded, never followed. It is keyed with
//!   [`DIR_HASH_CONTEXT`].
//! * Credential sources get [`SourceStatus::CredentialPresent`] or [`SourceStatus::Absent`] and
//!   never a hash; they are never opened.
//! * Sources are listed in descriptor-table order, and the JSON has fixed field order and no
//!   maps, so [`Snapshot::to_json`] is deterministic.

use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::Serialize;

use crate::paths::Anchors;
use crate::runtime::{SourceKind, SourceSpec};
use crate::secure_fs;

/// Version of the snapshot format, written into every snapshot.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// BLAKE3 key-derivation context of directory hashes.
pub const DIR_HASH_CONTEXT: &str = "runtime-env 2026-11 snapshot directory listing v1";

/// Largest file hashed; bigger files are recorded as unreadable.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Most entries hashed in one directory source; more is recorded as unreadable.
pub const MAX_DIR_ENTRIES: usize = 10_000;
/// Deepest nesting hashed in one directory source.
pub const MAX_DIR_DEPTH: usize = 16;

/// What was found at a source's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceStatus {
    /// Present and hashed.
    Present,
    /// Nothing there.
    Absent,
    /// Something there that could not be hashed: wrong type, no permission, too large.
    Unreadable,
    /// A credential source is present. Presence only: never read, never hashed.
    CredentialPresent,
}

/// One implicit source of a runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SourceRecord {
    /// Placeholder path.
    pub path: String,
    /// What the source contributes.
    pub kind: SourceKind,
    /// What was found.
    pub status: SourceStatus,
    /// Lower-case hex BLAKE3 hash, for [`SourceStatus::Present`] only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
}

/// The implicit sources of one runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RuntimeSnapshot {
    /// The runtime's name ([`RuntimeDescriptor::name`](crate::RuntimeDescriptor::name)).
    pub runtime: &'static str,
    /// Its sources, in descriptor-table order (config sources, then credential files).
    pub sources: Vec<SourceRecord>,
}

/// A snapshot of the implicit sources of one or more runtimes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Snapshot {
    /// [`SNAPSHOT_FORMAT`].
    pub format: u32,
    /// One entry per runtime, in the order requested.
    pub runtimes: Vec<RuntimeSnapshot>,
}

impl Snapshot {
    /// The deterministic JSON form (compact, fixed field order).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .expect("a snapshot holds only strings, integers, enums and vectors")
    }
}

/// The snapshot of the runtimes whose anchors are given, in that order.
pub(crate) fn take<'a>(runtimes: impl IntoIterator<Item = Anchors<'a>>) -> Snapshot {
    Snapshot {
        format: SNAPSHOT_FORMAT,
        runtimes: runtimes
            .into_iter()
            .map(|anchors| {
                let d = anchors.runtime;
                RuntimeSnapshot {
                    runtime: d.name,
                    sources: d
                        .sources
                        .iter()
                        .chain(d.credential_files)
                        .map(|spec| record(spec, &anchors))
                        .collect(),
                }
            })
            .collect(),
    }
}

fn record(spec: &SourceSpec, anchors: &Anchors<'_>) -> SourceRecord {
    let (path, shown) = anchors.resolve(spec);
    let (status, hash) = if spec.kind == SourceKind::Credential {
        (presence(&path), None)
    } else if spec.is_dir {
        hash_dir_source(&path)
    } else {
        hash_file_source(&path)
    };
    SourceRecord {
        path: shown,
        kind: spec.kind,
        status,
        blake3: hash.map(|h| h.to_hex().to_string()),
    }
}

fn is_absent(e: &io::Error) -> bool {
    // ENOTDIR: a parent component is a file, so nothing can be there.
    e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory
}

fn presence(path: &Path) -> SourceStatus {
    match fs::metadata(path) {
        Ok(_) => SourceStatus::CredentialPresent,
        Err(e) if is_absent(&e) => SourceStatus::Absent,
        Err(_) => SourceStatus::Unreadable,
    }
}

fn hash_file_source(path: &Path) -> (SourceStatus, Option<blake3::Hash>) {
    match fs::metadata(path) {
        Err(e) if is_absent(&e) => (SourceStatus::Absent, None),
        Err(_) => (SourceStatus::Unreadable, None),
        Ok(meta) if !meta.is_file() => (SourceStatus::Unreadable, None),
        Ok(_) => match hash_file(path, true) {
            Some(h) => (SourceStatus::Present, Some(h)),
            None => (SourceStatus::Unreadable, None),
        },
    }
}

/// Hashes a regular file's raw bytes; `None` when it is not a regular file (checked on the open
/// handle), is too large or cannot be read.
fn hash_file(path: &Path, follow: bool) -> Option<blake3::Hash> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    let flags = secure_fs::open_flags();
    // Never block on a FIFO; inside directory sources, never follow a symlink either.
    opts.custom_flags(if follow {
        flags & !i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
    } else {
        flags
    });
    let file = opts.open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut hasher = blake3::Hasher::new();
    let mut limited = file.take(MAX_FILE_BYTES + 1);
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let n = limited.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    (total <= MAX_FILE_BYTES).then(|| hasher.finalize())
}

fn hash_dir_source(path: &Path) -> (SourceStatus, Option<blake3::Hash>) {
    match fs::metadata(path) {
        Err(e) if is_absent(&e) => (SourceStatus::Absent, None),
        Err(_) => (SourceStatus::Unreadable, None),
        Ok(meta) if !meta.is_dir() => (SourceStatus::Unreadable, None),
        Ok(_) => match hash_dir(path) {
            Some(h) => (SourceStatus::Present, Some(h)),
            None => (SourceStatus::Unreadable, None),
        },
    }
}

enum Entry {
    File(blake3::Hash),
    Dir,
    Symlink(Vec<u8>),
    Other,
}

fn hash_dir(root: &Path) -> Option<blake3::Hash> {
    let mut entries: Vec<(Vec<u8>, Entry)> = Vec::new();
    collect(root, &[], 0, &mut entries)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = blake3::Hasher::new_derive_key(DIR_HASH_CONTEXT);
    for (rel, entry) in &entries {
        let (tag, payload): (u8, &[u8]) = match entry {
            Entry::File(h) => (b'f', h.as_bytes()),
            Entry::Dir => (b'd', &[]),
            Entry::Symlink(target) => (b'l', target),
            Entry::Other => (b'o', &[]),
        };
        hasher.update(&[tag]);
        hasher.update(&(rel.len() as u64).to_le_bytes());
        hasher.update(rel);
        hasher.update(&(payload.len() as u64).to_le_bytes());
        hasher.update(payload);
    }
    Some(hasher.finalize())
}

/// Collects entries below `dir` (relative paths `/`-joined); `None` on any limit or error.
fn collect(dir: &Path, prefix: &[u8], depth: usize, out: &mut Vec<(Vec<u8>, Entry)>) -> Option<()> {
    if depth > MAX_DIR_DEPTH {
        return None;
    }
    for item in fs::read_dir(dir).ok()? {
        let item = item.ok()?;
        if out.len() >= MAX_DIR_ENTRIES {
            return None;
        }
        let name = item.file_name();
        let mut rel = prefix.to_vec();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name.as_bytes());
        let ft = item.file_type().ok()?;
        let path = item.path();
        if ft.is_symlink() {
            let target = fs::read_link(&path).ok()?;
            out.push((rel, Entry::Symlink(target.as_os_str().as_bytes().to_vec())));
        } else if ft.is_dir() {
            out.push((rel.clone(), Entry::Dir));
            collect(&path, &rel, depth + 1, out)?;
        } else if ft.is_file() {
            out.push((rel, Entry::File(hash_file(&path, false)?)));
        } else {
            out.push((rel, Entry::Other));
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_hash_is_plain_blake3() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("f");
        fs::write(&p, b"hello").expect("write");
        assert_eq!(hash_file_source(&p).1, Some(blake3::hash(b"hello")));
        assert_eq!(
            hash_file_source(&t.path().join("missing")).0,
            SourceStatus::Absent
        );
        assert_eq!(
            hash_file_source(&p.join("under-a-file")).0,
            SourceStatus::Absent
        );
        assert_eq!(hash_file_source(t.path()).0, SourceStatus::Unreadable);
    }

    #[test]
    fn dir_hash_depends_on_names_content_and_links() {
        let t = tempfile::tempdir().expect("tempdir");
        let d = t.path().join("d");
        fs::create_dir_all(d.join("sub")).expect("mkdir");
        fs::write(d.join("a"), b"1").expect("write");
        fs::write(d.join("sub/b"), b"2").expect("write");
        let h1 = hash_dir(&d).expect("hash");
        assert_eq!(hash_dir(&d), Some(h1), "stable");
        fs::write(d.join("sub/b"), b"3").expect("write");
        let h2 = hash_dir(&d).expect("hash");
        assert_ne!(h1, h2);
        fs::rename(d.join("a"), d.join("c")).expect("rename");
        let h3 = hash_dir(&d).expect("hash");
        assert_ne!(h2, h3);
        std::os::unix::fs::symlink("/etc/passwd", d.join("l")).expect("symlink");
        let h4 = hash_dir(&d).expect("hash");
        assert_ne!(h3, h4);
        assert_eq!(hash_dir_source(&d.join("c")).0, SourceStatus::Unreadable);
    }
}
