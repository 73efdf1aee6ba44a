//! The open runtime registry: every agent runtime this workspace drives, one line each.
//!
//! Each driver crate exports one [`Runtime`] entry (`driver_codex::RUNTIME`, …): its
//! `runtime_env::RuntimeDescriptor` (state variable, config and
//! credential files, MCP mechanism, key variables), the variables a host reads its binary and
//! model key from, and the function that builds its driver from
//! [`CommonArgs`](driver_cli::CommonArgs). This crate lists the entries, so a host (agentctl)
//! iterates them instead of matching a closed set of runtimes, and adding a runtime is one
//! driver crate plus one line here.
//!
//! ```
//! let codex = runtimes::find("codex").expect("registered");
//! assert_eq!(codex.descriptor.state_var, "CODEX_HOME");
//! assert_eq!(codex.bin_var, "CODEX_BIN");
//! assert!(runtimes::all().iter().any(|r| r.descriptor.name == "claude_code"));
//! assert!(runtimes::find("claude-code").is_none(), "registry names use `_`");
//! ```
//!
//! # Invariants
//!
//! * Every CLI driver crate of the workspace is listed: a test reads the workspace's packages
//!   (`cargo metadata`) and fails for a `driver-<name>` crate that runs the driver kit
//!   (`[package.metadata.conformance]`) and depends on `driver-cli` but has no entry named
//!   `<name>` (with `-` as `_`).
//! * Names are unique across the registry, and so are state variables but between entries
//!   that share one descriptor (`gemini` and `gemini_acp`); every descriptor passes
//!   `runtime_env::RuntimeDescriptor::validate`, so one
//!   environment can serve all of them at once.
//!
//! # What it deliberately does not do
//!
//! * It holds no per-runtime logic: which variable carries a key, or whether a CLI takes a
//!   model endpoint, is the entry's rule, in its driver crate.
//! * It does not list the reference runtime (`reference-runtime`): it runs in process, takes
//!   no binary, endpoint or key, and so fits no [`CommonArgs`](driver_cli::CommonArgs) entry;
//!   agentctl offers it beside the registry.
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use driver_acp::{AcpAgentBuilder, RegisterError};
pub use driver_cli::Runtime;

/// The registry, in the order hosts show it.
static ALL: &[&Runtime] = &[
    &driver_codex::RUNTIME,
    &driver_claude_code::RUNTIME,
    &driver_cursor::RUNTIME,
    &driver_codebuddy::RUNTIME,
    &driver_gemini::RUNTIME,
    &driver_acp::GEMINI,
    &driver_acp::CODEBUDDY,
];

/// Every registered runtime, in the order hosts show it.
pub fn all() -> &'static [&'static Runtime] {
    ALL
}

/// The runtime registered under `name` (`codex`, `claude_code`, `gemini_acp`, …, or an ACP
/// agent registered at run time), if any.
pub fn find(name: &str) -> Option<&'static Runtime> {
    ALL.iter()
        .copied()
        .find(|r| r.name == name)
        .or_else(|| driver_acp::registered(name))
}

/// Registers an ACP agent by its command ([`AcpAgentBuilder`]) under a name no entry of the
/// registry has, so [`find`] finds it from now on (a worker process, which builds its driver
/// from a runtime's name, does not: it knows the built-in entries only).
///
/// ```
/// let entry = runtimes::register_acp(
///     runtimes::AcpAgentBuilder::new("doc_agent", "doc-agent").arg("--acp"),
/// )?;
/// assert!(std::ptr::eq(runtimes::find("doc_agent").unwrap(), entry));
/// assert!(runtimes::register_acp(runtimes::AcpAgentBuilder::new("codex", "x")).is_err());
/// # Ok::<(), runtimes::RegisterError>(())
/// ```
///
/// # Errors
/// [`RegisterError::Taken`] for a name of the registry's, else as
/// [`AcpAgentBuilder::register`].
pub fn register_acp(agent: AcpAgentBuilder) -> Result<&'static Runtime, RegisterError> {
    if ALL.iter().any(|r| r.name == agent.name()) {
        return Err(RegisterError::Taken);
    }
    agent.register()
}
