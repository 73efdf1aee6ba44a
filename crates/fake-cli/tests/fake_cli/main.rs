//! Integration tests of the fake CLI: it is the ground truth of every driver test, so each
//! scenario feature is checked against the real binary.
#![allow(clippy::unwrap_used, reason = "tests")]

mod errors;
mod record;
mod relay;
mod serve;
mod steps;
mod support;
