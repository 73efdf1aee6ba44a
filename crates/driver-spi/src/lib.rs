//! The driver service-provider interface.
//!
//! This crate will own the `Driver` trait, its optional capabilities (session codec, config
//! fingerprinter, process lifecycle), the concrete `Request` and `Response`, the typed event
//! stream, private process signatures, a reference driver and a driver conformance kit.
//!
//! Invariants: a driver always receives the concrete, current invocation; secrets reach it only
//! as secret values.
//!
//! It deliberately does not spawn processes or store anything.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
