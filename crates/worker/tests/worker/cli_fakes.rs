//! The CLI drivers' scripted fakes, compiled here from their own crates' test sources, so the
//! driver kit runs through a worker on the very configuration the in-process kit runs: each
//! driver's fake CLI (`support.rs`: its `--version`, its event shapes, the credential variables
//! its host environment carries) and Codex's fake app-server. A copy would drift from the
//! in-process kit unseen; this fails to build instead.
//!
//! Only the fakes are used here: the rest of each file (its own requests and checks) is dead
//! code in this binary, and its `unwrap`s are those of a test.
#![allow(
    dead_code,
    unused_imports,
    clippy::unwrap_used,
    reason = "the driver crates' own test support, of which the kit through a worker uses the fakes only"
)]

#[path = "../../../driver-codex/tests/driver_codex/support.rs"]
pub(crate) mod codex;

#[path = "../../../driver-codex/tests/driver_codex/app_server_script.rs"]
pub(crate) mod codex_app_server;

#[path = "../../../driver-claude-code/tests/driver_claude_code/support.rs"]
pub(crate) mod claude_code;

#[path = "../../../driver-codebuddy/tests/driver_codebuddy/support.rs"]
pub(crate) mod codebuddy;

#[path = "../../../driver-gemini/tests/driver_gemini/support.rs"]
pub(crate) mod gemini;

/// Cursor's event lines, which its fake prints (`super::fixtures` from its support).
#[path = "../../../driver-cursor/tests/driver_cursor/fixtures.rs"]
pub(crate) mod fixtures;

#[path = "../../../driver-cursor/tests/driver_cursor/support.rs"]
pub(crate) mod cursor;
