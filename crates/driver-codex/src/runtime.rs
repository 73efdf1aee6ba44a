//! The Codex runtime: what `runtime-env` must know about `codex` (its descriptor) and the
//! registry entry that builds [`CodexDriver`](crate::CodexDriver) from common arguments.

use driver_cli::{KeyRoute, ModelAccess, Runtime, WithEndpoint};
use runtime_env::Anchor::{Cwd, StateDir, System};
use runtime_env::SourceKind::{Config, Credential, Instructions, Policy};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceSpec};

use crate::{CodexOptions, ModelProvider, dialect::Codex};

/// The Codex runtime's registry entry: binary from `CODEX_BIN`, key from `OPENAI_API_KEY` by
/// default. A model endpoint becomes a Responses-API provider whose key variable is the one
/// the key came from.
///
/// The driver in one expression, the same for every runtime ([`DriverBuilder`](crate::DriverBuilder)).
/// A resident `codex app-server` per Thread, against a Responses-API gateway:
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agent::{Agent, HostEnv, RuntimeEnv};
///
/// # let dir = tempfile::tempdir()?; let root = dir.path();
/// let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root)
///     .host_env(HostEnv::capture());
/// let driver = driver_codex::RUNTIME
///     .driver(env)
///     .endpoint("https://llm.internal/v1")
///     .key("sk-…")
///     .resident()
///     .build()?;
/// let agent = Agent::builder(driver).build()?; // checks the driver's configuration
/// # drop(agent);
/// # Ok(()) }
/// ```
pub static RUNTIME: Runtime = Runtime::new::<Codex>(DESCRIPTOR, "CODEX_BIN", "OPENAI_API_KEY");

/// The provider id of a model endpoint given as a common argument. Part of the config
/// fingerprint: agentctl has always named it so, and its stored Threads stay resumable.
const PROVIDER_ID: &str = "agentctl";

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "codex",
    program: "codex",
    state_var: "CODEX_HOME",
    state_subdir: ".codex",
    // Codex refuses a CODEX_HOME that names a missing directory.
    state_dir_must_exist: true,
    private_subdirs: &[],
    sources: &[
        SourceSpec::file(System, "/etc/codex/config.toml", Config),
        SourceSpec::file(StateDir, "config.toml", Config),
        SourceSpec::dir(StateDir, "rules", Policy),
        SourceSpec::file(StateDir, "AGENTS.md", Instructions),
        SourceSpec::file(Cwd, ".codex/config.toml", Config),
        SourceSpec::file(Cwd, "AGENTS.md", Instructions),
    ],
    credential_files: &[SourceSpec::file(StateDir, "auth.json", Credential)],
    api_key_vars: &["CODEX_API_KEY", "OPENAI_API_KEY"],
    endpoint_vars: &["OPENAI_BASE_URL"],
    keyring: KeyringUse::ConfigSelected {
        file: "config.toml",
        key: "cli_auth_credentials_store",
    },
    mcp: McpMechanism::CodexConfigToml,
    supported_modes: &[IsolationMode::InProcess, IsolationMode::Subprocess],
};

impl ModelAccess for Codex {
    type Options = CodexOptions;

    // Codex reads the key from the variable the provider names, under the name it came from.
    const WITH_ENDPOINT: WithEndpoint<Self::Options> = |options, url, key_var| {
        Ok(options.with_model_provider(ModelProvider::new(PROVIDER_ID, url).with_env_key(key_var)))
    };
    const KEY: KeyRoute<Self::Options> = KeyRoute::SourceVar;

    fn options(_: &'static Runtime) -> CodexOptions {
        CodexOptions::default()
    }
}
