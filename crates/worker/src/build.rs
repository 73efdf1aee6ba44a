//! Building a [`DriverConfig`]'s driver: in the worker, where it runs, and on the host, where
//! only its descriptor, codec and fingerprinter are used.

use std::sync::Arc;

use driver_cli::{CommonArgs, ProcessMode};
use driver_process::pool::PoolLimits;
use driver_spi::Driver;
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceConfig};
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv, RuntimeEnvBuilder};
use worker_protocol::{DriverConfig, ReferenceScript, WireEnv};

/// Why a configuration's driver could not be built. It names the step, never a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The namespace is not a credential namespace name.
    #[error("the configuration's credential namespace is invalid")]
    Namespace,
    /// No runtime of the registry has this name.
    #[error("the configuration names no runtime of the registry")]
    UnknownRuntime,
    /// The runtime's driver refused its arguments. `Display` shows the config error (the
    /// field and the fix) after this layer, and `source()` does not repeat it.
    #[error("the runtime's driver refused its arguments: {0}")]
    Config(driver_spi::ConfigError),
    /// The runtime environment could not be built. `Display` shows why after this layer, and
    /// `source()` does not repeat it.
    #[error("the runtime environment could not be built: {0}")]
    Env(runtime_env::Error),
    /// The bubblewrap launcher was given an environment at the shared isolation level: it
    /// has no namespace directory of its own to show the sandbox, only the host's HOME.
    #[error("the bubblewrap launcher needs a namespace directory; the environment is shared")]
    SharedLevel,
    /// The environment declares [`IsolationMode::Worker`](runtime_env::IsolationMode::Worker)
    /// (a principal boundary), but the launcher starts the worker in the host's OS user: the
    /// summary, `agentctl` and the policy check would report a boundary that is not there.
    #[error(
        "the environment declares the `worker` isolation mode, but the direct launcher gives no OS boundary"
    )]
    OverstatedMode,
    /// The host's environment sets a plain variable (`RuntimeEnvBuilder::var`) that the
    /// configuration does not name in [`WireEnv::vars`](worker_protocol::WireEnv::vars): the
    /// worker passes only its allow-list on to a runtime, so the variable would silently not
    /// reach the CLI as it does in process. The name is host configuration; no value is shown.
    #[error(
        "the host's environment sets `{name}`, which the configuration's `env.vars` does not name: it would not reach the runtime through the worker"
    )]
    UnlistedVar {
        /// The variable's name.
        name: String,
    },
}

/// The environment builder of `env`, copying allow-listed variables from `host` and setting
/// `env`'s plain variables (the builder refuses credential-looking and reserved names).
pub(crate) fn env_builder(env: &WireEnv, host: HostEnv) -> Result<RuntimeEnvBuilder, BuildError> {
    let namespace: CredentialNamespace =
        env.namespace.parse().map_err(|_| BuildError::Namespace)?;
    let mut builder = RuntimeEnv::builder(&env.base_dir, namespace, &env.cwd).host_env(host);
    for (name, value) in &env.vars {
        builder = builder.var(name, value);
    }
    Ok(builder)
}

/// The driver of `config`, in an environment whose host variables come from `host`.
///
/// # Errors
/// [`BuildError`].
pub fn build(config: DriverConfig, host: HostEnv) -> Result<Arc<dyn Driver>, BuildError> {
    build_parts(config, host).map(|(driver, _)| driver)
}

/// What a reference script step makes the reference driver do.
pub(crate) fn behavior(step: ReferenceScript) -> Behavior {
    match step {
        ReferenceScript::Stall => Behavior::Stall,
        ReferenceScript::UseTool {
            action,
            tool,
            arguments,
        } => Behavior::UseTool {
            action,
            tool,
            arguments,
        },
    }
}

/// The driver of `config`, and the backend of a reference driver (what `runtime.script`
/// reaches).
pub(crate) fn build_parts(
    config: DriverConfig,
    host: HostEnv,
) -> Result<(Arc<dyn Driver>, Option<ReferenceBackend>), BuildError> {
    let builder = env_builder(config.env(), host)?;
    match config {
        DriverConfig::Reference {
            script,
            prompt_tools,
            ..
        } => {
            let config = ReferenceConfig::new().with_prompt_tools(prompt_tools);
            let driver = reference_runtime::driver(builder)
                .map_err(BuildError::Env)?
                .with_config(config);
            for step in script {
                driver.backend().push_behavior(behavior(step));
            }
            let backend = driver.backend().clone();
            Ok((Arc::new(driver), Some(backend)))
        }
        DriverConfig::Registry {
            runtime,
            binary,
            model,
            base_url,
            key,
            resident,
            ..
        } => {
            let entry = runtimes::find(&runtime).ok_or(BuildError::UnknownRuntime)?;
            let mut args = CommonArgs::default();
            args.binary = binary;
            args.model = model;
            args.base_url = base_url;
            args.key = key.map(worker_protocol::WireBinding::into_binding);
            if resident {
                args.process_mode = ProcessMode::Resident(PoolLimits::default());
            }
            let driver = entry.build(builder, args).map_err(|e| match e {
                driver_cli::BuildError::Config(e) => BuildError::Config(e),
                driver_cli::BuildError::Env(e) => BuildError::Env(e),
                _ => BuildError::UnknownRuntime,
            })?;
            Ok((driver, None))
        }
        _ => Err(BuildError::UnknownRuntime),
    }
}

#[cfg(test)]
mod tests {
    use super::BuildError;

    /// Issue 40: a host that prints only `Display` sees what to fix, and a chain walker
    /// prints it once.
    #[test]
    fn a_build_error_shows_its_cause_once() {
        let error = BuildError::Config(driver_spi::ConfigError::invalid(
            "runtime_env",
            "does not serve this driver's runtime: name it in RuntimeEnvBuilder::runtimes",
        ));
        let shown = error.to_string();
        assert!(
            shown.starts_with("the runtime's driver refused its arguments: "),
            "{shown}"
        );
        assert!(shown.contains("RuntimeEnvBuilder::runtimes"), "{shown}");
        assert!(std::error::Error::source(&error).is_none());
    }
}
