//! Runtime environments for agent CLIs.
//!
//! This crate will own credential namespaces, isolation levels and modes, HOME/XDG layout,
//! safe directory creation, the allow-listed child environment, auth status, config snapshots
//! and the secret redactor.
//!
//! Invariants: a child environment starts empty; credentials never pass from the host unless
//! injected.
//!
//! It deliberately does not spawn agent runtimes.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
