//! The Claude Code CLI driver: one `claude -p --output-format stream-json` process per turn,
//! or a resident one per Thread (`--input-format stream-json`,
//! [`ProcessMode::Resident`](driver_cli::ProcessMode)), resumable across host restarts.
//!
//! [`ClaudeCodeDriver`] is the one CLI driver ([`driver_cli::CliDriver`]) with the stream-json
//! dialect it shares with CodeBuddy ([`driver_stream_json::StreamJsonDialect`]) over
//! [`ClaudeCodeOptions`]; this crate declares what Claude Code does differently (its argv head,
//! variables, identity, stateless flag and failure classes). Every turn spawns `claude`
//! through a
//! [`runtime_env::RuntimeEnv`]: the environment starts empty, HOME and `CLAUDE_CONFIG_DIR`
//! belong to the credential namespace (Claude Code keeps its transcripts there, so a restarted
//! host can resume them), and the prompt goes on stdin.
//!
//! | turn | session flags |
//! |---|---|
//! | new session | `--session-id <uuid>` (chosen by the driver) |
//! | resume | `--resume <session_id>` |
//! | fork | `--resume <session_id> --fork-session` |
//! | stateless | `--no-session-persistence` |
//!
//! # Invariants
//! - **The current request, every turn.** The request's MCP servers are written to a fresh
//!   0600 file for each run (`--mcp-config <file> --strict-mcp-config`, so nothing else
//!   configures MCP) and the file is removed when the run ends. Concurrent runs never share
//!   one. A resumed session therefore reaches the *new* port with the *new* token.
//! - **No secret on disk or in argv.** The bearer travels as `"Authorization": "Bearer
//!   ${VAR}"`: only the variable's name is in the file; Claude Code expands it from its own
//!   environment, which alone holds the value.
//! - **The request's permission policy, enforced by Claude Code**
//!   ([`PermissionPolicy`](driver_spi::PermissionPolicy)): `--permission-mode`
//!   (`dontAsk`, `default` when the policy asks, `acceptEdits` when writes are allowed),
//!   `--allowedTools` and `--disallowedTools`; a policy Claude Code cannot hold (commands
//!   allowed while writes or network are not: it has no sandbox) is refused as
//!   [`Unsupported::Permission`](driver_spi::Unsupported::Permission). A policy that asks
//!   runs the turn on a stream-json stdin with `--permission-prompt-tool stdio`, in either
//!   process mode, and each `can_use_tool` request is decided by the policy or the host.
//! - **A required MCP server that does not connect stops the run** at `system/init`
//!   ([`FailureKind::McpUnavailable`](driver_spi::FailureKind::McpUnavailable)), rather than
//!   letting the model work without its tools.
//! - **Resume is guarded twice**: the session guard is checked before spawning, and a session
//!   id Claude Code does not know ("No conversation found with session ID") becomes
//!   [`ResumeRejected`](driver_spi::DriverError::ResumeRejected).
//!
//! # What it deliberately does not do
//! It cannot ask the host from a plain `-p` turn (only a stream-json stdin carries
//! `can_use_tool`), uses no other control request than `interrupt` and `can_use_tool`'s
//! answer, and does not log
//! Claude Code in: credentials come from the namespace or from secrets injected into the
//! [`RuntimeEnv`](runtime_env::RuntimeEnv) (`ANTHROPIC_API_KEY`).
//!
//! # Example
//! Offline, the test kit's mock Anthropic API stands in for the model (the hidden lines), and
//! `CLAUDE_BIN` names the CLI: without it the example returns early, and under CI it fails
//! instead, as every real-binary test does. (Its `SKIPPED` line goes to stderr, which rustdoc
//! shows only for a failing doc test, so locally a skip shows as a doc test that took no time.)
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let Some(claude) = test_kit::real_cli::binary("CLAUDE_BIN", "driver-claude-code's crate example") else { return Ok(()) };
//! # let model = test_kit::anthropic::MockAnthropic::start(test_kit::Script::new().then(test_kit::Reply::text("The test expects 3.")))?;
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async {
//! use std::sync::Arc;
//! use agent::store::sqlite::{SqliteConfig, SqliteStore};
//! use agent::{Agent, HostEnv, RuntimeEnv, SecretString};
//! use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
//!
//! # let dir = tempfile::tempdir()?;
//! let root = dir.path(); // the host's data directory, `/var/lib/myhost` say
//! let env = RuntimeEnv::builder(root.join("runtime-env"), "user:alice".parse()?, root)
//!     .host_env(HostEnv::capture())
//!     .secret("ANTHROPIC_API_KEY", SecretString::from("sk-ant-example")) // your key
//!     .runtimes([&driver_claude_code::RUNTIME.descriptor])
//!     .build()?;
//! let options = ClaudeCodeOptions::new().with_model("claude-sonnet-4-5");
//! # let options = options.with_binary(&claude).with_base_url(model.base_url());
//! let driver = ClaudeCodeDriver::new(Arc::new(env), options);
//! driver.check_version().await?; // `claude --version` against the minimum
//! // Threads live in a store, so they outlive the host (an agent without one refuses every
//! // Thread with `StoreRequired`).
//! let store = SqliteStore::open(SqliteConfig::new(root.join("threads.sqlite3"))).await?;
//! let agent = Agent::builder(Arc::new(driver)).store(Arc::new(store)).build()?;
//! let result = agent.thread("ticket-4711").run("Summarise the failing test").await?;
//! println!("{}", result.output);
//! # assert_eq!(result.output, "The test expects 3.");
//! agent.close().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
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
pub use options::{ClaudeCodeOptions, MINIMUM_VERSION};
pub use runtime::RUNTIME;

/// The Claude Code driver: the one CLI driver with the Claude Code dialect.
pub type ClaudeCodeDriver =
    driver_cli::CliDriver<driver_stream_json::StreamJsonDialect<dialect::ClaudeCode>>;
