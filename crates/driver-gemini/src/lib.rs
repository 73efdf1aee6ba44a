//! The Gemini CLI driver: one `gemini -p --output-format stream-json` process per turn,
//! resumable across host restarts.
//!
//! [`GeminiDriver`] is [`driver_cli::CliDriver`] over the Gemini dialect, [`GeminiOptions`]:
//! the shared driver does the checks, the version probe, the turn lock, the process, the
//! event loop and the judgement; this crate says only what Gemini does differently (argv,
//! `settings.json`, its events, its exit codes). Every turn spawns `gemini` through a
//! [`runtime_env::RuntimeEnv`]: the environment starts empty, HOME, `TMPDIR` and
//! `GEMINI_CLI_HOME` belong to the credential namespace (Gemini keeps its sessions in
//! `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats`, so a restarted host can resume them, and
//! writes its error reports to `$TMPDIR`), and the prompt goes on stdin (at most 8 MiB, the
//! most Gemini reads).
//!
//! | turn | argv (after `-p "" --output-format stream-json --skip-trust [-m <model>]`) |
//! |---|---|
//! | new session | `--session-id <uuid>` (a UUIDv7 the driver chose) |
//! | resume | `--resume <uuid>` |
//! | fork | `--session-file <the parent's recording>`: Gemini imports it under a new id |
//! | stateless | nothing: a session under Gemini's own id, never resumed |
//!
//! Each of the request's MCP servers adds `--allowed-mcp-server-names=<name>` (a request
//! without servers passes one name no server can have), so servers declared anywhere else,
//! such as a workspace's `.gemini/settings.json`, do not connect.
//!
//! # Invariants
//! - **The current request, every turn.** Gemini has no MCP flag: it reads servers, the auth
//!   type and the privacy switch from `settings.json`. For every turn the driver installs
//!   `$GEMINI_CLI_HOME/.gemini/settings.json` (0600, through runtime-env): its settings laid
//!   over the namespace's own (which it keeps), with the request's servers replacing
//!   `mcpServers` (`httpUrl` for streamable HTTP, `url` for SSE, `command`/`args`/`env` for
//!   stdio, `"trust": true` unless switched off), `security.auth.selectedType`,
//!   `privacy.usageStatisticsEnabled: false`, `general.sessionRetention.enabled: false`
//!   (Gemini would otherwise delete sessions older than 30 days) and the request's
//!   instructions as a context file (`.gemini/sdk-instructions.md`, listed in
//!   `context.fileName`). A resumed session therefore reaches the *new* port with the *new*
//!   token. When the turn ends, also when it fails or its future is dropped, both files are
//!   put back as they were (or removed).
//! - **One turn per namespace at a time.** Because the file is shared, each turn holds the
//!   namespace's Gemini turn lock (`$GEMINI_CLI_HOME/sdk-turn.lock`,
//!   [`driver_cli::TURN_LOCK_FILE`], an advisory `flock` waited for by polling, at most the
//!   total timeout) from before the files are installed until its process has ended and they
//!   are put back. A per-run file is not possible: Gemini honours
//!   `GEMINI_CLI_SYSTEM_SETTINGS_PATH` only for a root-owned file in root-owned directories.
//!   runtime-env's config lock is held only for the moment of each write, so the other
//!   runtimes of the namespace never wait for a Gemini turn. The driver refuses the shared
//!   isolation level, where the file would be the host user's own.
//! - **No secret in argv or on disk.** The bearer travels as `"Authorization": "Bearer
//!   ${VAR}"` and stdio secrets as `"NAME": "${NAME}"`: only names are written, and Gemini
//!   expands them from its own environment. The API key ([`GeminiOptions::with_api_key`], a
//!   [`SecretString`](secrecy::SecretString)) reaches Gemini only as `GEMINI_API_KEY` in its
//!   environment. Gemini expands `$VAR` as well as `${VAR}` in every settings value, so a
//!   request value holding `$` is refused.
//! - **Resume is guarded twice.** The session guard is checked before anything is spawned or
//!   written, and only UUIDs are resumed (Gemini takes `latest` and numbers for other
//!   sessions); a session Gemini does not know (exit 42, "Error resuming session"), a resume
//!   that reports another session, and a fork whose parent has no recording become
//!   [`ResumeRejected`](driver_spi::DriverError::ResumeRejected).
//! - **Events**: `init` → `RunStarted`; assistant `message` deltas → `TextDelta`; `tool_use`
//!   and `tool_result` → one tool-call lifecycle each, MCP tools named
//!   `mcp__<server>__<tool>` (Gemini's own `mcp_<server>_<tool>`, mapped back to the declared
//!   server); `result` decides the outcome (classified by its error type and text, refined
//!   by the exit code: 41 authentication, 53 the turn limit), and exactly one terminal event
//!   ends the run.
//! - **Nothing outlives a run.** Dropping the run future ends Gemini's whole process group
//!   (SIGTERM, then SIGKILL), puts the files back and releases the turn lock.
//!
//! # What it deliberately does not do
//! - It keeps no Gemini process across turns (no ACP mode). It forks by importing the parent
//!   session's recording (`--session-file`), found under `.gemini/tmp/*/chats/`, since Gemini
//!   has no fork flag.
//! - It cannot enforce [`McpServer::required`](run_service::McpServer::required): Gemini
//!   0.61.0 says nothing, in its events or on stderr, when an MCP server fails to connect, so
//!   the turn runs without that server's tools.
//! - A stateless turn is not unrecorded: Gemini has no switch to stop writing its transcript;
//!   the driver just never resumes it.
//! - It does not log Gemini in: credentials come from the key option, the namespace
//!   (`.gemini/oauth_creds.json`) or secrets injected into the
//!   [`RuntimeEnv`](runtime_env::RuntimeEnv), selected by [`AuthType`].
//! - It keeps no Gemini setting the turn needs changed: the namespace's `mcpServers` are
//!   hidden for the turn, and a `settings.json` that is not plain JSON (Gemini also accepts
//!   comments) is hidden whole.
//!
//! # Example
//! Offline, the test kit's mock Gemini API stands in for the model (the hidden lines), and
//! `GEMINI_BIN` names the CLI: without it the example returns early, and under CI it fails
//! instead, as every real-binary test does. (Its `SKIPPED` line goes to stderr, which rustdoc
//! shows only for a failing doc test, so locally a skip shows as a doc test that took no time.)
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let Some(gemini) = test_kit::real_cli::binary("GEMINI_BIN", "driver-gemini's crate example") else { return Ok(()) };
//! # let model = test_kit::gemini::MockGemini::start(test_kit::Script::new().then(test_kit::Reply::text("The test expects 3.")))?;
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async {
//! use std::sync::Arc;
//! use agent::store::sqlite::{SqliteConfig, SqliteStore};
//! use agent::{Agent, HostEnv, RuntimeEnv, SecretString};
//! use driver_gemini::{CommonOptions, GeminiDriver, GeminiOptions};
//!
//! # let dir = tempfile::tempdir()?;
//! let root = dir.path(); // the host's data directory, `/var/lib/myhost` say
//! let env = RuntimeEnv::builder(root.join("runtime-env"), "user:alice".parse()?, root)
//!     .host_env(HostEnv::capture())
//!     .runtimes([&driver_gemini::RUNTIME.descriptor])
//!     .build()?;
//! let options = GeminiOptions::new()
//!     .with_model("gemini-2.5-pro")
//!     .with_api_key(SecretString::from("AIza-example")); // your key
//! # let options = options.with_binary(&gemini).with_base_url(model.base_url());
//! let driver = GeminiDriver::new(Arc::new(env), options);
//! driver.check_version().await?; // `gemini --version` against the minimum
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

mod config;
mod dialect;
mod events;
#[cfg(test)]
mod fuzz_tests;
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
pub use options::{AuthType, GeminiOptions, MINIMUM_VERSION};
pub use runtime::RUNTIME;

/// The Gemini CLI driver: [`driver_cli::CliDriver`] over the Gemini dialect. One `gemini -p
/// --output-format stream-json` process per turn, in a [`RuntimeEnv`](runtime_env::RuntimeEnv)
/// namespace whose `GEMINI_CLI_HOME` keeps the sessions across host restarts; see the
/// [crate docs](crate) for the argv, the settings file, the turn lock and the resume rules.
pub type GeminiDriver = driver_cli::CliDriver<dialect::Gemini>;
