//! The [`ThreadStore`] trait and the request and response types of its operations.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::record::{check_name, check_text};
use crate::{RecordId, RecordStatus, StoreError, ThreadRecord};

/// The longest lease TTL the stores accept.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The largest page [`ThreadStore::list`] returns.
pub const MAX_PAGE_LIMIT: u32 = 1000;

/// A held lease: proof that `owner` had exclusive use of `target` when it acquired `token`.
///
/// The token is a fencing token: every fresh acquisition of any target gets a token greater
/// than every token the store handed out before, so a write that carries an older token can be
/// recognised and refused after the lease changed hands.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// What is leased (a thread key, a record id, or any caller-chosen name).
    pub target: String,
    /// Who holds it.
    pub owner: String,
    /// The fencing token of this acquisition.
    pub token: u64,
}

/// How [`ThreadStore::resolve`] finds a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The record with this id.
    Id(RecordId),
    /// The record the key is bound to.
    Key(String),
}

/// A [`ThreadStore::resolve`] query.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Query {
    /// Which record.
    pub lookup: Lookup,
    /// Whether an archived record may be returned. When false, an archived record is reported
    /// as missing.
    pub include_archived: bool,
}

impl Query {
    /// The active record with this id.
    pub fn id(id: RecordId) -> Self {
        Self {
            lookup: Lookup::Id(id),
            include_archived: false,
        }
    }

    /// The active record bound to this key.
    pub fn key(key: impl Into<String>) -> Self {
        Self {
            lookup: Lookup::Key(key.into()),
            include_archived: false,
        }
    }

    /// Also returns the record when it is archived.
    pub fn including_archived(mut self) -> Self {
        self.include_archived = true;
        self
    }
}

/// Where a [`ThreadStore::list`] page starts: just after this (key, id) position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageCursor {
    pub(crate) key: String,
    pub(crate) id: RecordId,
}

/// A [`ThreadStore::list`] query: records whose key starts with `prefix`, sorted by key (byte
/// order) and then id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListQuery {
    /// The key prefix; empty lists every key.
    pub prefix: String,
    /// Whether archived records are listed too.
    pub include_archived: bool,
    /// At most this many records per page (1 to [`MAX_PAGE_LIMIT`]).
    pub limit: u32,
    /// The cursor from the previous page, or `None` for the first page.
    pub after: Option<PageCursor>,
    /// Only records owned by this credential namespace
    /// ([`ThreadRecord::namespace`](crate::ThreadRecord::namespace) equal to it; records
    /// without an owner are left out), or `None` for records of every owner and none.
    pub namespace: Option<String>,
}

impl ListQuery {
    /// The first page of active records under `prefix`, of every owner, 100 records per page.
    pub fn prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            include_archived: false,
            limit: 100,
            after: None,
            namespace: None,
        }
    }

    /// Lists only the records owned by the credential namespace `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Lists archived records too.
    pub fn including_archived(mut self) -> Self {
        self.include_archived = true;
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// Continues after a previous page.
    pub fn after(mut self, cursor: PageCursor) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Where the page's index scan starts: just after the cursor, or at the prefix itself
    /// when there is none (or the cursor lies before the prefix). Record ids are never empty,
    /// so `(prefix, "")` is below every record under the prefix. Stores seek to this one
    /// bound, so a page costs the same wherever it sits.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn scan_start(&self) -> (&str, &str) {
        match &self.after {
            Some(c) if (c.key.as_str(), c.id.as_str()) >= (self.prefix.as_str(), "") => {
                (c.key.as_str(), c.id.as_str())
            }
            _ => (self.prefix.as_str(), ""),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), StoreError> {
        check_text("list prefix", &self.prefix)?;
        if let Some(namespace) = &self.namespace {
            check_name("list namespace", namespace)?;
        }
        if self.limit == 0 || self.limit > MAX_PAGE_LIMIT {
            return Err(StoreError::invalid(format!(
                "list limit {} is outside 1..={MAX_PAGE_LIMIT}",
                self.limit
            )));
        }
        Ok(())
    }
}

/// One page of [`ThreadStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListPage {
    /// The records, in (key, id) order.
    pub records: Vec<ThreadRecord>,
    /// Where the next page starts, or `None` when this page is the last.
    pub next: Option<PageCursor>,
}

impl ListPage {
    /// Builds a page from up to `limit + 1` fetched records: the extra one only signals that
    /// another page exists.
    pub(crate) fn from_fetched(mut records: Vec<ThreadRecord>, limit: u32) -> Self {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let next = if records.len() > limit {
            records.truncate(limit);
            records.last().map(|r| PageCursor {
                key: r.key.clone(),
                id: r.id.clone(),
            })
        } else {
            None
        };
        Self { records, next }
    }
}

/// The one write: save a record, and optionally archive, rebind, check and release or renew the
/// held leases, all in one atomic step that first validates every held lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FinalizeRequest {
    /// The record to save (inserted, or replacing the record with the same id and key).
    pub record: ThreadRecord,
    /// Leases that must all be current (same owner and token, not expired) for the write to
    /// happen.
    pub held_leases: Vec<Lease>,
    /// A previous record to mark archived.
    pub archive_previous: Option<RecordId>,
    /// Bind `record.key` to `record.id`, so key lookups find the new record.
    pub rebind_key: bool,
    /// Refuse with [`StoreError::AlreadyExists`] if `record.key` is already bound (fork).
    ///
    /// Checked inside the write transaction. On PostgreSQL two concurrent finalizes for the same
    /// absent key are arbitrated by the binding insert, so set `rebind_key` too (forks do), and
    /// hold a lease on the key, as the fork protocol does anyway.
    pub require_key_absent: bool,
    /// Release every lease in `held_leases` in the same commit.
    pub release_leases: bool,
    /// Renew every lease in `held_leases` in the same commit: each gets a new expiry of the
    /// store's now plus this TTL and keeps its token (a sticky lease: the host keeps the
    /// Thread for its next turn, which then needs no acquire). Exclusive with
    /// [`release_leases`](Self::release_leases).
    pub renew_leases: Option<Duration>,
}

impl FinalizeRequest {
    /// Saves `record`, with no lease check and no other effect.
    pub fn new(record: ThreadRecord) -> Self {
        Self {
            record,
            held_leases: Vec::new(),
            archive_previous: None,
            rebind_key: false,
            require_key_absent: false,
            release_leases: false,
            renew_leases: None,
        }
    }

    /// Adds a lease that must still be current.
    pub fn holding(mut self, lease: Lease) -> Self {
        self.held_leases.push(lease);
        self
    }

    /// Archives `previous` in the same commit.
    pub fn archive_previous(mut self, previous: RecordId) -> Self {
        self.archive_previous = Some(previous);
        self
    }

    /// Binds the record's key to it in the same commit.
    pub fn rebind_key(mut self) -> Self {
        self.rebind_key = true;
        self
    }

    /// Requires that the record's key is not bound yet.
    pub fn require_key_absent(mut self) -> Self {
        self.require_key_absent = true;
        self
    }

    /// Releases the held leases in the same commit.
    pub fn release_leases(mut self) -> Self {
        self.release_leases = true;
        self
    }

    /// Renews the held leases to `ttl` from the store's now in the same commit, keeping their
    /// tokens: the turn's one commit both saves the checkpoint and keeps the Thread leased to
    /// its host. Each lease is checked current first, as for any finalize, so a stale holder's
    /// request writes nothing and renews nothing ([`StoreError::LeaseLost`]). Setting it
    /// together with [`release_leases`](Self::release_leases), or with a TTL outside
    /// 1 ms..=[`MAX_LEASE_TTL`], is refused with [`StoreError::InvalidInput`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use thread_store::memory::MemoryStore;
    /// use thread_store::{FinalizeRequest, Query, StoreError, ThreadStore};
    /// # let record = thread_store::ThreadRecord::new("chat/7", "codex", "agent:a",
    /// #     thread_store::Compatibility { fingerprint: compat_fingerprint::Fingerprint::from_bytes([1; 32]),
    /// #     scheme_version: 1, components: compat_fingerprint::Breakdown::new() },
    /// #     "codex-v1", thread_store::SessionState::default(), thread_store::Timestamp::now());
    /// let store = MemoryStore::new();
    /// let ttl = Duration::from_secs(30);
    /// let lease = store.acquire_lease("thread:chat/7", "host-a", ttl).await?;
    /// // The turn saves its checkpoint and keeps the lease, in one commit.
    /// let keep = FinalizeRequest::new(record).holding(lease.clone()).rebind_key().renew_leases(ttl);
    /// store.finalize(&keep).await?;
    /// // Still host-a's, same token: the next turn finalizes under it without an acquire.
    /// assert!(matches!(store.acquire_lease("thread:chat/7", "host-b", ttl).await, Err(StoreError::Busy { .. })));
    /// store.finalize(&keep).await?;
    /// // Releasing and renewing at once is refused.
    /// let both = keep.clone().release_leases();
    /// assert!(matches!(store.finalize(&both).await, Err(StoreError::InvalidInput { .. })));
    /// # Ok::<(), StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn renew_leases(mut self, ttl: Duration) -> Self {
        self.renew_leases = Some(ttl);
        self
    }

    /// Checks the request's shape; every adapter calls this before touching storage.
    pub(crate) fn validate(&self) -> Result<(), StoreError> {
        check_name("record key", &self.record.key)?;
        check_text("driver type", &self.record.driver_type)?;
        check_text("agent", &self.record.agent)?;
        check_text("session codec", &self.record.session_codec)?;
        if let Some(namespace) = &self.record.namespace {
            check_name("record namespace", namespace)?;
        }
        if self.archive_previous.as_ref() == Some(&self.record.id) {
            return Err(StoreError::invalid(
                "archive_previous names the record being saved",
            ));
        }
        if self.rebind_key && self.record.status != RecordStatus::Active {
            return Err(StoreError::invalid(
                "rebind_key requires the saved record to be active",
            ));
        }
        if let Some(ttl) = self.renew_leases {
            if self.release_leases {
                return Err(StoreError::invalid(
                    "release_leases and renew_leases are exclusive",
                ));
            }
            check_ttl(ttl)?;
        }
        let mut targets = BTreeSet::new();
        for lease in &self.held_leases {
            check_name("lease target", &lease.target)?;
            check_name("lease owner", &lease.owner)?;
            if !targets.insert(lease.target.as_str()) {
                return Err(StoreError::invalid(
                    "held_leases names the same target twice",
                ));
            }
        }
        Ok(())
    }
}

/// The time from `now` to `expires_at` (both in milliseconds), zero if past.
pub(crate) fn millis_until(expires_at: i64, now: i64) -> Duration {
    Duration::from_millis(u64::try_from(expires_at.saturating_sub(now)).unwrap_or(0))
}

/// Checks the arguments of an acquire or renew call.
pub(crate) fn check_lease_args(target: &str, owner: &str, ttl: Duration) -> Result<(), StoreError> {
    check_name("lease target", target)?;
    check_name("lease owner", owner)?;
    check_ttl(ttl)
}

/// Checks a lease TTL (of an acquire, a renewal, or a finalize's renewal).
fn check_ttl(ttl: Duration) -> Result<(), StoreError> {
    if ttl < Duration::from_millis(1) || ttl > MAX_LEASE_TTL {
        return Err(StoreError::invalid(format!(
            "lease TTL {ttl:?} is outside 1 ms..={MAX_LEASE_TTL:?}"
        )));
    }
    Ok(())
}

/// The erase fence rule shared by every adapter: a finalize of a key that [`ThreadStore::delete`]
/// erased, with the fence token that delete took, is refused with [`StoreError::LeaseLost`]
/// when it presents any lease acquired before the delete (a token below the fence). A finalize
/// without leases is not fenced.
pub(crate) fn check_erase_fence(
    held_leases: &[Lease],
    fence: Option<u64>,
) -> Result<(), StoreError> {
    if let Some(fence) = fence
        && let Some(stale) = held_leases.iter().find(|l| l.token < fence)
    {
        return Err(StoreError::lease_lost(&stale.target));
    }
    Ok(())
}

/// Whether `delete` has anything to erase or fence: a key no finalize can write (empty, too
/// long, holding a NUL) has no records and needs no fence.
pub(crate) fn is_storable_key(key: &str) -> bool {
    check_name("record key", key).is_ok()
}

/// A current lease, as [`ThreadStore::lease_holder`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseHolder {
    /// The owner that took it.
    pub owner: String,
    /// How long until it expires unless renewed.
    pub expires_in: Duration,
}

/// Where a Thread's durable state lives: records, key bindings and leases.
///
/// Object safe: hosts hold an `Arc<dyn ThreadStore>`. Every implementation must pass the
/// conformance kit (`thread_store::conformance`, feature `conformance`).
#[async_trait::async_trait]
pub trait ThreadStore: Send + Sync + std::fmt::Debug {
    /// Finds one record. A missing record (or an archived one, unless the query includes
    /// archived records) is `Ok(None)`.
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError>;

    /// Lists records by key prefix, one page at a time.
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// The only write. Validates every held lease, then in one transaction saves the record
    /// and applies the requested options. Any failed condition writes nothing.
    async fn finalize(&self, request: &FinalizeRequest) -> Result<(), StoreError>;

    /// Takes the lease on `target` for `ttl`, with a fresh, strictly greater fencing token.
    /// Succeeds when the target is free, expired, or already held by `owner`; otherwise
    /// [`StoreError::Busy`].
    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError>;

    /// Extends a held lease to `ttl` from now, keeping its token. A lease that was released,
    /// expired or taken over is [`StoreError::LeaseLost`].
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError>;

    /// Gives a lease up. Idempotent: releasing a lease that is no longer current does nothing.
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError>;

    /// Who holds the lease on `target` now, and for how long, or `None` when it is free or
    /// expired. Read-only: it takes, extends and releases nothing (for operators and tools;
    /// the answer may be stale by the time it is read).
    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError>;

    /// Erases a thread key: its binding and every record (active or archived) with that key.
    /// Returns how many records were removed. Leases are not touched.
    ///
    /// The erase is fenced, so a lease holder cannot undo it: in the same commit the delete
    /// takes a fresh fencing token (greater than every token issued before it, smaller than
    /// every token issued after) and records it as the key's erase fence. From then on a
    /// [`finalize`](Self::finalize) of a record with this key that presents **any** held lease
    /// acquired before the delete is refused with [`StoreError::LeaseLost`] and writes
    /// nothing; a lease acquired after the delete writes the key again as usual. A finalize
    /// that presents no lease is not fenced (it was never lease-checked). The delete never
    /// waits for, refuses because of, or releases a lease; the holder learns of the erase at
    /// its next finalize. A delete and a finalize of the same key are serialized: the finalize
    /// either commits first (and the delete removes its record) or is fenced.
    async fn delete(&self, key: &str) -> Result<u64, StoreError>;
}

/// The smallest string greater than every string that starts with `prefix`, or `None` when
/// there is none (an empty prefix, or one made only of `char::MAX`). UTF-8 byte order is code
/// point order, so `prefix <= key < successor` selects exactly the keys under `prefix`, and a
/// range scan on the key index stops at the prefix's end.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Whether a list of `namespace`'s records (`None`: of every owner) holds `record`. The memory
/// store applies it here; the SQL `list` queries state it as `(? IS NULL OR namespace = ?)`.
pub(crate) fn owned_by(record: &ThreadRecord, namespace: Option<&str>) -> bool {
    namespace.is_none_or(|ns| record.namespace.as_deref() == Some(ns))
}

/// Whether a lookup may return `record`: an archived record only when it asks for archived
/// records. The one visibility rule: the memory store and the SQL adapters' decoded rows apply
/// it here, and the SQL `list` queries state it as `(? OR status = 'active')`.
pub(crate) fn visible(record: &ThreadRecord, include_archived: bool) -> bool {
    include_archived || record.status == RecordStatus::Active
}
