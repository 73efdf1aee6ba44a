//! Agents and durable Threads.
//!
//! This crate will own `Agent`, `Thread` and the single run pipeline: attach run services,
//! build the concrete and session views, take leases, decide resume or refuse, run the driver
//! and persist the checkpoint.
//!
//! Invariants: a resume-only Thread never starts over; no secret value reaches a durable or
//! public surface.
//!
//! It deliberately does not implement drivers or stores: it takes them as trait objects.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
