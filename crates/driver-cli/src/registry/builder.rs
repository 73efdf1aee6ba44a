//! [`DriverBuilder`]: a registered runtime's driver in one expression, the same for every
//! runtime: [`Runtime::driver`] with the environment, then the binary, model, endpoint, key,
//! process mode and limits a host wants, then [`build`](DriverBuilder::build).
//!
//! It is a fluent front over [`CommonArgs`] and [`Runtime::build`], which agentctl and the
//! worker keep using: what a runtime's CLI does with the endpoint and the key is still its
//! entry's [`ModelAccess`](super::ModelAccess), so a builder chain that works for one runtime
//! means the same for every other, or fails with the same typed [`BuildError`].

use std::path::PathBuf;
use std::sync::Arc;

use driver_process::command::Limits;
use driver_process::pool::PoolLimits;
use driver_spi::Driver;
use run_service::EnvBinding;
use runtime_env::RuntimeEnvBuilder;
use secrecy::SecretString;

use super::{BuildError, CommonArgs, Runtime};
use crate::driver::options::ProcessMode;

/// Builds the driver of one registered [`Runtime`]; start with [`Runtime::driver`].
///
/// Every setting is optional: without any, the driver runs the program on the child's `PATH`
/// with the vendor's model, endpoint and the credentials of the namespace, one process per
/// turn, with the default [`Limits`]. The block is `ignore`d: `driver-cli` cannot depend on a
/// driver crate (its tests would link a second `driver-cli`), and each driver crate's `RUNTIME`
/// runs the same builder as a doc test.
///
/// ```ignore
/// // Resident Codex against a gateway (each driver crate has this as a runnable example):
/// let driver = driver_codex::RUNTIME
///     .driver(RuntimeEnv::builder(root, "user:alice".parse()?, &workspace).host_env(HostEnv::capture()))
///     .endpoint("https://llm.internal/v1")
///     .key(SecretString::from(gateway_key))
///     .resident()
///     .build()?;
/// ```
#[derive(Debug)]
#[must_use = "a driver builder does nothing until `build`"]
pub struct DriverBuilder {
    runtime: &'static Runtime,
    env: RuntimeEnvBuilder,
    args: CommonArgs,
}

impl Runtime {
    /// A builder of this runtime's driver in the environment `env` builds (made to serve the
    /// runtime at [`build`](DriverBuilder::build), as [`Runtime::build`] does).
    pub fn driver(&'static self, env: RuntimeEnvBuilder) -> DriverBuilder {
        DriverBuilder {
            runtime: self,
            env,
            args: CommonArgs::default(),
        }
    }
}

impl DriverBuilder {
    /// The executable: a path, or a name looked up in the child's `PATH` (which comes from the
    /// environment's [`HostEnv`](runtime_env::HostEnv)). Default: the runtime's program name.
    pub fn binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.args.binary = Some(binary.into());
        self
    }

    /// The default model; a run's model (`AgentBuilder::model`) overrides it.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.args.model = Some(model.into());
        self
    }

    /// The model endpoint, instead of the vendor's, in the API the runtime's CLI speaks (the
    /// OpenAI Responses API for Codex, Anthropic Messages for Claude Code, …; the test kit's
    /// mock for that API stands in offline). A runtime whose CLI takes no endpoint (Cursor)
    /// fails [`build`](Self::build) with a [`BuildError::Config`] on `base_url`.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.args.base_url = Some(url.into());
        self
    }

    /// The model API key. It reaches the CLI only as a secret, in the variable (or option) the
    /// runtime reads it from ([`Runtime::key_var`] unless the CLI lets the host choose).
    pub fn key(self, key: impl Into<SecretString>) -> Self {
        let var = self.runtime.key_var;
        self.key_env(var, key)
    }

    /// The model API key under the name of the variable it came from: a CLI whose provider
    /// names its key variable (Codex) reads it there, the others where they always do, as
    /// for [`key`](Self::key).
    pub fn key_env(mut self, var: impl Into<String>, key: impl Into<SecretString>) -> Self {
        self.args.key = Some(EnvBinding::new(var, key));
        self
    }

    /// One process per turn ([`ProcessMode::PerTurn`], the default) or resident processes
    /// ([`ProcessMode::Resident`]); a runtime without a resident mode refuses the latter in
    /// `validate_config` (so at `AgentBuilder::build`).
    pub fn process_mode(mut self, mode: ProcessMode) -> Self {
        self.args.process_mode = mode;
        self
    }

    /// Resident processes with the default [`PoolLimits`]: shorthand for
    /// `process_mode(ProcessMode::Resident(PoolLimits::default()))`.
    pub fn resident(self) -> Self {
        self.process_mode(ProcessMode::Resident(PoolLimits::default()))
    }

    /// The time, line and stderr limits of each run, instead of [`Limits::default`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.args.limits = Some(limits);
        self
    }

    /// Builds the environment and the driver.
    ///
    /// # Errors
    /// [`BuildError::Config`] for a setting the runtime cannot take (its field names it),
    /// [`BuildError::Env`] when the environment cannot be built.
    pub fn build(self) -> Result<Arc<dyn Driver>, BuildError> {
        self.runtime.build(self.env, self.args)
    }
}
