//! The Thread persistence contract: records, leases with fencing tokens, and three adapters.
//!
//! A Thread's durable state lives in a [`ThreadStore`]: the provider resume checkpoint, the
//! compatibility fingerprint with its per-component [`Breakdown`](compat_fingerprint::Breakdown),
//! and the leases that keep two hosts from running the same Thread at once.
//!
//! | adapter | module | feature | for |
//! |---|---|---|---|
//! | [`MemoryStore`](memory::MemoryStore) | [`memory`] | always built | tests, single-process hosts |
//! | `SqliteStore` | `sqlite` | `sqlite` (default) | the embedded default: one host, many processes |
//! | `PostgresStore` | `postgres` | `postgres` (default) | a fleet of hosts sharing one database |
//!
//! The `conformance` feature adds `thread_store::conformance`, the kit of named contracts
//! (TS-01 …) that every adapter passes.
//!
//! The PostgreSQL adapter speaks TLS through rustls (ring provider, no OpenSSL) and honours
//! libpq's `sslmode` in the connection string: `disable`, `prefer` (the default: TLS when
//! the server offers it), `require` (TLS, certificate not verified, as in libpq), `verify-ca`
//! and `verify-full`. The verifying modes trust the platform's roots plus any root
//! certificate added to the `PostgresConfig`; see `thread_store::postgres::SslMode`.
//!
//! # Leases and fencing
//!
//! A lease gives one `owner` exclusive use of a `target` string (a thread key, a record id)
//! until its TTL runs out. [`acquire_lease`](ThreadStore::acquire_lease) succeeds when the
//! target is free, expired, or already held by the same owner, and fails with
//! [`StoreError::Busy`] while another owner's lease is live. Every successful acquisition
//! returns a **fencing token** strictly greater than every token the store issued before, even
//! for the same owner re-acquiring its own target.
//!
//! A lease alone cannot stop a host that was paused past its TTL (a long GC pause, a
//! suspended VM) from writing after another host took over. Tokens can: the single write,
//! [`finalize`](ThreadStore::finalize), carries the leases its caller believes it holds and
//! checks, inside the same transaction as the write, that each is still current: same owner,
//! same token, not expired. If any check fails the whole write is refused with
//! [`StoreError::LeaseLost`] and nothing changes. With
//! [`release_leases`](FinalizeRequest::release_leases) the same commit also frees exactly the
//! leases it validated, so a whole Thread turn costs two commits: acquire, then
//! finalize-and-release. With [`renew_leases`](FinalizeRequest::renew_leases) instead, the
//! same commit keeps the validated leases for another TTL (same tokens), so a host that
//! keeps a Thread between turns (a sticky lease) runs its next turn in one commit: resolve,
//! then finalize-and-renew. The SQLite store syncs only the second (a lease write is made durable
//! by the next finalize) and commits concurrent finalizes together; see `docs/threads.md`. [`renew_lease`](ThreadStore::renew_lease) extends a current lease
//! and keeps its token; a stale one gets [`StoreError::LeaseLost`].
//! [`release_lease`](ThreadStore::release_lease) is idempotent and ignores stale leases.
//!
//! [`delete`](ThreadStore::delete) fences the key it erases: it takes a fencing token of its
//! own, and a later finalize of that key that presents any lease acquired before the delete is
//! refused with [`StoreError::LeaseLost`], so a lease holder cannot write an erased Thread back.
//! Leases acquired after the delete work as usual.
//!
//! Expiry is measured by one clock per store: the host clock (a [`Clock`]) for the memory and
//! SQLite stores, which serve one host, and the server's `now()` for PostgreSQL, so hosts with
//! skewed clocks still agree.
//!
//! ```
//! use std::time::Duration;
//! use compat_fingerprint::{Breakdown, Fingerprint};
//! use thread_store::memory::MemoryStore;
//! use thread_store::{
//!     Compatibility, FinalizeRequest, Query, SessionState, StoreError, ThreadRecord,
//!     ThreadStore, Timestamp,
//! };
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store: std::sync::Arc<dyn ThreadStore> = std::sync::Arc::new(MemoryStore::new());
//! let ttl = Duration::from_secs(300);
//!
//! // Host A takes the Thread; host B is refused while A's lease is live.
//! let lease = store.acquire_lease("thread:support/42", "host-a", ttl).await?;
//! let busy = store.acquire_lease("thread:support/42", "host-b", ttl).await;
//! assert!(matches!(busy, Err(StoreError::Busy { .. })));
//!
//! // A runs its turn, then saves the checkpoint and releases the lease in one commit.
//! let compatibility = Compatibility {
//!     fingerprint: Fingerprint::from_bytes([7; 32]),
//!     scheme_version: 1,
//!     components: Breakdown::new(),
//! };
//! let state = SessionState { resume_id: "r-1".into(), ..SessionState::default() };
//! let record = ThreadRecord::new(
//!     "support/42", "codex", "agent:triage", compatibility, "codex-v1", state, Timestamp::now(),
//! );
//! store
//!     .finalize(&FinalizeRequest::new(record.clone()).holding(lease.clone()).rebind_key().release_leases())
//!     .await?;
//! assert_eq!(store.resolve(&Query::key("support/42")).await?, Some(record));
//!
//! // B now gets the Thread with a greater token; A's old token can no longer write.
//! let b = store.acquire_lease("thread:support/42", "host-b", ttl).await?;
//! assert!(b.token > lease.token);
//! assert!(matches!(store.renew_lease(&lease, ttl).await, Err(StoreError::LeaseLost { .. })));
//! # Ok::<(), StoreError>(())
//! # }).unwrap();
//! ```
//!
//! # Invariants
//! - A store never receives a secret value: no field of [`ThreadRecord`] is secret-typed, and
//!   callers keep secrets in their own secret types. What a caller stores is stored verbatim
//!   and in the clear, so a session [`data`](SessionState::data) map must hold no secrets.
//! - A write whose condition fails (a lease check, `require_key_absent`, a missing previous
//!   record) writes nothing; a write whose future is dropped is either wholly committed or not
//!   at all.
//! - Missing is `Ok(None)`, never an error. Unreadable data is [`StoreError::Corrupt`] with a
//!   message saying what was found, never a panic and never a guess.
//! - Error messages name keys, targets and ids only by a short digest.
//!
//! # What it deliberately does not do
//! It does not decide compatibility: it stores fingerprints, it never computes or compares
//! them. It does not decide ownership either: it stores each record's owning credential
//! namespace ([`ThreadRecord::namespace`]) and lists one namespace's records on request
//! ([`ListQuery::namespace`]); who may use a record is the caller's rule. It does not renew leases on a timer or retry `Busy`: that is the caller's policy. It
//! does not encrypt: it must never be handed anything that needs encrypting.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
#[cfg(feature = "postgres")]
mod pg_tls;
mod record;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod row;
mod store;

pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StoreError, StoreFile, UnsafeFileReason};
pub use record::{
    Compatibility, MAX_NAME_LEN, RECORD_FORMAT_VERSION, RecordId, RecordStatus, SessionState,
    ThreadRecord, Timestamp,
};
pub use store::{
    FinalizeRequest, Lease, LeaseHolder, ListPage, ListQuery, Lookup, MAX_LEASE_TTL,
    MAX_PAGE_LIMIT, PageCursor, Query, ThreadStore,
};
