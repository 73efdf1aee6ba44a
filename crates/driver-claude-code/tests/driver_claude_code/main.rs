//! The . test binary: one binary for the crate (see each module).
#![allow(clippy::unwrap_used, reason = "tests")]

mod canary;
mod conformance;
mod fake_cli;
mod fake_resident;
mod fake_steer;
mod fake_structured;
mod real_approvals;
mod real_binary;
mod real_binary_idle;
mod real_resident;
mod real_steer;
mod real_structured;
mod support;
