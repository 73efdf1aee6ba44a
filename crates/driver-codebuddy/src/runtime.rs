//! The CodeBuddy Code runtime: what `runtime-env` must know about `codebuddy` (its descriptor)
//! and the registry entry that builds [`CodeBuddyDriver`](crate::CodeBuddyDriver) from common
//! arguments.

use driver_cli::{KeyRoute, ModelAccess, Runtime, WithEndpoint};
use runtime_env::Anchor::{Cwd, Home, StateDir};
use runtime_env::SourceKind::{Config, Credential, Mcp};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceSpec};

use crate::{CodeBuddyOptions, dialect::CodeBuddy};

/// The CodeBuddy runtime's registry entry: binary from `CODEBUDDY_BIN`, key from
/// `CODEBUDDY_API_KEY` (handed over as the typed key option); a model endpoint is a Chat
/// Completions API.
///
/// The driver in one expression, the same for every runtime ([`DriverBuilder`](crate::DriverBuilder)).
/// A resident `codebuddy` per Thread, against a Chat Completions gateway:
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agent::{Agent, HostEnv, RuntimeEnv};
///
/// # let dir = tempfile::tempdir()?; let root = dir.path();
/// let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root)
///     .host_env(HostEnv::capture());
/// let driver = driver_codebuddy::RUNTIME
///     .driver(env)
///     .endpoint("https://llm.internal/v1")
///     .key("sk-…")
///     .resident()
///     .build()?;
/// let agent = Agent::builder(driver).build()?; // checks the driver's configuration
/// # drop(agent);
/// # Ok(()) }
/// ```
pub static RUNTIME: Runtime =
    Runtime::new::<CodeBuddy>(DESCRIPTOR, "CODEBUDDY_BIN", "CODEBUDDY_API_KEY");

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "codebuddy",
    program: "codebuddy",
    // Unverified: used by Tencent's own adapter but missing from the official variable list.
    state_var: "CODEBUDDY_CONFIG_DIR",
    state_subdir: ".codebuddy",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        SourceSpec::file(StateDir, "settings.json", Config),
        // User MCP servers and per-project state, in HOME like Claude's `.claude.json`.
        SourceSpec::file(Home, ".codebuddy.json", Credential),
        SourceSpec::file(Cwd, ".codebuddy/settings.json", Config),
        SourceSpec::file(Cwd, ".codebuddy/settings.local.json", Config),
        SourceSpec::file(Cwd, ".mcp.json", Mcp),
    ],
    credential_files: &[],
    api_key_vars: &["CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"],
    endpoint_vars: &["CODEBUDDY_BASE_URL", "CODEBUDDY_INTERNET_ENVIRONMENT"],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::McpConfigFlag,
    supported_modes: &[IsolationMode::Subprocess],
};

impl ModelAccess for CodeBuddy {
    type Options = CodeBuddyOptions;

    const WITH_ENDPOINT: WithEndpoint<Self::Options> =
        |options, url, _| Ok(options.with_base_url(url));
    const KEY: KeyRoute<Self::Options> = KeyRoute::Options(CodeBuddyOptions::with_api_key);

    fn options(_: &'static Runtime) -> CodeBuddyOptions {
        CodeBuddyOptions::default()
    }
}
