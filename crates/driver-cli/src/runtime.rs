//! [`Runtime`]: one entry of the open runtime registry. Each driver crate exports one
//! (`pub static RUNTIME: driver_cli::Runtime`), the `runtimes` crate lists them, and a host
//! (agentctl) builds any runtime's driver from the same [`CommonArgs`] without naming the
//! runtime in its code.
//!
//! The entry holds what used to be a match arm per runtime in the host: the runtime's
//! [`RuntimeDescriptor`], the variable that may name its binary, the variable its model key
//! comes from by default, and a function that turns the common arguments into its driver
//! (which variable carries the key, whether the CLI takes a model endpoint at all).

use std::path::PathBuf;
use std::sync::Arc;

use driver_spi::{ConfigError, Driver};
use run_service::EnvBinding;
use runtime_env::{RuntimeDescriptor, RuntimeEnvBuilder};

use crate::{CliDriver, CommonOptions, Dialect};

/// What every runtime's driver can be built from. Empty by default: each `None` keeps the
/// driver's own default (the program on `PATH`, the vendor's model and endpoint, no key).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CommonArgs {
    /// The executable: a path, or a name looked up in the child's `PATH`.
    pub binary: Option<PathBuf>,
    /// The default model.
    pub model: Option<String>,
    /// The model endpoint, instead of the vendor's (each runtime says what API it expects).
    pub base_url: Option<String>,
    /// The model API key, with the name of the variable it came from. It reaches the runtime
    /// only as a secret; which variable carries it there is the runtime's rule.
    pub key: Option<EnvBinding>,
}

impl CommonArgs {
    /// `options` with the binary and the model of these arguments, where given.
    pub fn apply<D: CommonOptions>(&self, mut options: D) -> D {
        if let Some(binary) = &self.binary {
            options = options.with_binary(binary.clone());
        }
        if let Some(model) = &self.model {
            options = options.with_model(model.clone());
        }
        options
    }
}

/// Building a runtime's driver from [`CommonArgs`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The runtime cannot take one of the arguments (Cursor takes no model endpoint).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The runtime environment could not be built.
    #[error(transparent)]
    Env(#[from] runtime_env::Error),
}

/// The function of a [`Runtime`] entry that builds its driver: it gets an environment builder
/// that already serves the runtime, and adds its secrets before building it.
type BuildDriver = fn(RuntimeEnvBuilder, CommonArgs) -> Result<Arc<dyn Driver>, BuildError>;

/// One runtime of the registry: its descriptor, where a host finds its binary and key, and
/// how its driver is built.
///
/// ```
/// use std::sync::Arc;
/// use driver_cli::{BuildError, CommonArgs, Runtime};
/// use driver_spi::Driver;
/// use runtime_env::{RuntimeDescriptor, RuntimeEnvBuilder};
/// # use runtime_env::{IsolationMode, KeyringUse, McpMechanism};
///
/// pub static RUNTIME: Runtime = Runtime::new(DESCRIPTOR, "MY_CLI_BIN", "MY_CLI_API_KEY", build);
///
/// static DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
///     name: "my_cli",
///     // …
/// #   program: "my-cli", state_var: "MY_CLI_HOME", state_subdir: ".my-cli",
/// #   state_dir_must_exist: false, private_subdirs: &[], sources: &[], credential_files: &[],
/// #   api_key_vars: &["MY_CLI_API_KEY"], endpoint_vars: &[], keyring: KeyringUse::Never,
/// #   mcp: McpMechanism::McpConfigFlag, supported_modes: &[IsolationMode::Subprocess],
/// };
///
/// fn build(env: RuntimeEnvBuilder, args: CommonArgs) -> Result<Arc<dyn Driver>, BuildError> {
///     // A real entry puts `args.key` where its CLI reads it, builds `env`, and returns
///     // `Arc::new(CliDriver::new(Arc::new(env.build()?), options))`.
/// #   let _ = (env, args);
///     Err(driver_spi::ConfigError::missing("binary").into())
/// }
///
/// assert_eq!(RUNTIME.descriptor.name, "my_cli");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Runtime {
    /// What `runtime-env` must know: name, program, state variable, files, key variables.
    pub descriptor: RuntimeDescriptor,
    /// The host variable that may name the binary (`CODEX_BIN`).
    pub bin_var: &'static str,
    /// The host variable the model key is read from when the host names none
    /// (`OPENAI_API_KEY`).
    pub key_var: &'static str,
    build: BuildDriver,
}

impl Runtime {
    /// An entry; `build` turns the common arguments into the driver, given an environment
    /// builder that already serves the runtime (it adds its secrets, then builds it).
    pub const fn new(
        descriptor: RuntimeDescriptor,
        bin_var: &'static str,
        key_var: &'static str,
        build: fn(RuntimeEnvBuilder, CommonArgs) -> Result<Arc<dyn Driver>, BuildError>,
    ) -> Self {
        Self {
            descriptor,
            bin_var,
            key_var,
            build,
        }
    }

    /// Builds the runtime's driver in an environment from `env`, which is made to serve the
    /// runtime (its state directory, its state variable) before the entry adds its secrets.
    ///
    /// # Errors
    /// [`BuildError::Config`] for an argument the runtime cannot take, [`BuildError::Env`]
    /// when the environment cannot be built.
    pub fn build(
        &'static self,
        env: RuntimeEnvBuilder,
        args: CommonArgs,
    ) -> Result<Arc<dyn Driver>, BuildError> {
        (self.build)(env.runtimes([&self.descriptor]), args)
    }
}

impl<D: Dialect> CliDriver<D> {
    /// The driver over `options` in the environment `env` builds, as a registry entry returns
    /// it.
    ///
    /// # Errors
    /// [`BuildError::Env`] when the environment cannot be built.
    pub fn in_env(
        env: RuntimeEnvBuilder,
        options: impl Into<D>,
    ) -> Result<Arc<dyn Driver>, BuildError> {
        Ok(Arc::new(Self::new(Arc::new(env.build()?), options)))
    }
}
