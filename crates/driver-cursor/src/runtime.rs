//! The Cursor runtime: what `runtime-env` must know about `cursor-agent` (its descriptor) and
//! the registry entry that builds [`CursorDriver`](crate::CursorDriver) from common arguments.

use std::sync::Arc;

use driver_cli::{BuildError, CommonArgs, Runtime};
use driver_spi::{ConfigError, Driver};
use runtime_env::Anchor::{Cwd, StateDir};
use runtime_env::SourceKind::{Config, Instructions, Mcp, Policy};
use runtime_env::{
    IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeEnvBuilder, SourceSpec,
};

use crate::CursorOptions;

/// The Cursor runtime's registry entry: binary from `CURSOR_BIN`, key from `CURSOR_API_KEY`.
/// A model endpoint is refused: the Cursor CLI talks to Cursor's service only.
pub static RUNTIME: Runtime = Runtime::new(DESCRIPTOR, "CURSOR_BIN", "CURSOR_API_KEY", build);

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

fn build(mut env: RuntimeEnvBuilder, args: CommonArgs) -> Result<Arc<dyn Driver>, BuildError> {
    if args.base_url.is_some() {
        return Err(ConfigError::invalid(
            "base_url",
            "the Cursor CLI talks to Cursor's service only",
        )
        .into());
    }
    // Cursor reads its key from CURSOR_API_KEY only, whatever it came from.
    if let Some(key) = &args.key {
        env = env.secret(RUNTIME.key_var, key.value().clone());
    }
    crate::CursorDriver::in_env(env, args.apply(CursorOptions::new()))
}
