//! The Codex CLI driver: one `codex exec --json` process per turn, or a resident
//! `codex app-server` per Thread ([`ProcessMode`]), resumable across
//! host restarts in either mode.
//!
//! This crate is a dialect of the one CLI driver: [`CodexDriver`] is
//! [`driver_cli::CliDriver`] over [`CodexOptions`], which implements
//! [`driver_cli::Dialect`] with what Codex does differently (its argv, its event translator,
//! its "unknown thread" answers, its per-turn usage). The shared driver does the rest, in
//! one order for every CLI: checks, version probe, spawn, the event loop and the judgement.
//! Every turn spawns `codex` through a [`runtime_env::RuntimeEnv`], so the child's environment
//! starts empty, its HOME, XDG directories and `CODEX_HOME` belong to the credential
//! namespace, and the sessions Codex stores under `CODEX_HOME` outlive the host process. The
//! prompt goes on stdin; Codex chooses the thread id and reports it in `thread.started`.
//!
//! | turn | argv (after the options) |
//! |---|---|
//! | new session | `codex exec --json … -` |
//! | resume | `codex exec --json … resume <thread_id> -` |
//! | fork | `codex exec --json … fork <thread_id> -` |
//! | stateless | `codex exec --json --ephemeral … -` |
//!
//! In resident mode (`with_process_mode(ProcessMode::Resident(limits))`) the same `-c`
//! overrides launch `codex app-server`, which speaks JSON-RPC on stdio (`initialize`, then
//! `thread/start`, `thread/resume` or `thread/fork`, and one `turn/start` per turn; its
//! notifications are translated like `exec`'s events). A Thread's process is kept between its
//! turns while its launch configuration is exactly the same; a rotated endpoint or token
//! starts a new process that resumes the thread cold (a loaded thread would ignore new
//! config). Both modes store the same state (codec `codex/v1`), so a Thread moves between
//! them. What the pinned app-server does is in `docs/codex-app-server.md`.
//!
//! # Invariants
//! - **The request's permission policy, enforced by Codex** (`permissions.rs`): the sandbox
//!   (`read-only`, or `workspace-write` when writes are allowed, with network only when
//!   allowed), the approval policy (`never`, `on-request` when writes ask, `untrusted` on the
//!   thread when commands ask) and the command tool (off when commands are denied); a policy
//!   Codex cannot hold is refused as
//!   [`Unsupported::Permission`](driver_spi::Unsupported::Permission). Its approval requests
//!   are decided by the policy or the host.
//! - **The current request, every turn.** Model, instructions, model provider and every MCP
//!   server of the request are passed as `-c` overrides on each invocation, resumed or not:
//!   streamable HTTP as `url` + `bearer_token_env_var` + `env_http_headers` (each secret
//!   header's variable name), stdio as `command`, `args`, `env` and
//!   `env_vars` (the names of the owning service's secrets). A resumed thread therefore
//!   reaches the *new* port with the *new* token. With the default hermetic config
//!   (`--ignore-user-config`) nothing else configures the run.
//! - **No secret in argv or on disk.** Argv carries URLs and environment-variable *names*;
//!   secret values reach Codex only through its environment. The driver writes no file.
//! - **Refused before anything runs.** MCP server names that are not Codex config keys, a
//!   name given twice, an invalid provider and a stored id that is not a thread UUID are
//!   refused before the version probe and the spawn (Codex would take any other id for a
//!   thread *name* and silently start a new thread).
//! - **Resume is guarded twice.** The core compares Thread fingerprints before the driver
//!   runs; the driver then checks the stored [`SessionGuard`](driver_spi::SessionGuard) (built
//!   from the profile's session-compatibility fingerprint) before it spawns anything. An
//!   unknown or expired thread id is recognised from Codex's own output, or from a resume that
//!   reports another thread, and becomes
//!   [`DriverError::ResumeRejected`](driver_spi::DriverError::ResumeRejected).
//! - **Usage is per turn.** Codex reports the thread's running totals; the checkpoint keeps
//!   them, and each turn reports the difference from the totals of the state it continued.
//! - **Stored state is small and clean**: the thread id, the guard values and the usage
//!   totals, nothing allocation-specific (codec `codex/v1`).
//! - **Nothing outlives a run unowned.** In exec mode, dropping the run future ends Codex's
//!   whole process group (SIGTERM, then SIGKILL); so does the end of a run. In app-server
//!   mode a process outlives a turn only inside the driver's pool: a cancelled turn is
//!   interrupted (`turn/interrupt`) and its process ended; idle processes end at the pool's
//!   idle timeout, at its caps, and at `Agent::close` (the driver's
//!   [`ProcessLifecycle`](driver_spi::ProcessLifecycle)).
//!
//! # What it deliberately does not do
//! - It holds no driver machinery: the order of checks, the version probe, spawning, the
//!   event loop and its stop rule, terminate-then-fail and the judgement of a turn are
//!   [`driver_cli::CliDriver`]'s, the same for every CLI.
//! - It cannot ask the host from `codex exec` (approval `never`): a per-turn run whose
//!   permission policy asks runs on a one-turn app-server instead. It asks the host about
//!   file changes and commands only (Codex's MCP tool approvals arrive as elicitations, which
//!   are declined: a policy that asks about MCP tools is refused), and answers no other
//!   elicitation.
//! - In app-server mode it cannot ignore `CODEX_HOME/config.toml` (app-server has no
//!   `--ignore-user-config`): with the default hermetic config it refuses to launch while
//!   that file exists.
//! - It does not log Codex in: credentials come from the namespace (`CODEX_HOME/auth.json`)
//!   or from secrets injected into the [`RuntimeEnv`](runtime_env::RuntimeEnv) or the request.
//! - It does not support SSE MCP servers (Codex has no SSE transport).
//!
//! # Example
//! Everything a host names comes from this crate and `agent` (see `docs/getting-started.md`).
//! A host keeps its Threads in a store (here SQLite) and Codex's conversations in the
//! namespace's `CODEX_HOME`, so both outlive the host process; an agent without a store fails
//! every Thread with `StoreRequired`. The dry run (`agent::Thread::explain`) needs no binary;
//! the turn needs `codex` on the child's `PATH` (or
//! [`with_binary`](CommonOptions::with_binary)) and a model endpoint. Offline, the test kit's
//! mock Responses API stands in for the gateway (the hidden lines) and `CODEX_BIN` names the
//! CLI: without it the example stops after the dry run, and under CI it fails instead, as
//! every real-binary test does.
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let codex = test_kit::real_cli::binary("CODEX_BIN", "driver-codex's crate example");
//! # let model = test_kit::responses::MockResponses::start(test_kit::Script::new().then(test_kit::Reply::text("The test expects 3.")))?;
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async {
//! use std::sync::Arc;
//! use agent::store::sqlite::{SqliteConfig, SqliteStore};
//! use agent::{Agent, HostEnv, RuntimeEnv, SecretString, Verdict};
//! use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
//!
//! # let dir = tempfile::tempdir()?;
//! let root = dir.path(); // the host's data directory, `/var/lib/myhost` say
//! let env = RuntimeEnv::builder(root.join("runtime-env"), "user:alice".parse()?, root)
//!     .host_env(HostEnv::capture())
//!     .secret("GATEWAY_KEY", SecretString::from("sk-example")) // your key
//!     .runtimes([&driver_codex::RUNTIME.descriptor])
//!     .build()?;
//! // One `codex exec` per turn; `.with_process_mode(ProcessMode::Resident(PoolLimits::default()))`
//! // would keep a `codex app-server` per Thread between its turns. With the registry's
//! // provider, `RUNTIME.driver(env).endpoint(url).key(key).build()?` is the same driver in
//! // one expression (see [`RUNTIME`]).
//! let options = CodexOptions::new()
//!     .with_model("gpt-5.1-codex")
//!     .with_model_provider(ModelProvider::new("gateway", "https://llm.internal/v1").with_env_key("GATEWAY_KEY"));
//! # let options = match &codex {
//! #     Some(codex) => options.with_binary(codex).with_model("mock-model").with_model_provider(
//! #         ModelProvider::new("mock", model.base_url()).with_env_key("GATEWAY_KEY")
//! #             .with_request_max_retries(0).with_stream_max_retries(0)),
//! #     None => options,
//! # };
//! let driver = Arc::new(CodexDriver::new(Arc::new(env), options));
//! let store = SqliteStore::open(SqliteConfig::new(root.join("threads.sqlite3"))).await?;
//! let agent = Agent::builder(driver.clone()).store(Arc::new(store)).build()?;
//!
//! // Nothing is stored under the key yet, so a run would start a conversation.
//! let explained = agent.thread("ticket-4711").explain().await?;
//! assert!(matches!(explained.verdict, Verdict::Start { replaces: None, .. }));
//!
//! # if codex.is_some() {
//! driver.check_version().await?; // `codex --version` against the minimum
//! let result = agent.thread("ticket-4711").run("Summarise the failing test").await?;
//! println!("{}", result.output);
//! # assert_eq!(result.output, "The test expects 3.");
//! # }
//! agent.close().await; // ends resident processes, if any
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod app_server;
mod dialect;
mod events;
#[cfg(test)]
mod fuzz_tests;
mod options;
mod permissions;
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
pub use options::{CodexOptions, MINIMUM_VERSION, ModelProvider, ReasoningEffort, WireApi};
pub use runtime::RUNTIME;

/// The Codex CLI driver: [`driver_cli::CliDriver`] over the [`CodexOptions`] dialect, in a
/// [`RuntimeEnv`](runtime_env::RuntimeEnv) namespace whose `CODEX_HOME` keeps the threads
/// across host restarts. Two process modes
/// ([`with_process_mode`](CommonOptions::with_process_mode)):
/// - [`ProcessMode::PerTurn`] (the default): one
///   `codex exec --json` process per turn, ended with the turn; a turn whose permission policy
///   asks the host runs on a one-turn `codex app-server` instead, since `exec` cannot ask;
/// - [`ProcessMode::Resident`]: a `codex app-server` per
///   Thread, kept in the driver's pool between its turns while its launch configuration is
///   unchanged, and ended at the pool's idle timeout or caps and at `Agent::close`.
///
/// Both store the same session state, so a Thread moves between modes. See the
/// [crate docs](crate) for the argv, MCP materialization and resume rules;
/// [`CliDriver::command_line`](driver_cli::CliDriver::command_line) shows a request's argv
/// without running anything.
pub type CodexDriver = driver_cli::CliDriver<dialect::Codex>;
