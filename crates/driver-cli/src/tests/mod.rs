//! Tests of the crate's process layer (spawn, streaming, timeouts, cancellation, per-run
//! files, the version probe), with the scripted fake CLI as the child process. They are unit
//! tests because that layer is private to the crate; `support` is their shared fixture.
#![allow(clippy::unwrap_used, reason = "tests")]

mod cancel;
mod env;
mod exit;
mod files;
mod fuzz;
mod jsonrpc;
mod pool;
mod side;
mod spawn_errors;
mod stream;
mod support;
mod timeouts;
mod traits;
mod version;
