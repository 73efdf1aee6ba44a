//! The Cursor runtime: what `runtime-env` must know about `cursor-agent` (its descriptor) and
//! the registry entry that builds [`CursorDriver`](crate::CursorDriver) from common arguments.

use driver_cli::{KeyRoute, ModelAccess, Runtime, WithEndpoint};
use driver_spi::ConfigError;
use runtime_env::Anchor::{Cwd, StateDir};
use runtime_env::SourceKind::{Config, Instructions, Mcp, Policy};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceSpec};

use crate::{CursorOptions, dialect::Cursor};

/// The Cursor runtime's registry entry: binary from `CURSOR_BIN`, key from `CURSOR_API_KEY`.
/// A model endpoint is refused: the Cursor CLI talks to Cursor's service only.
///
/// The driver in one expression, the same for every runtime ([`DriverBuilder`](crate::DriverBuilder)).
/// Cursor runs one process per turn and talks to Cursor's service only (an endpoint is refused):
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agent::{Agent, HostEnv, RuntimeEnv};
///
/// # let dir = tempfile::tempdir()?; let root = dir.path();
/// let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root)
///     .host_env(HostEnv::capture());
/// let driver = driver_cursor::RUNTIME
///     .driver(env)
///     .key("sk-…")
///     .build()?;
/// let agent = Agent::builder(driver).build()?; // checks the driver's configuration
/// # let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root);
/// let refused = driver_cursor::RUNTIME.driver(env).endpoint("https://llm.internal").build();
/// assert!(matches!(refused, Err(driver_cursor::BuildError::Config(e)) if e.field() == "base_url"));
/// # drop(agent);
/// # Ok(()) }
/// ```
pub static RUNTIME: Runtime = Runtime::new::<Cursor>(DESCRIPTOR, "CURSOR_BIN", "CURSOR_API_KEY");

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "cursor",
    program: "cursor-agent",
    state_var: "CURSOR_CONFIG_DIR",
    state_subdir: ".cursor",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        SourceSpec::file(StateDir, "cli-config.json", Config),
        SourceSpec::file(StateDir, "mcp.json", Mcp),
        SourceSpec::file(Cwd, ".cursor/cli.json", Policy),
        SourceSpec::file(Cwd, ".cursor/mcp.json", Mcp),
        SourceSpec::dir(Cwd, ".cursor/rules", Instructions),
        SourceSpec::file(Cwd, "AGENTS.md", Instructions),
    ],
    credential_files: &[],
    api_key_vars: &["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"],
    endpoint_vars: &[],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::ConfigDirMcpJson,
    supported_modes: &[IsolationMode::Subprocess],
};

impl ModelAccess for Cursor {
    type Options = CursorOptions;

    const WITH_ENDPOINT: WithEndpoint<Self::Options> = |_, _, _| {
        let reason = "the Cursor CLI talks to Cursor's service only";
        Err(ConfigError::invalid("base_url", reason))
    };
    // Cursor reads its key from CURSOR_API_KEY only, whatever it came from.
    const KEY: KeyRoute<Self::Options> = KeyRoute::KeyVar;

    fn options(_: &'static Runtime) -> CursorOptions {
        CursorOptions::default()
    }
}
