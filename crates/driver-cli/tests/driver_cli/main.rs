//! Integration tests of driver-cli, with the scripted fake CLI as the child process.
#![allow(clippy::unwrap_used, reason = "tests")]

mod cancel;
mod env;
mod exit;
mod files;
mod fuzz;
mod spawn_errors;
mod stream;
mod support;
mod timeouts;
mod traits;
mod version;
