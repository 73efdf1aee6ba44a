//! The durable session map: one small JSON file per ACP session, mapping its id to its Thread
//! key, its workspace and its credential namespace.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// One ACP session as stored: what `session/resume`, `session/prompt` and `session/list` need.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The ACP session id (`sess-` and 32 hex digits).
    pub session_id: String,
    /// The key of the Thread that holds its conversation.
    pub thread_key: String,
    /// The session's working directory, as the editor gave it to `session/new`.
    pub cwd: PathBuf,
    /// The credential namespace whose session this is.
    pub namespace: String,
    /// Whether a turn of this session ever succeeded: from then on every prompt resumes its
    /// Thread or fails (never starts over).
    pub prompted: bool,
    /// Milliseconds since the Unix epoch of the session's creation.
    pub created_ms: u64,
    /// Milliseconds since the Unix epoch of its last change.
    pub updated_ms: u64,
}

/// Sessions in a directory, one file each, written atomically (a temporary file, fsync,
/// rename, fsync of the directory) with mode 0600 in a 0700 directory. A namespace sees its own
/// sessions only.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    namespace: String,
}

/// Whether `id` is a session id this store writes (so it is safe as a file name).
pub(crate) fn valid_id(id: &str) -> bool {
    id.strip_prefix("sess-")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl SessionStore {
    /// The sessions of `namespace` in `dir` (created, 0700, when a session is first written).
    pub fn new(dir: impl Into<PathBuf>, namespace: impl Into<String>) -> Self {
        Self {
            dir: dir.into(),
            namespace: namespace.into(),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new session of this namespace for `cwd`, written durably before this returns.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn create(&self, cwd: PathBuf) -> std::io::Result<SessionRecord> {
        let hex = uuid::Uuid::now_v7().simple().to_string();
        let now = now_ms();
        let record = SessionRecord {
            session_id: format!("sess-{hex}"),
            thread_key: format!("acp/{hex}"),
            cwd,
            namespace: self.namespace.clone(),
            prompted: false,
            created_ms: now,
            updated_ms: now,
        };
        self.save(&record)?;
        Ok(record)
    }

    /// The session `id` of this namespace, or `None` (an unknown id, a malformed one, or
    /// another namespace's session).
    ///
    /// # Errors
    /// When the file exists but cannot be read or parsed.
    pub fn load(&self, id: &str) -> std::io::Result<Option<SessionRecord>> {
        if !valid_id(id) {
            return Ok(None);
        }
        let text = match std::fs::read(self.path(id)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let record: SessionRecord = serde_json::from_slice(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok((record.namespace == self.namespace && record.session_id == id).then_some(record))
    }

    /// Writes `record` atomically.
    ///
    /// # Errors
    /// When the directory or the file cannot be written.
    pub fn save(&self, record: &SessionRecord) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        if !valid_id(&record.session_id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a session id of this store",
            ));
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let text = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            record.session_id,
            uuid::Uuid::now_v7().simple()
        ));
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&tmp, self.path(&record.session_id))?;
            std::fs::File::open(&self.dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// This namespace's sessions, those in `cwd` only when given, the latest changed first.
    ///
    /// # Errors
    /// When the directory cannot be read (a missing one holds no session).
    pub fn list(&self, cwd: Option<&Path>) -> std::io::Result<Vec<SessionRecord>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut sessions = Vec::new();
        for entry in entries {
            let name = entry?.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            // A file another writer left unreadable is skipped, not fatal to the listing.
            if let Ok(Some(record)) = self.load(id)
                && cwd.is_none_or(|cwd| record.cwd == cwd)
            {
                sessions.push(record);
            }
        }
        sessions.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        Ok(sessions)
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }
}

/// `ms` since the Unix epoch as an RFC 3339 UTC timestamp.
pub(crate) fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(
            || format!("{ms}ms"),
            |t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_200_123), "2024-03-01T00:00:00.123Z");
    }

    #[test]
    fn sessions_are_durable_private_and_per_namespace() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("acp-sessions-{}", uuid::Uuid::now_v7()));
        let store = SessionStore::new(&dir, "user:a");
        let record = store.create(PathBuf::from("/w")).unwrap();
        let mode = std::fs::metadata(dir.join(format!("{}.json", record.session_id)))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            store.load(&record.session_id).unwrap(),
            Some(record.clone())
        );
        assert_eq!(store.list(Some(Path::new("/w"))).unwrap().len(), 1);
        assert!(store.list(Some(Path::new("/x"))).unwrap().is_empty());
        let other = SessionStore::new(&dir, "user:b");
        assert_eq!(other.load(&record.session_id).unwrap(), None);
        assert!(other.list(None).unwrap().is_empty());
        assert_eq!(store.load("../../etc/passwd").unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
