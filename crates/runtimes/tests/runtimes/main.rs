//! The registry's tests: every driver crate of the workspace is registered, and the entries
//! fit together in one environment.
#![allow(clippy::unwrap_used, reason = "tests")]

mod registry;
mod workspace;
