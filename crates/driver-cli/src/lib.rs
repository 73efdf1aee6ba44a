//! The shared CLI-process layer of agent CLI drivers (Codex, Claude Code, Cursor, …).
//!
//! Every CLI driver starts a provider CLI, writes a prompt to it, streams JSONL from its
//! stdout, keeps the end of its stderr for diagnostics, and must end it (and whatever it
//! started) on timeout or cancellation. This crate does that once:
//!
//! * [`CliCommand`] and [`CliProcess::spawn`]: a program run directly (never through a shell)
//!   in a [`RuntimeEnv`](runtime_env::RuntimeEnv)'s isolated environment, in its own process
//!   group, with secret bindings that reach only the child's environment;
//! * [`CliProcess::next_line`] / [`next_json`](CliProcess::next_json): bounded, cancel-safe
//!   line reading with idle and total timeouts ([`Limits`]); [`parse_json_line`];
//! * [`CliProcess::stderr_tail`] and [`Finished::stderr_tail`]: a bounded, redacted stderr
//!   tail;
//! * [`CliProcess::wait`], [`CliProcess::terminate`] and `Drop`: the whole process group is
//!   ended (SIGTERM, then SIGKILL) and the child reaped; [`failure_kind`] classifies exits;
//! * [`probe_version`], [`VersionCheck`] (probe once, cache) and [`Version`]: the `--version`
//!   check;
//! * [`RunFiles`]: per-run private files (configs, MCP declarations) under the namespace;
//! * [`TurnLock`] and [`NamespaceFiles`]: for CLIs that read config only from a namespace
//!   file, a cross-process turn lock (waited for by polling, never following a symlink) and
//!   the install-then-restore of those files;
//! * [`EnvRefs`], [`mcp_servers`], [`is_env_var_name`], [`is_mcp_server_name`] and
//!   [`McpRefError`]: MCP server configs with secrets as environment-variable references, in
//!   a CLI's own syntax;
//! * [`TurnEvents`]: the event bookkeeping every JSONL translator shares (`RunStarted` once,
//!   the tool-call lifecycle, undoing a malformed event, the session id), [`json_text`], and
//!   [`fail_turn`], [`finish_turn`] and [`checkpoint`]: the terminal event and response of a
//!   judged turn;
//! * [`CliError`]: typed errors that map onto [`driver_spi::FailureKind`] and
//!   [`driver_spi::DriverError`];
//! * [`Runtime`], [`CommonArgs`], [`BuildError`]: the entry of the open runtime registry that
//!   each driver crate exports (its descriptor, binary and key variables, and how its driver
//!   is built from common arguments).
//!
//! # Invariants
//!
//! * The child's environment is the runtime environment's (empty, an allow-list of host
//!   variables, namespace HOME/XDG/state variables, injected secrets) plus what the command
//!   adds; a host credential never reaches it, and a command may not override HOME, XDG_*,
//!   TMPDIR or state variables, nor pass a credential as a plain variable.
//! * Secret values are exposed only to configure the child's environment. `Debug` of every
//!   type shows names only; error messages hold code constants, numbers, names and paths,
//!   never an output line, stderr text or a secret. stderr reaches callers only through the
//!   redacted tail (the request's redactor, the environment's and the command's secrets, and
//!   [`runtime_env::redact()`]'s token patterns).
//! * Memory is bounded: one stdout line holds at most [`Limits::max_line_bytes`], the stderr
//!   tail at most [`Limits::stderr_tail_bytes`] plus a fixed 8 KiB redaction margin.
//! * A spawned process never outlives its `CliProcess` unnoticed: dropping it, a timeout in
//!   [`CliProcess::wait`], or the end of the main process ends every remaining member of the
//!   process group, and the direct child is always reaped (by a dedicated thread, so this
//!   holds even when the Tokio runtime shuts down).
//!
//! # What it deliberately does not do
//!
//! * It knows no CLI: argv, event parsing, session handling and MCP config formats belong to
//!   each driver crate.
//! * It does not retry, and it does not kill on [`CliProcess::next_line`] errors: the driver
//!   decides (usually by dropping the process).
//! * It cannot reach processes that leave the group (`setsid`, double-fork into a new group);
//!   a CLI that does that must clean up after itself. It runs on Unix only.
//!
//! # Example
//!
//! ```
//! use driver_cli::{CliCommand, CliProcess, Limits};
//! use driver_spi::ExitStatus;
//! use runtime_env::{HostEnv, RuntimeEnv};
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! # rt.block_on(async {
//! let base = tempfile::tempdir()?;
//! let env = RuntimeEnv::builder(base.path().join("rt"), "user:alice".parse()?, base.path())
//!     .host_env(HostEnv::from_vars([("PATH", "/usr/bin:/bin")]))
//!     .build()?;
//! let command = CliCommand::new("echo").arg(r#"{"type":"hello"}"#);
//! let mut process = CliProcess::spawn(&env, command, Limits::default())?;
//! while let Some(event) = process.next_json().await? {
//!     assert_eq!(event["type"], "hello");
//! }
//! let finished = process.wait().await?;
//! assert_eq!(finished.status, ExitStatus::Success);
//! assert!(finished.failure().is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!("driver-cli supports Unix only: it relies on process groups and signals");

mod command;
mod dialect;
mod driver;
mod error;
mod files;
mod group;
mod lines;
mod mcp_refs;
mod options;
mod process;
mod runtime;
mod session;
mod stderr;
#[cfg(feature = "testing")]
pub mod testing;
mod turn;
mod turn_events;
mod turn_lock;
mod version;

pub use command::{CliCommand, Limits};
pub use dialect::{
    ConfigFiles, Dialect, Invocation, MalformedEvent, McpStatus, MergeFiles, NamespaceConfig,
    NewSessionId, Translator, Turn, default_failure,
};
pub use driver::{CliDriver, TURN_LOCK_FILE};
pub use error::CliError;
pub use files::{RUNS_DIR, RunFiles};
pub use lines::parse_json_line;
pub use mcp_refs::{EnvRefs, McpRefError, is_env_var_name, is_mcp_server_name, mcp_servers};
pub use options::{CliOptions, CommonOptions};
pub use process::{CliProcess, Finished, failure_kind};
pub use runtime::{BuildError, CommonArgs, Runtime};
pub use session::{SessionPlan, session_codec};
pub use turn_events::{Mark, TurnEvents, checkpoint, fail_turn, finish_turn, json_text};
pub use turn_lock::{NamespaceFiles, TurnLock, TurnLockError};
pub use version::{Version, VersionCheck, probe_version};

/// Whether `id` is safe to store as a CLI session id and to pass as one argv element: 1–128
/// bytes of ASCII letters, digits, `-` and `_`, not starting with `-` (so it can never be read
/// as a flag).
///
/// ```
/// assert!(driver_cli::is_safe_id("kit-session-0001"));
/// assert!(!driver_cli::is_safe_id("--last"));
/// assert!(!driver_cli::is_safe_id("a b"));
/// ```
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `id` is a UUID in its canonical text form (`8-4-4-4-12` hex digits, either case).
///
/// CLIs take other strings as session *names* and may silently start a new session when no
/// session has that name, so drivers resume only ids of this shape.
///
/// ```
/// assert!(driver_cli::is_uuid("01a22df3-293f-7f41-947b-cff0d35cc64e"));
/// assert!(!driver_cli::is_uuid("my-session"));
/// ```
pub fn is_uuid(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A failure class from a CLI's error text: authentication, rate limits, else a provider
/// error. For dialects whose CLI reports no structured error class.
///
/// ```
/// use driver_spi::FailureKind;
///
/// assert_eq!(driver_cli::classify_text("401 Unauthorized"), FailureKind::Authentication);
/// assert_eq!(driver_cli::classify_text("Rate limit reached"), FailureKind::RateLimited);
/// assert_eq!(driver_cli::classify_text("boom"), FailureKind::Provider);
/// ```
pub fn classify_text(text: &str) -> driver_spi::FailureKind {
    use driver_spi::FailureKind;
    let lower = text.to_ascii_lowercase();
    if lower.contains("401")
        || lower.contains("unauthorized")
        || lower.contains("authentication")
        || lower.contains("api key")
    {
        FailureKind::Authentication
    } else if lower.contains("429") || lower.contains("rate limit") {
        FailureKind::RateLimited
    } else {
        FailureKind::Provider
    }
}
