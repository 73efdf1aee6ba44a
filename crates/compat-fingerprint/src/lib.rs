//! Pure projection encoding and domain-separated fingerprints.
//!
//! A *fingerprint* answers one question: "is this configuration the same as that one?". This
//! crate computes fingerprints from hand-written **projections**: values encoded with a tagged,
//! length-prefixed, injective [`Encoder`], hashed with blake3 in `derive_key` mode under one
//! versioned context string per [`Kind`] of fingerprint.
//!
//! ```
//! use compat_fingerprint::{Breakdown, ComponentName, Encoder, Fingerprint, Kind};
//!
//! const SERVICE: Kind = Kind::new("example 2026-11-30 service v1");
//!
//! let a = Fingerprint::of(SERVICE, |enc: &mut Encoder| {
//!     enc.record(|r| {
//!         r.field(1, |e| e.str("agent-ui"));
//!         r.field(2, |e| e.set(["read", "write"], |e, s| e.str(s)));
//!     });
//! });
//! let same = Fingerprint::of(SERVICE, |enc: &mut Encoder| {
//!     enc.record(|r| {
//!         r.field(1, |e| e.str("agent-ui"));
//!         r.field(2, |e| e.set(["write", "read"], |e, s| e.str(s)));
//!     });
//! });
//! assert_eq!(a, same); // sets ignore order
//! assert_eq!(a.to_string().parse::<Fingerprint>().unwrap(), a);
//!
//! // A breakdown keeps one digest per named component, so a mismatch can explain itself.
//! let mut old = Breakdown::new();
//! old.insert(ComponentName::new("model").unwrap(), a).unwrap();
//! let mut new = old.clone();
//! new.insert_or_replace(ComponentName::new("model").unwrap(), Fingerprint::of(SERVICE, |e| e.str("x")));
//! let changes = old.diff(&new);
//! assert_eq!(changes.len(), 1);
//! assert_eq!(changes[0].name.as_str(), "model");
//! assert_ne!(old.root(SERVICE), new.root(SERVICE));
//! ```
//!
//! # Invariants
//! - The encoding is injective: two different projections never encode to the same bytes
//!   (`["a","bc"]` differs from `["ab","c"]`, `[]` from `[""]`, `None` from `Some("")`).
//!   The byte format is specified in [`Encoder`] and pinned by committed golden vectors.
//! - Two kinds never collide: each [`Kind`] is a distinct blake3 `derive_key` context.
//! - Digests carry no input values, and [`ComponentName`]s are fixed identifiers, so a
//!   [`Breakdown`] can be stored and displayed without leaking what was hashed.
//!
//! # What this crate deliberately does not do
//! No I/O, no async, no serde-based hashing (a field rename must never change a hash
//! silently), no floats, no Unicode normalization (strings are hashed as their UTF-8 bytes).
//! It does not decide what goes into a projection: that is the caller's contract.
//!
//! Stability: pre-1.0; a change to the byte encoding is a breaking change that needs a new
//! [`Kind`] context version and new golden vectors.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod breakdown;
mod encoder;
mod fingerprint;

pub use breakdown::{
    Breakdown, BreakdownError, Change, ComponentChange, ComponentName, ComponentNameError,
};
pub use encoder::{Encoder, RecordEncoder};
pub use fingerprint::{Fingerprint, FingerprintHasher, Kind, ParseFingerprintError, ShortDigest};
