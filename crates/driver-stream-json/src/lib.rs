//! The stream-json protocol that Claude Code and CodeBuddy Code share, written once for both
//! drivers.
//!
//! Both CLIs run headless as `<cli> -p --output-format stream-json` and print one JSON event
//! per line (`system/init`, `assistant`, `user`, `result`, and CodeBuddy's top-level
//! `error`); both take MCP servers from a `--mcp-config` file. This crate holds what is the
//! same:
//!
//! * [`StreamTranslator`]: events → [`driver_spi::DriverEvent`]s (text, tool-call start,
//!   arguments and result, one `RunStarted`), plus the session id, the `system/init` MCP
//!   statuses ([`McpStatus`]), the [`TurnResult`] and a top-level error;
//! * [`ToolNames`]: MCP tool names as each CLI rewrites them (`mcp__agent_ui__ping`), mapped
//!   back to `mcp__<declared server>__<tool>`;
//! * [`mcp_config`]: the `{"mcpServers": …}` file, with bearer tokens as `${VAR}` references
//!   so that only variable names reach the disk, and an [`McpDialect`] for what differs;
//! * [`run_turn`]: one turn on the shared CLI-process layer (`driver-cli`): spawn, translate
//!   and forward events, end the process early when a required MCP server did not connect
//!   ([`FailureKind::McpUnavailable`](driver_spi::FailureKind::McpUnavailable)), wait;
//! * [`run_request`]: one whole turn for a request (per-run MCP file, process, judgement),
//!   given the driver's [`CliDialect`];
//! * [`SessionPlan`] and [`judge`]: host-chosen session ids, `--resume` and `--fork-session`,
//!   the guard checked before spawning, and the judgement of a finished turn, given the
//!   driver's own reading of "unknown session" and of failures ([`Judgement`]).
//!
//! # Invariants
//! - No secret value is ever written: bearer tokens and stdio secrets are `${NAME}`
//!   references, and a request value containing `${` is refused rather than handed to the
//!   CLI's expansion (it could pull another variable, such as an API key, into a URL or
//!   header).
//! - Provider text kept for errors (`result` text, `error` messages) passes through the
//!   request's redactor.
//! - Unknown event types and content blocks are ignored; a known event with a broken shape
//!   is a typed [`MalformedEvent`].
//!
//! # What it deliberately does not do
//! It writes no file and builds no full command line. Argv, environment, permission flags,
//! how an unknown session is reported and how failures are classified differ between the
//! CLIs and stay explicit in each driver crate.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod drive;
mod events;
mod mcp_config;
mod names;
mod session;
mod turn;

pub use drive::{CliDialect, check_shared_options, run_driver_turn, run_request};
pub use events::{MalformedEvent, McpStatus, StreamTranslator, TurnResult};
pub use mcp_config::{McpConfigError, McpDialect, mcp_config};
pub use names::{ToolNames, sanitize};
pub use session::{Judgement, SessionPlan, classify_text, judge};
pub use turn::{TurnOutput, run_turn};
