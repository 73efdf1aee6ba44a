//! The tests of the Gemini driver, one binary: the scripted fake CLI (`fake_cli`, and the
//! namespace's own files and concurrent turns in `namespace`), the driver-spi conformance kit
//! (`conformance`, run by `cargo xtask conformance`), and the real `gemini` binary
//! (`real_binary`, skipped without `GEMINI_BIN`).

#![allow(clippy::unwrap_used, reason = "tests")]

mod canary;
mod conformance;
mod fake_cli;
mod namespace;
mod real_binary;
mod real_permissions;
mod support;
