//! The Cursor driver's one test binary: the driver against the scripted fake CLI (the Cursor
//! CLI is not installable here, so there is no real-binary test), the namespace rules for its
//! `mcp.json`, and the driver-spi conformance kit. The translator's fuzz and the argv table
//! are unit tests inside the crate.

#![allow(clippy::unwrap_used, reason = "tests")]

mod canary;
mod conformance;
mod fake_cli;
mod fixtures;
mod namespace;
mod support;
