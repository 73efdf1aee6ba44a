//! The durable Thread record: identity, compatibility fingerprint and session checkpoint.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use compat_fingerprint::{Breakdown, Fingerprint};

use crate::StoreError;

/// The version of the record layout this build writes and reads. A stored record with any
/// other version is reported as [`StoreError::Corrupt`], never guessed at.
pub const RECORD_FORMAT_VERSION: u32 = 1;

/// The longest record id, key, lease target or owner the stores accept, in bytes.
pub const MAX_NAME_LEN: usize = 512;

/// A point in time: whole milliseconds since the Unix epoch (UTC).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Self = Self(0);

    /// The timestamp this many milliseconds after the epoch (negative is before).
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// The current time of the system clock, saturated to the `i64` range.
    pub fn now() -> Self {
        let millis = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_millis())
                .map(|m| -m)
                .unwrap_or(i64::MIN),
        };
        Self(millis)
    }

    /// This time plus `duration`, saturating at the end of the `i64` range.
    pub fn saturating_add(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(millis))
    }
}

/// The unique id of one record. Fresh ids are UUIDv7 strings: unique across hosts without
/// coordination, and ordered by creation time.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RecordId(String);

impl RecordId {
    /// A fresh, unique id.
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().hyphenated().to_string())
    }

    /// An id from a string the caller already holds (for example one read back from a log).
    /// It must be 1 to [`MAX_NAME_LEN`] bytes long, without NUL characters.
    pub fn new(id: impl Into<String>) -> Result<Self, StoreError> {
        let id = id.into();
        check_name("record id", &id)?;
        Ok(Self(id))
    }

    /// The smallest id in sort order; never a valid id, only a range bound.
    pub(crate) fn min() -> Self {
        Self(String::new())
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({})", self.0)
    }
}

impl TryFrom<String> for RecordId {
    type Error = StoreError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<RecordId> for String {
    fn from(id: RecordId) -> Self {
        id.0
    }
}

/// Whether a record is the live head of its key or has been archived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// A live record: visible to every lookup.
    Active,
    /// A superseded record: visible only to lookups that ask for archived records.
    Archived,
}

impl RecordStatus {
    /// `"active"` or `"archived"`, as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Archived => "archived",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(Self::Active),
            "archived" => Some(Self::Archived),
            _ => None,
        }
    }
}

/// The compatibility fingerprint a record was written under, with the per-component digests
/// that explain a later mismatch. The store keeps these; it never computes or compares them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Compatibility {
    /// The root compatibility fingerprint.
    pub fingerprint: Fingerprint,
    /// The version of the fingerprint scheme that produced `fingerprint`.
    pub scheme_version: u32,
    /// One digest per named component.
    pub components: Breakdown,
}

/// A driver's opaque resume state. The store round-trips it exactly and never interprets it.
///
/// It must not hold secret values: the store writes it to disk in the clear.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionState {
    /// The provider's resume id.
    pub resume_id: String,
    /// The id shown to people, when it differs from the resume id.
    pub display_id: Option<String>,
    /// Codec parameters.
    pub data: BTreeMap<String, String>,
}

/// One durable Thread checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRecord {
    /// The record's unique id.
    pub id: RecordId,
    /// The thread key the record belongs to.
    pub key: String,
    /// Active or archived.
    pub status: RecordStatus,
    /// The driver type that wrote the checkpoint.
    pub driver_type: String,
    /// The agent identity the checkpoint belongs to.
    pub agent: String,
    /// The compatibility fingerprint and its breakdown.
    pub compatibility: Compatibility,
    /// The name of the session codec that reads `state`.
    pub session_codec: String,
    /// The opaque session state.
    pub state: SessionState,
    /// When the record was first written.
    pub created_at: Timestamp,
    /// When the record was last written.
    pub updated_at: Timestamp,
    /// Turns persisted in this conversation: 1 after its first run, one more per resumed run.
    /// A fork starts from its parent's count. Records written before schema version 3 read 0.
    pub turns: u64,
    /// The credential namespace that owns the Thread, or `None`: written before schema version
    /// 4 (which added ownership), or by a writer without a namespace. The store keeps and
    /// filters it ([`ListQuery::namespace`](crate::ListQuery::namespace)); it never decides
    /// who may use a record: that is the caller's rule (the `agent` crate's is in
    /// `docs/threads.md`, "Ownership").
    pub namespace: Option<String>,
}

impl ThreadRecord {
    /// A new active record with a fresh id, created and updated at `now`, at its first turn,
    /// owned by no namespace (see [`owned_by`](Self::owned_by)).
    pub fn new(
        key: impl Into<String>,
        driver_type: impl Into<String>,
        agent: impl Into<String>,
        compatibility: Compatibility,
        session_codec: impl Into<String>,
        state: SessionState,
        now: Timestamp,
    ) -> Self {
        Self {
            id: RecordId::generate(),
            key: key.into(),
            status: RecordStatus::Active,
            driver_type: driver_type.into(),
            agent: agent.into(),
            compatibility,
            session_codec: session_codec.into(),
            state,
            created_at: now,
            updated_at: now,
            turns: 1,
            namespace: None,
        }
    }

    /// The record, owned by the credential namespace `namespace` (1 to [`MAX_NAME_LEN`]
    /// bytes, without NUL characters, or a finalize refuses it).
    pub fn owned_by(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
}

/// Checks a caller-supplied name (key, target, owner, id): 1 to [`MAX_NAME_LEN`] bytes, no NUL.
pub(crate) fn check_name(what: &'static str, value: &str) -> Result<(), StoreError> {
    if value.is_empty() {
        return Err(StoreError::InvalidInput {
            reason: format!("{what} is empty"),
        });
    }
    check_text(what, value)?;
    if value.len() > MAX_NAME_LEN {
        return Err(StoreError::InvalidInput {
            reason: format!(
                "{what} is {} bytes long; the limit is {MAX_NAME_LEN}",
                value.len()
            ),
        });
    }
    Ok(())
}

/// Checks that a caller-supplied string can be stored by every adapter: PostgreSQL text cannot
/// hold a NUL character.
pub(crate) fn check_text(what: &'static str, value: &str) -> Result<(), StoreError> {
    if value.contains('\0') {
        return Err(StoreError::InvalidInput {
            reason: format!("{what} contains a NUL character"),
        });
    }
    Ok(())
}
