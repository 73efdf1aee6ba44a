//! The one test binary of driver-codex: the driver against the scripted fake CLI
//! (`fake_cli`), the driver-spi conformance kit over it (`conformance`, which
//! `cargo xtask conformance` runs by exact name), and the real `codex` end to end
//! (`real_binary`, skipped with a visible line when `CODEX_BIN` is unset).
//!
//! The translator and the argv are tested (and fuzzed) inside the crate.

#![allow(clippy::unwrap_used, reason = "tests")]

mod app_server_fake;
mod app_server_prewarm;
mod app_server_script;
mod app_server_steer;
mod canary;
mod conformance;
mod errors;
mod fake_cli;
mod fake_structured;
mod real_app_server;
mod real_approvals;
mod real_binary;
mod real_policy;
mod real_steer;
mod real_structured;
mod support;
