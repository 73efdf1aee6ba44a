//! The Gemini runtime: what `runtime-env` must know about `gemini` (its descriptor) and the
//! registry entry that builds [`GeminiDriver`](crate::GeminiDriver) from common arguments.

use driver_cli::{KeyRoute, ModelAccess, Runtime, WithEndpoint};
use runtime_env::Anchor::{Cwd, StateDir, System};
use runtime_env::SourceKind::{Config, Credential, Instructions, Policy};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceSpec};

use crate::{GeminiOptions, dialect::Gemini};

/// The Gemini runtime's registry entry: binary from `GEMINI_BIN`, key from `GEMINI_API_KEY`
/// (handed over as the typed key option, which the driver passes as `GEMINI_API_KEY`); a
/// model endpoint is the Gemini API (`GOOGLE_GEMINI_BASE_URL`).
///
/// The driver in one expression, the same for every runtime ([`DriverBuilder`](crate::DriverBuilder)).
/// Gemini runs one process per turn (it has no resident mode), against a Gemini-API gateway:
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use agent::{Agent, HostEnv, RuntimeEnv};
///
/// # let dir = tempfile::tempdir()?; let root = dir.path();
/// let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root)
///     .host_env(HostEnv::capture());
/// let driver = driver_gemini::RUNTIME
///     .driver(env)
///     .endpoint("https://llm.internal")
///     .key("sk-…")
///     .build()?;
/// let agent = Agent::builder(driver).build()?; // checks the driver's configuration
/// # let env = RuntimeEnv::builder(root.join("runtime"), "user:alice".parse()?, root);
/// let resident = driver_gemini::RUNTIME.driver(env).resident().build()?;
/// assert!(Agent::builder(resident).build().is_err()); // no resident mode
/// # drop(agent);
/// # Ok(()) }
/// ```
pub static RUNTIME: Runtime = Runtime::new::<Gemini>(DESCRIPTOR, "GEMINI_BIN", "GEMINI_API_KEY");

const DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "gemini",
    program: "gemini",
    state_var: "GEMINI_CLI_HOME",
    // GEMINI_CLI_HOME stands for HOME: the CLI keeps its state in `$GEMINI_CLI_HOME/.gemini`.
    state_subdir: "",
    state_dir_must_exist: false,
    private_subdirs: &[".gemini"],
    sources: &[
        SourceSpec::file(System, "/etc/gemini-cli/settings.json", Config),
        SourceSpec::file(StateDir, ".gemini/settings.json", Config),
        SourceSpec::dir(StateDir, ".gemini/policies", Policy),
        SourceSpec::file(StateDir, ".gemini/GEMINI.md", Instructions),
        SourceSpec::file(StateDir, ".gemini/system.md", Instructions),
        SourceSpec::file(StateDir, ".gemini/mcp-oauth-tokens.json", Credential),
        SourceSpec::file(Cwd, ".gemini/settings.json", Config),
        SourceSpec::dir(Cwd, ".gemini/policies", Policy),
        SourceSpec::file(Cwd, "GEMINI.md", Instructions),
    ],
    credential_files: &[SourceSpec::file(
        StateDir,
        ".gemini/oauth_creds.json",
        Credential,
    )],
    api_key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    endpoint_vars: &["GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::GeminiSettings,
    supported_modes: &[IsolationMode::InProcess, IsolationMode::Subprocess],
};

impl ModelAccess for Gemini {
    type Options = GeminiOptions;

    const WITH_ENDPOINT: WithEndpoint<Self::Options> =
        |options, url, _| Ok(options.with_base_url(url));
    const KEY: KeyRoute<Self::Options> = KeyRoute::Options(GeminiOptions::with_api_key);

    fn options(_: &'static Runtime) -> GeminiOptions {
        GeminiOptions::default()
    }
}
