//! The test kit's tests, one binary: the mock servers on raw HTTP (`anthropic`, `chat`,
//! `responses`, `gemini`) and against the real CLIs when their binaries are set (`codex`,
//! `claude`, `codebuddy`, `gemini`; else a visible `SKIPPED`).
#![allow(clippy::unwrap_used, reason = "tests")]

mod cli;
mod http;

mod anthropic;
mod chat;
mod claude;
mod codebuddy;
mod codex;
mod gemini;
mod responses;
