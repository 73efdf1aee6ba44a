//! Integration tests of runtime-env: one binary, one module per concern.
#![allow(clippy::unwrap_used, reason = "tests")]

mod auth;
mod child_env_host;
mod ephemeral;
mod fake_cli;
mod fuzz;
mod layout;
mod locking;
mod namespace_props;
mod safety;
mod secrets;
mod served;
mod snapshot;
mod support;
mod umask;
