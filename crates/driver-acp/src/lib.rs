//! The Agent Client Protocol driver: any ACP agent behind the one CLI driver, with durable
//! Threads, the semantic resume identity, approvals under the one permission policy and the
//! process pool.
//!
//! ACP (JSON-RPC 2.0 over stdio) is spoken natively by a growing set of agent CLIs. One
//! dialect serves them all: an agent is a registry entry whose spec ([`AcpAgent`]) says its
//! command line, variables and capabilities. Two are built in, sharing the descriptor (so the
//! state directory, login and sessions) of their CLI's headless entry:
//!
//! | entry | command | resumes by | MCP in `session/new` | key | endpoint |
//! |---|---|---|---|---|---|
//! | [`GEMINI`] (`gemini_acp`) | `gemini --acp [--model M]` | `session/load` | http, sse, stdio | `GEMINI_API_KEY` + `authenticate gemini-api-key` | `GOOGLE_GEMINI_BASE_URL` |
//! | [`CODEBUDDY`] (`codebuddy_acp`) | `codebuddy --acp [--model M]` | `session/load` | http, sse, stdio | `CODEBUDDY_API_KEY` | `CODEBUDDY_BASE_URL` |
//!
//! Any other agent is registered at run time by its command ([`AcpAgentBuilder`]), with its
//! capabilities declared or learned from a real `initialize` ([`AcpAgentBuilder::learn`]).
//!
//! # How a turn runs
//!
//! A process of the agent is spawned by `runtime-env`'s isolated spawn in the workspace (Gemini
//! files sessions by its process's working directory) and kept in the driver's pool (resident
//! mode), or used for one turn and closed (per-turn mode). A new process is sent `initialize`
//! (protocol version 1, no file system or terminal offered, so `fs/*` and `terminal/*` requests
//! are refused) and, where the agent needs one, `authenticate`. The session is opened with
//! `session/new` (workspace and the request's MCP servers), or continued with
//! `session/resume` where the agent offers it, else `session/load`, whose replayed history is
//! dropped, never emitted as the turn's; `session/fork` where offered. The prompt is one
//! `session/prompt`; its `session/update` notifications become driver events (see
//! [`Updates`]), and its answer's stop reason ends the turn. A stored session id the agent
//! does not know is [`ResumeRejected`](driver_spi::DriverError::ResumeRejected).
//!
//! Permission requests become approvals under the one policy (see the `permissions` module):
//! `allow_once` or `reject_once`, an `allow_always` only when the policy allows the action.
//! A cancelled turn sends `session/cancel`, answers every pending permission request
//! `cancelled`, then ends the process group within the kill grace.
//!
//! # Invariants
//!
//! * Secrets (the key, an MCP server's bearer token or secret variable) reach the agent only
//!   through its environment or the `session/new`-family message as it is written; they are
//!   never in a file, a log, an error or an event, and `Debug` of every type shows names only.
//! * The process signature covers the command, the environment (secrets keyed-hashed), the
//!   MCP declarations with their secret values and the permission policy, so a rotated
//!   endpoint or token starts a fresh process that resumes the session with the new one; a
//!   dead process is replaced and its session continued.
//! * A request the agent cannot serve (an MCP transport it lacks, a fork it does not offer,
//!   a model it cannot take) is refused before any process starts.
//!
//! # What it deliberately does not do
//!
//! * It offers the agent no client methods (`fs/*`, `terminal/*`): the agent uses its own
//!   tools, under its own permission requests.
//! * It does not write Gemini's `settings.json`: the headless `gemini` entry installs that
//!   file per turn under the namespace's turn lock, which a resident ACP process cannot hold;
//!   `authenticate` selects the key instead. A namespace whose own `settings.json` selects
//!   another auth type is still read by `gemini --acp`.
//! * It does not enforce the policy on what an agent does without asking: the policy is
//!   applied to the agent's permission requests (both built-in agents ask before edits and
//!   commands in their default mode).
//! * ACP has no system prompt: a new session's first prompt opens with the instructions.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod dialect;
mod events;
mod gemini;
mod learn;
mod mcp;
mod permissions;
mod protocol;
mod register;

pub use agent::{AcpAgent, AcpCapabilities, CODEBUDDY, GEMINI, RegisterError};
pub use dialect::AcpOptions;
pub use register::{AcpAgentBuilder, registered};
// What configuring this driver takes, so a host needs neither `driver-cli` nor
// `driver-process`: the common options, the process mode and its pool limits, the limits of
// each run, and the registry's one-expression builder (`GEMINI.driver(env)…build()`).
pub use driver_cli::{BuildError, CommonOptions, DriverBuilder, ProcessMode};
pub use driver_process::command::Limits;
pub use driver_process::pool::PoolLimits;
pub use driver_process::version::Version;
pub use events::Updates;
pub use learn::LearnError;

/// The ACP driver: [`driver_cli::CliDriver`] over the ACP dialect, for the agent its
/// [`AcpOptions`] name.
pub type AcpDriver = driver_cli::CliDriver<dialect::Acp>;

/// The built-in ACP entries, in the order hosts show them.
pub static BUILT_IN: &[&driver_cli::Runtime] = &[&GEMINI, &CODEBUDDY];

/// Whether `name` is a built-in entry's (registering it again is refused).
pub(crate) fn is_static_name(name: &str) -> bool {
    BUILT_IN.iter().any(|r| r.name == name)
}
