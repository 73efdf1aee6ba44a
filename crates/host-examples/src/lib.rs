//! Hosts as a library user writes them, kept compiling and running: each test of
//! `tests/host_examples` is the program of `docs/getting-started.md` for one runtime, with
//! `agent` and that runtime's driver crate as its only SDK dependencies (this crate's
//! manifest), against the test kit's loopback mock model and the real CLI.
//!
//! The library is empty on purpose: the examples are the tests, and the manifest is the proof
//! of what a host needs.
//!
//! Stability: not a library; it changes with the guide.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
