//! The Claude Code runtime: what `runtime-env` must know about `claude` (its descriptor) and
//! the registry entry that builds [`ClaudeCodeDriver`](crate::ClaudeCodeDriver) from common
//! arguments.

use driver_cli::{KeyRoute, ModelAccess, Runtime, WithEndpoint};
use runtime_env::Anchor::{Cwd, StateDir, System};
use runtime_env::SourceKind::{Config, Credential, Instructions, Mcp, Policy};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceSpec};

use crate::{ClaudeCodeOptions, dialect::ClaudeCode};

/// The Claude Code runtime's registry entry: binary from `CLAUDE_BIN`, key from
/// `ANTHROPIC_API_KEY`; a model endpoint is a Messages API (`ANTHROPIC_BASE_URL`).
///
/// The driver in one expression, the same for every runtime ([`DriverBuilder`](crate::DriverBuilder)).
/// A resident `claude` per Thread, against a Messages-API gateway:
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agent::{Agent, HostEnv, RuntimeEnv};
///
/// # let dir = tempfile::tempdir()?; let root = dir.path();
/// let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root)
///     .host_env(HostEnv::capture());
/// let driver = driver_claude_code::RUNTIME
///     .driver(env)
///     .endpoint("https://llm.internal")
///     .key("sk-…")
///     .resident()
///     .build()?;
/// let agent = Agent::builder(driver).build()?; // checks the driver's configuration
/// # drop(agent);
/// # Ok(()) }
/// ```
pub static RUNTIME: Runtime =
    Runtime::new::<ClaudeCode>(DESCRIPTOR, "CLAUDE_BIN", "ANTHROPIC_API_KEY");

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "claude_code",
    program: "claude",
    state_var: "CLAUDE_CONFIG_DIR",
    state_subdir: ".claude",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        SourceSpec::file(System, "/etc/claude-code/managed-settings.json", Policy),
        SourceSpec::file(StateDir, "settings.json", Config),
        SourceSpec::file(StateDir, "CLAUDE.md", Instructions),
        // Global state (user MCP servers, account): inside CLAUDE_CONFIG_DIR when it is set.
        SourceSpec::file(StateDir, ".claude.json", Credential),
        SourceSpec::file(Cwd, ".claude/settings.json", Config),
        SourceSpec::file(Cwd, ".claude/settings.local.json", Config),
        SourceSpec::file(Cwd, ".mcp.json", Mcp),
        SourceSpec::file(Cwd, "CLAUDE.md", Instructions),
    ],
    credential_files: &[SourceSpec::file(StateDir, ".credentials.json", Credential)],
    api_key_vars: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ],
    endpoint_vars: &[
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_BEDROCK_BASE_URL",
        "ANTHROPIC_VERTEX_BASE_URL",
    ],
    keyring: KeyringUse::MacOs,
    mcp: McpMechanism::McpConfigFlag,
    supported_modes: &[IsolationMode::InProcess, IsolationMode::Subprocess],
};

impl ModelAccess for ClaudeCode {
    type Options = ClaudeCodeOptions;

    const WITH_ENDPOINT: WithEndpoint<Self::Options> =
        |options, url, _| Ok(options.with_base_url(url));
    // Claude Code reads its key from ANTHROPIC_API_KEY only, whatever it came from.
    const KEY: KeyRoute<Self::Options> = KeyRoute::KeyVar;

    fn options(_: &'static Runtime) -> ClaudeCodeOptions {
        ClaudeCodeOptions::default()
    }
}
