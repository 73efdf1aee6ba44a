//! Integration tests for `compat-fingerprint`: golden vectors and properties.
#![allow(clippy::unwrap_used, reason = "tests")]

mod breakdown;
mod fuzz;
mod golden;
mod properties;
