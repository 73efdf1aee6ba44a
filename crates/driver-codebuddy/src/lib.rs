//! The CodeBuddy Code CLI driver: one `codebuddy -p --output-format stream-json` process per
//! turn, or a resident one per Thread (`--input-format stream-json`,
//! [`ProcessMode::Resident`](driver_cli::ProcessMode)), resumable across host restarts.
//!
//! CodeBuddy Code mirrors Claude Code closely, so [`CodeBuddyDriver`] is the one CLI driver
//! ([`driver_cli::CliDriver`]) with the stream-json dialect it shares with Claude Code
//! ([`driver_stream_json::StreamJsonDialect`]) over [`CodeBuddyOptions`]; this crate declares
//! what differs, which is explicit here:
//!
//! | | CodeBuddy |
//! |---|---|
//! | state | `CODEBUDDY_CONFIG_DIR` and HOME from the namespace (it writes under HOME too) |
//! | model endpoint | `CODEBUDDY_BASE_URL` (OpenAI Chat Completions) and `CODEBUDDY_API_KEY`, a secret ([`CodeBuddyOptions::with_api_key`]) |
//! | privacy | `CODEBUDDY_SKIP_BUILTIN_MARKETPLACE=1`, `DISABLE_TELEMETRY=1` ([`CodeBuddyOptions::with_offline`]), and `ACC_USER_ID`/`ACC_USER_NICKNAME` so no part of the key is sent or logged as the user |
//! | MCP tools | deferred behind a search tool by default: every server is written with `"defer_loading": false` so the request's tools are directly callable |
//! | tool names | `mcp__agent-ui__ping` in `system/init`, `mcp__agent_ui__ping` in `tool_use`: both are reported as the declared `mcp__agent-ui__ping` |
//! | permissions | the request's [`PermissionPolicy`](driver_spi::PermissionPolicy) as `--permission-mode`, `--allowedTools` and `--disallowedTools` (MCP tools only: a disallowed built-in fails CodeBuddy's turn); a policy that asks runs the turn on a stream-json stdin, where CodeBuddy sends `can_use_tool` |
//! | failures | exit status 0 even for a failed turn: success is judged from the `result` event; an unknown resume id is a lone `{"type":"error"}` line |
//! | hangs | with the model endpoint refusing connections CodeBuddy never prints a result: the idle and total timeouts end the run (`Timeout`) |
//! | stateless | no flag to skip persistence: a new session whose checkpoint is not returned |
//!
//! # Invariants
//! - **The current request, every turn**: the MCP file is written per run (0600, in a
//!   directory of its own under the namespace) and removed after it; bearers are
//!   `${VAR}` references, so no secret is on disk or in argv.
//! - **Resume is guarded twice**: the session guard before spawning, and CodeBuddy's own
//!   "No conversation found" as [`ResumeRejected`](driver_spi::DriverError::ResumeRejected).
//! - **A required MCP server that did not connect stops the run** (CodeBuddy leaves a failed
//!   server out of `system/init`).
//!
//! # What it deliberately does not do
//! It uses no control request but `interrupt` (a resident process's `can_use_tool` request is
//! refused; the request's MCP servers are allowed up front with `--allowedTools`), speaks no
//! ACP, and does not log CodeBuddy in.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod dialect;
mod options;
mod runtime;
#[cfg(test)]
mod transcripts;

// What configuring this driver takes, so a host needs neither `driver-cli` nor
// `driver-process`: the common options, the process mode and its pool limits, the limits of
// each run, and the registry's one-expression builder (`RUNTIME.driver(env)…build()`).
pub use driver_cli::{BuildError, CommonOptions, DriverBuilder, ProcessMode};
pub use driver_process::command::Limits;
pub use driver_process::pool::PoolLimits;
pub use driver_process::version::Version;
pub use options::{CodeBuddyOptions, MINIMUM_VERSION};
pub use runtime::RUNTIME;

/// The CodeBuddy driver: the one CLI driver with the CodeBuddy dialect.
pub type CodeBuddyDriver =
    driver_cli::CliDriver<driver_stream_json::StreamJsonDialect<dialect::CodeBuddy>>;
