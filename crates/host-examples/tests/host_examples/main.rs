//! The guide's host, once per runtime, against the test kit's mock model and the real CLI
//! (skipped with a visible line without its binary variable; never under CI), and the rules
//! that keep the examples honest: they name only `agent`, their runtime's crate, tokio,
//! serde and serde_json (plus the test kit and the temporary directory that stand in for the model and the
//! host's disk), and the guide quotes them.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod checks;
mod claude_code;
mod codebuddy;
mod codex;
mod derives;
mod gemini;
mod honest;
