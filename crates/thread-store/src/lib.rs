//! The Thread persistence contract.
//!
//! This crate will own the `ThreadStore` trait (resolve, list, the single atomic `finalize`
//! write, leases with strictly increasing fencing tokens, delete), its record type, a typed
//! error enum, and the memory, SQLite and PostgreSQL adapters with a conformance kit.
//!
//! Invariants: a store never receives a secret value; a write whose lease check fails writes
//! nothing.
//!
//! It deliberately does not decide compatibility: it stores fingerprints, it never computes them.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
