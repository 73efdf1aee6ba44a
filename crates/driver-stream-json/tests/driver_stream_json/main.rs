//! Integration tests of driver-stream-json.
#![allow(clippy::unwrap_used, reason = "tests")]

mod fuzz;
