//! The in-memory store: for tests and single-process hosts. Nothing survives the process.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::record::check_name;
use crate::store::{
    check_erase_fence, check_lease_args, is_storable_key, millis_until, owned_by, visible,
};
use crate::{
    Clock, FinalizeRequest, Lease, LeaseHolder, ListPage, ListQuery, Lookup, Query, RecordId,
    RecordStatus, StoreError, SystemClock, ThreadRecord, ThreadStore, Timestamp,
};

/// A [`ThreadStore`] held in process memory behind one mutex.
///
/// Every operation runs to completion under the lock without awaiting, so a dropped future
/// never leaves a partial write.
#[derive(Debug)]
pub struct MemoryStore {
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Records by (key, id), which is also the list order.
    records: BTreeMap<(String, RecordId), ThreadRecord>,
    /// The key of each record id.
    keys_by_id: HashMap<RecordId, String>,
    /// Key bindings: key to the record key lookups find.
    bindings: HashMap<String, RecordId>,
    leases: HashMap<String, LeaseRow>,
    /// Erase fences: a deleted key to the token its last delete took.
    fences: HashMap<String, u64>,
    last_token: u64,
}

#[derive(Debug, Clone)]
struct LeaseRow {
    owner: String,
    token: u64,
    expires_at: Timestamp,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store whose lease expiry follows `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied write: every mutation
        // below is validated first and then applied without any fallible step.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Inner {
    fn record_by_id(&self, id: &RecordId) -> Option<&ThreadRecord> {
        let key = self.keys_by_id.get(id)?;
        self.records.get(&(key.clone(), id.clone()))
    }

    fn next_token(&mut self) -> Result<u64, StoreError> {
        let token = self
            .last_token
            .checked_add(1)
            .ok_or_else(|| StoreError::corrupt("the fencing token counter is exhausted"))?;
        self.last_token = token;
        Ok(token)
    }

    fn check_lease(&self, lease: &Lease, now: Timestamp) -> Result<(), StoreError> {
        match self.leases.get(&lease.target) {
            Some(row)
                if row.owner == lease.owner && row.token == lease.token && row.expires_at > now =>
            {
                Ok(())
            }
            _ => Err(StoreError::lease_lost(&lease.target)),
        }
    }
}

#[async_trait::async_trait]
impl ThreadStore for MemoryStore {
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        let inner = self.lock();
        let record = match &query.lookup {
            Lookup::Id(id) => inner.record_by_id(id),
            Lookup::Key(key) => inner
                .bindings
                .get(key)
                .and_then(|id| inner.record_by_id(id)),
        };
        Ok(record
            .filter(|r| visible(r, query.include_archived))
            .cloned())
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        query.validate()?;
        let inner = self.lock();
        let fetch = usize::try_from(query.limit)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        let from_prefix = (query.prefix.clone(), RecordId::min());
        let start = match &query.after {
            Some(c) if (&c.key, &c.id) >= (&from_prefix.0, &from_prefix.1) => {
                Bound::Excluded((c.key.clone(), c.id.clone()))
            }
            _ => Bound::Included(from_prefix),
        };
        let records = inner
            .records
            .range((start, Bound::Unbounded))
            .map(|(_, r)| r)
            .take_while(|r| r.key.starts_with(&query.prefix))
            .filter(|r| visible(r, query.include_archived))
            .filter(|r| owned_by(r, query.namespace.as_deref()))
            .take(fetch)
            .cloned()
            .collect();
        Ok(ListPage::from_fetched(records, query.limit))
    }

    async fn finalize(&self, request: &FinalizeRequest) -> Result<(), StoreError> {
        request.validate()?;
        let now = self.clock.now();
        let mut inner = self.lock();
        for lease in &request.held_leases {
            inner.check_lease(lease, now)?;
        }
        let record = &request.record;
        check_erase_fence(&request.held_leases, inner.fences.get(&record.key).copied())?;
        if request.require_key_absent && inner.bindings.contains_key(&record.key) {
            return Err(StoreError::already_exists(&record.key));
        }
        if let Some(existing_key) = inner.keys_by_id.get(&record.id)
            && *existing_key != record.key
        {
            return Err(StoreError::invalid(
                "the record id already belongs to another key",
            ));
        }
        let previous_key = match &request.archive_previous {
            Some(previous) => match inner.keys_by_id.get(previous) {
                Some(key) => Some((key.clone(), previous.clone())),
                None => return Err(StoreError::not_found(previous.as_str())),
            },
            None => None,
        };
        // Every condition holds: apply.
        if let Some(pk) = previous_key
            && let Some(prev) = inner.records.get_mut(&pk)
        {
            prev.status = RecordStatus::Archived;
        }
        inner
            .keys_by_id
            .insert(record.id.clone(), record.key.clone());
        inner
            .records
            .insert((record.key.clone(), record.id.clone()), record.clone());
        if request.rebind_key {
            inner.bindings.insert(record.key.clone(), record.id.clone());
        }
        if request.release_leases {
            for lease in &request.held_leases {
                inner.leases.remove(&lease.target);
            }
        }
        if let Some(ttl) = request.renew_leases {
            for lease in &request.held_leases {
                if let Some(row) = inner.leases.get_mut(&lease.target) {
                    row.expires_at = now.saturating_add(ttl);
                }
            }
        }
        Ok(())
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        check_lease_args(target, owner, ttl)?;
        let now = self.clock.now();
        let mut inner = self.lock();
        if let Some(row) = inner.leases.get(target)
            && row.owner != owner
            && row.expires_at > now
        {
            return Err(StoreError::busy(target));
        }
        let token = inner.next_token()?;
        inner.leases.insert(
            target.to_owned(),
            LeaseRow {
                owner: owner.to_owned(),
                token,
                expires_at: now.saturating_add(ttl),
            },
        );
        Ok(Lease {
            target: target.to_owned(),
            owner: owner.to_owned(),
            token,
        })
    }

    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError> {
        check_name("lease target", target)?;
        let now = self.clock.now();
        let inner = self.lock();
        Ok(inner
            .leases
            .get(target)
            .filter(|row| row.expires_at > now)
            .map(|row| LeaseHolder {
                owner: row.owner.clone(),
                expires_in: millis_until(row.expires_at.as_millis(), now.as_millis()),
            }))
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        check_lease_args(&lease.target, &lease.owner, ttl)?;
        let now = self.clock.now();
        let mut inner = self.lock();
        inner.check_lease(lease, now)?;
        if let Some(row) = inner.leases.get_mut(&lease.target) {
            row.expires_at = now.saturating_add(ttl);
        }
        Ok(lease.clone())
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let current = inner
            .leases
            .get(&lease.target)
            .is_some_and(|row| row.owner == lease.owner && row.token == lease.token);
        if current {
            inner.leases.remove(&lease.target);
        }
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        if !is_storable_key(key) {
            return Ok(0);
        }
        let now = self.clock.now();
        let mut inner = self.lock();
        let fence = inner.next_token()?;
        inner.fences.insert(key.to_owned(), fence);
        // A fence matters only while a live lease older than it exists: an expired lease never
        // passes a finalize's lease check again, and later leases have greater tokens.
        let oldest_live = inner
            .leases
            .values()
            .filter(|row| row.expires_at > now)
            .map(|row| row.token)
            .min();
        inner
            .fences
            .retain(|_, fence| oldest_live.is_some_and(|t| t < *fence));
        inner.bindings.remove(key);
        let ids: Vec<RecordId> = inner
            .records
            .range((key.to_owned(), RecordId::min())..)
            .take_while(|((k, _), _)| k == key)
            .map(|((_, id), _)| id.clone())
            .collect();
        for id in &ids {
            inner.records.remove(&(key.to_owned(), id.clone()));
            inner.keys_by_id.remove(id);
        }
        Ok(u64::try_from(ids.len()).unwrap_or(u64::MAX))
    }
}
