//! Tests of the process layer (spawn, streaming, timeouts, cancellation, per-run files, the
//! version probe, the peer and the pool), with the scripted fake CLI as the child process.
//! `support` is their shared fixture.
#![allow(clippy::unwrap_used, reason = "tests")]

mod cancel;
mod env;
mod exit;
mod files;
mod fuzz;
mod peer;
mod pool;
mod serve;
mod side;
mod spawn_errors;
mod stream;
mod support;
mod timeouts;
mod traits;
mod version;
