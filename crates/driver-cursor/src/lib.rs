//! The Cursor CLI driver: one `cursor-agent -p --output-format stream-json` process per turn,
//! resumable across host restarts.
//!
//! [`CursorDriver`] is the one CLI driver of the shared layer,
//! [`driver_cli::CliDriver`], over the Cursor dialect, which is [`CursorOptions`]: this crate
//! supplies only what Cursor does differently (its argv, its `mcp.json`, its event
//! translator, its unknown-chat signal and its failure classes). Every turn spawns the Cursor
//! CLI (option `binary`: `cursor-agent` by default, `agent` in newer builds; see
//! [`CommonOptions::with_binary`]) through a [`runtime_env::RuntimeEnv`]: the environment
//! starts empty, HOME and `CURSOR_CONFIG_DIR` belong to the credential namespace (Cursor keeps
//! its chats and `cli-config.json` there, so a restarted host can resume them), secrets reach
//! the child only as environment variables, and the prompt goes on stdin (or, for builds that
//! ignore stdin, as the last argument: [`PromptTransport`]).
//!
//! | turn | argv (after `-p --output-format stream-json --workspace <dir>`) |
//! |---|---|
//! | new chat | `[--model M] --approve-mcps --trust` |
//! | resume | `--resume <chat id> [--model M] --approve-mcps --trust` |
//! | stateless | as a new chat; no checkpoint is returned |
//!
//! `<dir>` is the request's workspace, else the namespace's cwd. `--trust` can be turned off
//! ([`CursorOptions::with_trust_workspace`]). The request's
//! [`PermissionPolicy`](driver_spi::PermissionPolicy) is enforced as Cursor can: the default
//! policy as is, everything allowed as `--force`; any other policy, and any that asks (Cursor
//! cannot ask the host headless), is refused as
//! [`Unsupported`](driver_spi::Unsupported).
//! Instructions are put before the prompt (Cursor has no system-prompt flag); with
//! [`PromptTransport::Argument`] the prompt is the last argument instead of stdin.
//!
//! # Chat ids
//! A new session's id is the `session_id` of the turn's own `system/init` event, so a turn
//! is one process and a turn that never starts leaves no chat behind. A host that wants an
//! id before the first turn calls [`create_chat`] (`cursor-agent create-chat`) and stores
//! it, with the request's guard, as a state to resume. The stored state is the
//! chat id plus the [`SessionGuard`](driver_spi::SessionGuard) values (codec `cursor/v1`).
//!
//! # Invariants
//! - **The current request, every turn.** Cursor has no per-run MCP flag, so the request's
//!   MCP servers are written to the namespace's `<CURSOR_CONFIG_DIR>/mcp.json` (0600, through
//!   runtime-env) for each turn, with `--approve-mcps`; afterwards the file is put back as it
//!   was (or removed). A resumed chat therefore reaches the *new* port with the *new* token.
//! - **One Cursor turn per namespace at a time.** That file is shared by every run of the
//!   namespace, so each turn holds the namespace's turn lock (an advisory lock on
//!   `<CURSOR_CONFIG_DIR>/sdk-turn.lock`, [`driver_cli::TURN_LOCK_FILE`], effective across
//!   processes) from writing the file until its process has ended: the shared driver does
//!   both for a dialect's namespace files. Concurrent turns wait (at most the total timeout)
//!   and each CLI sees its own servers. A per-run config directory would allow parallel turns, but it
//!   would hide the namespace's `cli-config.json` (permissions, account state) from the run,
//!   and where Cursor keeps chats and login differs between builds (under the config
//!   directory or HOME), so a later turn could fail to find the chat it resumes.
//!   runtime-env's config lock is held only for the brief file writes, so the namespace's
//!   other runtimes are never blocked for a whole Cursor turn.
//! - **No secret on disk or in argv.** The bearer travels as `"Authorization": "Bearer
//!   ${env:VAR}"` and stdio secrets as `"VAR": "${env:VAR}"`: only names are in the file, and a
//!   request value containing `${` is refused (Cursor would expand it).
//! - **Resume is guarded twice.** The session guard is checked before spawning. A chat id
//!   Cursor does not know becomes [`ResumeRejected`](driver_spi::DriverError::ResumeRejected)
//!   when Cursor fails before `system/init` with a "chat not found"-like message on stderr,
//!   or when its `system/init` names another chat than the one resumed. Both signals are
//!   assumptions (Cursor documents neither); see `dialect.rs`.
//! - **Nothing outlives a run.** Dropping the run future ends the CLI's whole process group,
//!   restores `mcp.json` and releases the turn lock.
//!
//! # What it deliberately does not do
//! - **It is tested against a fake CLI only.** No package registry this project can reach
//!   ships the Cursor CLI (only Cursor's own installer does), so the driver has never run a
//!   real `cursor-agent`. The fake replays Cursor's documented stream-json shapes, kept in one
//!   place (`tests/driver_cursor/fixtures.rs`, each with its source) so that a real
//!   transcript can replace them.
//! - It does not fork chats (Cursor has no fork), keep processes across turns, or stream
//!   partial text (`--stream-partial-output` repeats text in several forms).
//! - It cannot check that a required MCP server connected: Cursor's `system/init` lists no
//!   MCP servers. Servers from the workspace's own `.cursor/mcp.json` are loaded and, with
//!   `--approve-mcps`, approved too: run it on trusted workspaces only.
//! - Cursor has no system-prompt flag; request instructions are put before the prompt.
//! - It does not log Cursor in: credentials come from the namespace or from secrets injected
//!   into the [`RuntimeEnv`](runtime_env::RuntimeEnv) (`CURSOR_API_KEY`).
//!
//! # Example
//! The setup runs as a doc test; the turn itself is only compiled: no Cursor CLI is
//! available to the tests, and the scripted fake cannot be found from a doc test.
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! use std::sync::Arc;
//! use agent::store::sqlite::{SqliteConfig, SqliteStore};
//! use agent::{Agent, HostEnv, RuntimeEnv, SecretString, Verdict};
//! use driver_cursor::{CommonOptions, CursorDriver, CursorOptions};
//!
//! # let dir = tempfile::tempdir()?;
//! let root = dir.path(); // the host's data directory, `/var/lib/myhost` say
//! let env = RuntimeEnv::builder(root.join("runtime-env"), "user:alice".parse()?, root)
//!     .host_env(HostEnv::capture())
//!     .secret("CURSOR_API_KEY", SecretString::from("…"))
//!     .runtimes([&driver_cursor::RUNTIME.descriptor])
//!     .build()?;
//! let driver = Arc::new(CursorDriver::new(Arc::new(env), CursorOptions::new().with_binary("agent")));
//! // Threads live in a store, so they outlive the host (an agent without one refuses every
//! // Thread with `StoreRequired`).
//! let store = SqliteStore::open(SqliteConfig::new(root.join("threads.sqlite3"))).await?;
//! let agent = Agent::builder(driver.clone()).store(Arc::new(store)).build()?;
//! // Nothing is stored under the key yet, so a run would start a conversation.
//! let explained = agent.thread("ticket-4711").explain().await?;
//! assert!(matches!(explained.verdict, Verdict::Start { replaces: None, .. }));
//! # if false { // no Cursor CLI here (see above)
//! driver.check_version().await?; // `agent --version` against the minimum
//! let result = agent.thread("ticket-4711").run("Summarise the failing test").await?;
//! println!("{}", result.output);
//! # }
//! agent.close().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod chat;
mod config;
mod dialect;
mod events;
#[cfg(test)]
mod fuzz_tests;
mod options;
mod runtime;

pub use chat::{CreateChatError, create_chat};
// What configuring this driver takes, so a host needs neither `driver-cli` nor
// `driver-process`: the common options, the process mode and its pool limits, the limits of
// each run, and the registry's one-expression builder (`RUNTIME.driver(env)…build()`).
pub use driver_cli::{BuildError, CommonOptions, DriverBuilder, ProcessMode};
pub use driver_process::command::Limits;
pub use driver_process::pool::PoolLimits;
pub use driver_process::version::Version;
pub use options::{CursorOptions, DEFAULT_BINARY, MINIMUM_VERSION, PromptTransport};
pub use runtime::RUNTIME;

/// Drives the Cursor CLI: one `cursor-agent -p --output-format stream-json` process per turn,
/// in a [`RuntimeEnv`](runtime_env::RuntimeEnv) namespace whose `CURSOR_CONFIG_DIR` (and
/// HOME) keep the chats across host restarts. See the [crate docs](crate).
pub type CursorDriver = driver_cli::CliDriver<dialect::Cursor>;
