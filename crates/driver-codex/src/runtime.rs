//! The Codex runtime: what `runtime-env` must know about `codex` (its descriptor) and the
//! registry entry that builds [`CodexDriver`](crate::CodexDriver) from common arguments.

use std::sync::Arc;

use driver_cli::{BuildError, CommonArgs, Runtime};
use driver_spi::Driver;
use runtime_env::Anchor::{Cwd, StateDir, System};
use runtime_env::SourceKind::{Config, Credential, Instructions, Policy};
use runtime_env::{
    IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeEnvBuilder, SourceSpec,
};

use crate::{CodexOptions, ModelProvider};

/// The Codex runtime's registry entry: binary from `CODEX_BIN`, key from `OPENAI_API_KEY` by
/// default. A model endpoint becomes a Responses-API provider whose key variable is the one
/// the key came from.
pub static RUNTIME: Runtime = Runtime::new(DESCRIPTOR, "CODEX_BIN", "OPENAI_API_KEY", build);

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

fn build(mut env: RuntimeEnvBuilder, args: CommonArgs) -> Result<Arc<dyn Driver>, BuildError> {
    let mut options = args.apply(CodexOptions::new());
    let key_var = args.key.as_ref().map_or(RUNTIME.key_var, |k| k.name());
    if let Some(url) = &args.base_url {
        options = options.with_provider(ModelProvider::new(PROVIDER_ID, url).with_env_key(key_var));
    }
    // Codex reads the key from the variable the provider names, under the name it came from.
    if let Some(key) = args.key {
        env = env.secret(key.name(), key.value().clone());
    }
    crate::CodexDriver::in_env(env, options)
}
