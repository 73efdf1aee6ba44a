//! The one error type every store returns, with the classes callers branch on.

use compat_fingerprint::ShortDigest;

/// Why a store operation failed.
///
/// Callers branch on the variant: [`Busy`](StoreError::Busy) means "try later",
/// [`LeaseLost`](StoreError::LeaseLost) means "stop: another host owns this Thread now",
/// [`Unavailable`](StoreError::Unavailable) means "the backend could not be reached; the
/// operation may be retried". Keys, targets and owners are caller-supplied strings, so messages
/// name them by a [`ShortDigest`], never verbatim, and no variant carries a stored value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another owner holds a live lease on the target.
    #[error("lease target {target} is held by another owner")]
    Busy {
        /// Digest of the lease target.
        target: ShortDigest,
    },
    /// A lease the caller presented is no longer current: it was released, it expired, or
    /// another owner acquired the target since (its fencing token is stale). Nothing was
    /// written.
    #[error("lease on target {target} is no longer held (released, expired or taken over)")]
    LeaseLost {
        /// Digest of the lease target.
        target: ShortDigest,
    },
    /// `require_key_absent` was set and the key is already bound. Nothing was written.
    #[error("thread key {key} already exists")]
    AlreadyExists {
        /// Digest of the key.
        key: ShortDigest,
    },
    /// A record the request refers to (the previous record to archive) does not exist.
    /// Nothing was written.
    #[error("record {record} does not exist")]
    NotFound {
        /// Digest of the record id.
        record: ShortDigest,
    },
    /// The request itself is malformed (an empty key, a zero TTL, a record id that belongs to
    /// another key). Nothing was written.
    #[error("invalid request: {reason}")]
    InvalidInput {
        /// What is wrong, without the offending value.
        reason: String,
    },
    /// Stored data cannot be read: a damaged database file, a record or schema version this
    /// build does not know, or a field that does not decode. The message says what was found.
    #[error("stored data is unreadable: {detail}")]
    Corrupt {
        /// What was found, without stored values.
        detail: String,
    },
    /// A file of the SQLite store exists but is not private to the current user: a symlink,
    /// not a regular file, owned by another user, or open to its group or to others. The store
    /// refuses to open it and changes nothing; fix or remove the file, then open again. The
    /// message names the file by its role, never by its path.
    #[error("the SQLite {file} is not safe to open: {reason}; nothing was changed")]
    UnsafeFile {
        /// Which file.
        file: StoreFile,
        /// What is wrong with it.
        reason: UnsafeFileReason,
    },
    /// The backend could not be reached or failed (connection, I/O, lock timeout). The
    /// operation may be retried; a failed write wrote nothing.
    #[error("thread store backend unavailable: {detail}")]
    Unavailable {
        /// What failed, without stored values.
        detail: String,
    },
}

/// One of the files a SQLite store keeps next to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreFile {
    /// The database file itself (the configured path).
    Database,
    /// The write-ahead log, the path with `-wal` appended.
    WriteAheadLog,
    /// The WAL index, the path with `-shm` appended.
    SharedMemory,
    /// A rollback journal, the path with `-journal` appended.
    RollbackJournal,
}

impl std::fmt::Display for StoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Database => "database file",
            Self::WriteAheadLog => "write-ahead log (-wal)",
            Self::SharedMemory => "shared-memory file (-shm)",
            Self::RollbackJournal => "rollback journal (-journal)",
        })
    }
}

/// Why an existing store file is not safe to open ([`StoreError::UnsafeFile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnsafeFileReason {
    /// The path is a symbolic link; the store never follows one.
    Symlink,
    /// The path is not a regular file (a directory, a FIFO, a device, a socket).
    NotARegularFile,
    /// The file belongs to another user.
    OwnedByAnotherUser {
        /// The owner's uid.
        owner: u32,
    },
    /// The file grants some permission to its group or to others.
    OpenToOthers {
        /// Its permission bits (such as `0o644`).
        mode: u32,
    },
}

impl std::fmt::Display for UnsafeFileReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Symlink => f.write_str("it is a symbolic link"),
            Self::NotARegularFile => f.write_str("it is not a regular file"),
            Self::OwnedByAnotherUser { owner } => {
                write!(f, "it is owned by uid {owner}, not by the current user")
            }
            Self::OpenToOthers { mode } => write!(
                f,
                "its mode {mode:04o} grants access to group or others (expected 0600)"
            ),
        }
    }
}

impl StoreError {
    pub(crate) fn busy(target: &str) -> Self {
        Self::Busy {
            target: ShortDigest::of_str(target),
        }
    }

    pub(crate) fn lease_lost(target: &str) -> Self {
        Self::LeaseLost {
            target: ShortDigest::of_str(target),
        }
    }

    pub(crate) fn already_exists(key: &str) -> Self {
        Self::AlreadyExists {
            key: ShortDigest::of_str(key),
        }
    }

    pub(crate) fn not_found(record: &str) -> Self {
        Self::NotFound {
            record: ShortDigest::of_str(record),
        }
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            reason: reason.into(),
        }
    }

    pub(crate) fn corrupt(detail: impl Into<String>) -> Self {
        Self::Corrupt {
            detail: detail.into(),
        }
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn unavailable(detail: impl Into<String>) -> Self {
        Self::Unavailable {
            detail: detail.into(),
        }
    }

    /// Whether retrying the same call later may succeed ([`Busy`](Self::Busy) and
    /// [`Unavailable`](Self::Unavailable)).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Busy { .. } | Self::Unavailable { .. })
    }
}

/// Describes a JSON decoding failure by its category and position only: serde's messages can
/// quote the offending input, which may be anything a caller stored.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn describe_json_error(err: &serde_json::Error) -> String {
    let class = match err.classify() {
        serde_json::error::Category::Io => "an I/O error",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "a value of the wrong shape",
        serde_json::error::Category::Eof => "unexpected end of input",
    };
    format!("{class} at line {} column {}", err.line(), err.column())
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn messages_name_caller_strings_by_digest_only() {
        let target = "thread:customer-4711/secret-project";
        for e in [
            StoreError::busy(target),
            StoreError::lease_lost(target),
            StoreError::already_exists(target),
            StoreError::not_found(target),
        ] {
            let shown = format!("{e} {e:?}");
            assert!(!shown.contains("customer-4711"), "{shown}");
            let digest = compat_fingerprint::ShortDigest::of_str(target).to_string();
            assert!(shown.contains(&digest), "{shown} lacks the digest {digest}");
        }
    }

    #[test]
    fn unsafe_file_names_the_role_and_is_not_retryable() {
        let e = StoreError::UnsafeFile {
            file: super::StoreFile::WriteAheadLog,
            reason: super::UnsafeFileReason::OpenToOthers { mode: 0o644 },
        };
        assert_eq!(
            e.to_string(),
            "the SQLite write-ahead log (-wal) is not safe to open: its mode 0644 grants \
             access to group or others (expected 0600); nothing was changed"
        );
        assert!(!e.is_retryable());
    }

    #[test]
    fn retryable_classes() {
        assert!(StoreError::busy("t").is_retryable());
        assert!(!StoreError::lease_lost("t").is_retryable());
        assert!(!StoreError::corrupt("x").is_retryable());
    }
}
