//! [`Runtime`]: one entry of the open runtime registry. Each driver crate exports one
//! (`pub static RUNTIME: driver_cli::Runtime`), the `runtimes` crate lists them, and a host
//! (agentctl) builds any runtime's driver from the same [`CommonArgs`] without naming the
//! runtime in its code.
//!
//! The entry holds what used to be a match arm per runtime in the host: the runtime's
//! [`RuntimeDescriptor`], the variable that may name its binary, the variable its model key
//! comes from by default, and how its driver is built from the common arguments: the same
//! way for every runtime, but for what its driver crate states in [`ModelAccess`] (where the
//! key goes, whether and how the CLI takes a model endpoint).

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;

use driver_process::command::Limits;
use driver_spi::{ConfigError, Driver};
use run_service::EnvBinding;
use runtime_env::{RuntimeDescriptor, RuntimeEnvBuilder};
use secrecy::SecretString;

use crate::driver::CliDriver;
use crate::driver::options::{CommonOptions, ProcessMode};

mod builder;

pub use builder::DriverBuilder;

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
    /// One process per turn (the default), or resident processes; a runtime without a
    /// resident mode refuses that in `validate_config`.
    pub process_mode: ProcessMode,
    /// The time, line and stderr limits of each run, instead of the defaults.
    pub limits: Option<Limits>,
}

impl CommonArgs {
    /// `options` with the binary, the model and the limits of these arguments, where given,
    /// and their process mode.
    fn apply<O: CommonOptions>(&self, mut options: O) -> O {
        if let Some(binary) = &self.binary {
            options = options.with_binary(binary.clone());
        }
        if let Some(model) = &self.model {
            options = options.with_model(model.clone());
        }
        if let Some(limits) = self.limits {
            options = options.with_limits(limits);
        }
        options.with_process_mode(self.process_mode)
    }
}

/// Where a CLI reads the model key of [`CommonArgs::key`].
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyRoute<O> {
    /// A secret of the environment under the runtime's [`key_var`](Runtime::key_var),
    /// whatever variable the key came from (the CLI reads that one only).
    KeyVar,
    /// A secret under the name of the variable the key came from (Codex's provider names it).
    SourceVar,
    /// An option (`with_api_key`), which the driver hands to the CLI itself.
    Options(fn(O, SecretString) -> O),
}

/// How a CLI takes the model endpoint of [`CommonArgs::base_url`]: `options` with the endpoint
/// (the third argument names the variable the key reaches the CLI in), or, from a CLI that
/// takes none, the [`ConfigError`] on `base_url` that says why.
pub type WithEndpoint<O> = fn(O, &str, &str) -> Result<O, ConfigError>;

/// How a runtime's CLI takes the two [`CommonArgs`] whose meaning differs per CLI, the model
/// endpoint and the key; the rest of building its driver is the same for every runtime
/// ([`Runtime::new`]). A driver crate implements it on a type of its own beside its entry:
/// its dialect, or the CLI's type of a dialect it shares with another crate.
pub trait ModelAccess: 'static {
    /// The driver's options; their [`CommonOptions::Dialect`] is the driver's dialect.
    type Options: CommonOptions;

    /// Where the CLI takes the model endpoint.
    const WITH_ENDPOINT: WithEndpoint<Self::Options>;

    /// Where the CLI reads the model key.
    const KEY: KeyRoute<Self::Options>;

    /// The options the entry `runtime` starts from, before the common arguments: the
    /// defaults, for a crate with one entry; a dialect that serves several entries (the ACP
    /// dialect, one per agent) reads its own [`Runtime::spec`] of the entry here.
    fn options(runtime: &'static Runtime) -> Self::Options;
}

/// Builds the driver of `runtime`, whose CLI takes the endpoint and the key as `A` says: the
/// default options with the common arguments, in the environment `env` builds.
fn build<A: ModelAccess>(
    runtime: &'static Runtime,
    mut env: RuntimeEnvBuilder,
    args: CommonArgs,
) -> Result<Arc<dyn Driver>, BuildError> {
    let mut options = args.apply(A::options(runtime));
    let key_var = match (&A::KEY, &args.key) {
        (KeyRoute::SourceVar, Some(key)) => key.name(),
        _ => runtime.key_var,
    };
    if let Some(url) = &args.base_url {
        options = A::WITH_ENDPOINT(options, url, key_var)?;
    }
    if let Some(key) = &args.key {
        let secret = key.value().clone();
        match A::KEY {
            KeyRoute::Options(with_key) => options = with_key(options, secret),
            KeyRoute::KeyVar | KeyRoute::SourceVar => env = env.secret(key_var, secret),
        }
    }
    let env = Arc::new(env.build()?);
    let driver = CliDriver::<<A::Options as CommonOptions>::Dialect>::new(env, options);
    Ok(Arc::new(driver))
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

/// How a [`Runtime`] entry builds its driver: [`build`] for the entry's [`ModelAccess`], given
/// the entry and an environment builder that already serves the runtime.
type BuildDriver =
    fn(&'static Runtime, RuntimeEnvBuilder, CommonArgs) -> Result<Arc<dyn Driver>, BuildError>;

/// One runtime of the registry: its descriptor, where a host finds its binary and key, and
/// how its driver is built. A driver crate declares it beside its [`ModelAccess`] (an
/// `ignore`d sketch of a crate-private dialect; each driver crate's `runtime.rs` is the real
/// one):
///
/// ```ignore
/// pub static RUNTIME: Runtime = Runtime::new::<Codex>(DESCRIPTOR, "CODEX_BIN", "OPENAI_API_KEY");
///
/// impl ModelAccess for Codex {
///     type Options = CodexOptions;
///     const WITH_ENDPOINT: WithEndpoint<Self::Options> =
///         |options, url, key_var| Ok(options.with_model_provider(/* … */));
///     const KEY: KeyRoute<Self::Options> = KeyRoute::SourceVar;
///     fn options(_: &'static Runtime) -> CodexOptions {
///         CodexOptions::default()
///     }
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Runtime {
    /// The entry's name in the registry (`codex`, `gemini_acp`): its descriptor's name, or
    /// its own for an entry that shares another entry's descriptor ([`named`](Self::named)).
    pub name: &'static str,
    /// What `runtime-env` must know: name, program, state variable, files, key variables.
    /// Entries that drive one CLI two ways (Gemini headless and `gemini --acp`) share it, and
    /// so the CLI's state directory, credentials and sessions.
    pub descriptor: RuntimeDescriptor,
    /// The host variable that may name the binary (`CODEX_BIN`).
    pub bin_var: &'static str,
    /// The host variable the model key is read from when the host names none
    /// (`OPENAI_API_KEY`).
    pub key_var: &'static str,
    build: BuildDriver,
    /// What a dialect that serves several entries knows of this one ([`spec`](Self::spec)).
    spec: Option<&'static (dyn Any + Send + Sync)>,
}

impl Runtime {
    /// An entry: the runtime's descriptor, the host variables of its binary and of its key,
    /// and a driver built the same way for every runtime but for where its CLI takes the model
    /// endpoint and key, which `A` says.
    pub const fn new<A: ModelAccess>(
        descriptor: RuntimeDescriptor,
        bin_var: &'static str,
        key_var: &'static str,
    ) -> Self {
        Self {
            name: descriptor.name,
            descriptor,
            bin_var,
            key_var,
            build: build::<A>,
            spec: None,
        }
    }

    /// The entry under its own registry name `name`, for an entry that shares another's
    /// descriptor (`gemini_acp` drives the Gemini CLI's state as `gemini` does).
    pub const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The entry with `spec`, what its dialect needs to know of it (an ACP agent's command
    /// line and capabilities), read back with [`spec`](Self::spec).
    pub const fn with_spec(mut self, spec: &'static (dyn Any + Send + Sync)) -> Self {
        self.spec = Some(spec);
        self
    }

    /// The entry's spec, when it has one of type `T`.
    pub fn spec<T: Any>(&self) -> Option<&'static T> {
        self.spec.and_then(|spec| (spec as &dyn Any).downcast_ref())
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
        (self.build)(self, env.runtimes([&self.descriptor]), args)
    }
}
