//! The one CLI driver of the agent CLIs (Codex, Claude Code, CodeBuddy, Cursor, Gemini), and
//! the pieces its dialects are made of.
//!
//! [`CliDriver<D>`](CliDriver) implements [`driver_spi::Driver`] once for every CLI: the
//! common options, the session plan, the version check, the config files of a turn, the
//! spawn in the namespace's [`RuntimeEnv`](runtime_env::RuntimeEnv), one event loop with one
//! stop rule, terminate-then-fail and the judgement of a turn. A [`Dialect`] (a type private
//! to its driver crate, declared with [`dialect!`] over the crate's options) supplies only
//! what one CLI does differently. What the crate publishes is what a dialect, its driver
//! crate and a host need:
//!
//! * [`Dialect`], [`Identity`], [`Translator`], [`CliEvent`], [`Turn`], [`Invocation`],
//!   [`ConfigFiles`], [`NamespaceConfig`], [`NewSessionId`], [`SessionPlan`] and
//!   [`McpStatus`]: what a dialect implements, returns and is shown;
//! * [`CliOptions`], [`CommonOptions`] and [`ProcessMode`]: the options every CLI driver
//!   has (its [`Limits`](driver_process::command::Limits), minimum
//!   [`Version`](driver_process::version::Version) and pool bounds come from `driver-process`);
//! * [`Tracked`], [`TurnEvents`], [`MalformedEvent`], [`str_field`],
//!   [`message_content`], [`json_text`] and [`ToolNames`]: the event bookkeeping every translator shares, kept by the driver;
//! * [`EnvRefs`], [`McpEntry`], [`mcp_servers`], [`is_env_var_name`], [`is_mcp_server_name`]
//!   and [`McpRefError`]: MCP server configs with secrets as environment-variable references,
//!   in a CLI's own syntax;
//! * [`default_failure`], [`classify_text`], [`is_uuid`] and [`is_safe_id`]: how failures
//!   are classified and which ids are safe;
//! * [`ResidentProtocol`], [`Call`] and [`Rejection`]: the resident mode, for dialects whose
//!   CLI keeps a process between turns (Codex's `app-server`, an ACP agent): the protocol as
//!   values over `driver-process`'s peer, in the pool the driver keeps its processes in,
//!   keyed by their exact private [`ProcessSignature`](driver_spi::ProcessSignature);
//! * [`CliDriver::side_command`]: a command of the CLI besides turns (Cursor's `create-chat`);
//! * [`Runtime`], [`CommonArgs`], [`BuildError`]: the entry of the open runtime registry that
//!   each driver crate exports (its descriptor, binary and key variables), whose driver is
//!   built from common arguments the same way for every runtime but for what its crate
//!   states in [`ModelAccess`] ([`WithEndpoint`], [`KeyRoute`]): where the CLI takes the
//!   model endpoint and the key. A host builds it in one expression with [`DriverBuilder`]
//!   (`RUNTIME.driver(env).endpoint(url).key(key).resident().build()?`).
//!
//! The driver test kit (the shared fuzz, transcript replay, fake CLI and conformance factory)
//! is the dev-only crate `cli-test-kit`, built on this crate's public API.
//!
//! Underneath is `driver-process`, the process layer every turn runs on: a program run
//! directly (never through a shell) in the namespace's isolated environment and in its own
//! process group, bounded lines, a redacted stderr tail, per-run files, the namespace turn
//! lock, the stdio peer and the pool. This crate decides what runs and what its output
//! means; that one runs it.
//!
//! # Invariants
//!
//! * The child's environment is the runtime environment's (empty, an allow-list of host
//!   variables, namespace HOME/XDG/state variables, injected secrets) plus what the dialect
//!   adds; a host credential never reaches it, and a dialect may not override HOME, XDG_*,
//!   TMPDIR or state variables, nor pass a credential as a plain variable. A request's
//!   bindings (from run services) may not set what changes how or where the runtime runs:
//!   the loader, interpreter hooks, `PATH`, TLS trust, proxies, model endpoints, the model key
//!   ([`runtime_env::RefusedVar`],
//!   [`ProcessError::RefusedRequestVar`](driver_process::error::ProcessError::RefusedRequestVar)).
//! * Secret values are exposed only to configure the child's environment. `Debug` of every
//!   type shows names only; error messages hold code constants, numbers, names and paths,
//!   never an output line, stderr text or a secret. One turn has one
//!   [`redaction::Redactor`], built once from every secret the driver knows for it (the
//!   environment's injected secrets, the invocation's own keys, the request's bindings;
//!   a resident turn adds its process's launch secrets) and the token patterns: its events
//!   (through its [`Translator`]), its approval requests and its stderr tail (the only way
//!   stderr reaches callers) all pass that one.
//! * Memory is bounded: one stdout line holds at most the driver's
//!   [`Limits::max_line_bytes`](driver_process::command::Limits::max_line_bytes), the stderr
//!   tail at most its
//!   [`Limits::stderr_tail_bytes`](driver_process::command::Limits::stderr_tail_bytes) plus a
//!   fixed 8 KiB redaction margin.
//! * A spawned process never outlives its turn unnoticed: dropping the run future, a total
//!   timeout, or the end of the main process ends every remaining member of the process
//!   group, and the direct child is always reaped (by a dedicated thread, so this holds even
//!   when the Tokio runtime shuts down). A resident process outlives a turn only idle in the
//!   driver's pool, which ends it at its idle timeout, at a cap, when the next turn's
//!   signature differs, and at [`close_processes`](driver_spi::ProcessLifecycle); a cancelled
//!   resident turn is interrupted and its process ended, within the kill grace.
//! * A prompt is delivered at most once: a resident turn falls back to a fresh process only
//!   when writing to a reused one failed before the prompt was written.
//!
//! # What it deliberately does not do
//!
//! * It knows no CLI: argv, event parsing, the unknown-session signal and MCP config formats
//!   belong to each dialect.
//! * It does not retry a turn.
//! * It does not spawn a process itself: every process is `driver-process`'s, which takes the
//!   namespace's environment and the driver's limits for each spawn.
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!("driver-cli supports Unix only: it relies on process groups and signals");

mod dialect;
mod driver;
mod mcp;
mod registry;
mod resident;

pub use dialect::events::{Tracked, TurnEvents, json_text};
pub use dialect::session::SessionPlan;
pub use dialect::tool_names::ToolNames;
pub use dialect::{
    CliEvent, ConfigFiles, Dialect, Identity, Invocation, MalformedEvent, McpStatus, MergeFiles,
    NamespaceConfig, NewSessionId, Translator, Turn, cli_capabilities, default_failure,
    message_content, str_field,
};
pub use driver::options::{CliOptions, CommonOptions, ProcessMode};
pub use driver::{CliDriver, TURN_LOCK_FILE};
pub use mcp::{EnvRefs, McpEntry, McpRefError, is_env_var_name, is_mcp_server_name, mcp_servers};
pub use registry::{
    BuildError, CommonArgs, DriverBuilder, KeyRoute, ModelAccess, Runtime, WithEndpoint,
};
pub use resident::{Call, Rejection, Replay, ResidentProtocol, TurnNotes};

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
/// assert_eq!(driver_cli::classify_text("boom"), FailureKind::ModelProvider);
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
        FailureKind::ModelProvider
    }
}
