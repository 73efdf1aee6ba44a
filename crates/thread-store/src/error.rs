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
    /// The backend could not be reached or failed (connection, I/O, lock timeout). The
    /// operation may be retried; a failed write wrote nothing.
    #[error("thread store backend unavailable: {detail}")]
    Unavailable {
        /// What failed, without stored values.
        detail: String,
    },
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
    fn retryable_classes() {
        assert!(StoreError::busy("t").is_retryable());
        assert!(!StoreError::lease_lost("t").is_retryable());
        assert!(!StoreError::corrupt("x").is_retryable());
    }
}
