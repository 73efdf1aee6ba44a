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
}
