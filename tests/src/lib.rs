//! Shared helpers for the workspace-level tests in `tests/tests/`.
//!
//! The cross-crate tests themselves live in `tests/tests/*.rs`; this library holds logic that
//! they share, such as the repository hygiene ("tidy") checker and the check that the docs'
//! runtime lists name every registered runtime.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod runtime_docs;
pub mod tidy;
