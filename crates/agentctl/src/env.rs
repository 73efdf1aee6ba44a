//! `agentctl auth status` and `agentctl runtime-env show`: what `runtime-env` reports for a
//! namespace, without a secret (its summaries carry names and placeholder paths only). The
//! runtimes are the registry's (`runtimes::all()`), so a new runtime appears here without a
//! change to agentctl.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, ValueEnum};
use runtime_env::{
    CredentialNamespace, HostEnv, IsolationLevel, IsolationMode, RuntimeEnv, RuntimeEnvBuilder,
    Tenancy,
};
use serde_json::Value;

use crate::store::{create_private_dir, data_dir};
use crate::{Failure, exit, output};

/// The isolation levels `--level` names (an ephemeral level needs a session of a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Level {
    /// The host's own HOME/XDG (single tenant).
    Shared,
    /// One persistent HOME/XDG tree per namespace.
    Namespaced,
}

/// The parser of a `--runtime` value: `extra` (such as `reference`) and every registered
/// runtime, shown with `-` (`claude-code`) and accepted with `_` too (`claude_code`, its
/// registry name).
pub(crate) fn runtime_parser(extra: &[&'static str]) -> PossibleValuesParser {
    let registered = runtimes::all().iter().map(|r| {
        let name = r.name;
        let shown = PossibleValue::new(name.replace('_', "-"));
        if name.contains('_') {
            shown.alias(name)
        } else {
            shown
        }
    });
    PossibleValuesParser::new(
        extra
            .iter()
            .map(|e| PossibleValue::new(*e))
            .chain(registered),
    )
}

/// The registered runtime a `--runtime` value names.
pub(crate) fn registered(value: &str) -> Result<&'static driver_cli::Runtime, Failure> {
    runtimes::find(&value.replace('-', "_"))
        .ok_or_else(|| Failure::new(exit::USAGE, format!("--runtime: no runtime `{value}`")))
}

/// Which environment to look at.
#[derive(Debug, Clone, Args)]
pub(crate) struct EnvOptions {
    /// The credential namespace: `kind` or `kind:id` (e.g. `user:alice`).
    #[arg(long, default_value = "default", value_name = "NAMESPACE")]
    namespace: String,
    /// The isolation level.
    #[arg(long, value_enum, default_value_t = Level::Namespaced)]
    level: Level,
    /// The base directory of namespaced state (default: `<data dir>/agentctl/runtime-env`).
    #[arg(long, value_name = "DIR")]
    base: Option<PathBuf>,
    /// Run the runtime through an `agent-worker` process of the namespace instead of in
    /// agentctl's process: `--worker` (or `--worker=direct`) launches it as agentctl's own
    /// user (isolation mode `subprocess`); `--worker=sandbox` in a bubblewrap sandbox that
    /// sees only the namespace and the workspace (mode `worker`). `auth status`,
    /// `runtime-env show` and `support-bundle` report the mode the flag puts in force.
    #[arg(
        long,
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "direct",
        value_name = "LAUNCH"
    )]
    pub(crate) worker: Option<WorkerLaunch>,
    /// With `--worker`: the `agent-worker` binary (default: `agent-worker` beside agentctl's
    /// own executable).
    #[arg(long, value_name = "PATH", requires = "worker")]
    pub(crate) worker_bin: Option<PathBuf>,
    /// With `--worker=sandbox`: the `bwrap` binary (default: `bwrap` on `PATH`).
    #[arg(long, value_name = "PATH", requires = "worker")]
    pub(crate) bwrap: Option<PathBuf>,
}

impl EnvOptions {
    /// The credential namespace, parsed.
    pub(crate) fn credential_namespace(&self) -> Result<CredentialNamespace, Failure> {
        self.namespace
            .parse()
            .map_err(|e| Failure::new(crate::exit::USAGE, format!("--namespace: {e}")))
    }
}

/// How `--worker` launches the namespace's `agent-worker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WorkerLaunch {
    /// As agentctl's own user, with the whole file system visible: no OS boundary.
    Direct,
    /// In a bubblewrap sandbox that sees only its namespace and workspace.
    Sandbox,
}

impl WorkerLaunch {
    /// The isolation mode a worker launched this way is in.
    pub(crate) fn mode(self) -> IsolationMode {
        match self {
            Self::Direct => IsolationMode::Subprocess,
            Self::Sandbox => IsolationMode::Worker,
        }
    }
}

/// The runtime environment these options name, serving every registered runtime (its
/// directories are created if missing).
pub(crate) fn build(options: &EnvOptions) -> Result<RuntimeEnv, Failure> {
    let cwd = std::env::current_dir().map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let all = runtimes::all().iter().map(|r| &r.descriptor);
    finish(builder(options, cwd)?.runtimes(all))
}

/// Builds a prepared environment.
pub(crate) fn finish(builder: RuntimeEnvBuilder) -> Result<RuntimeEnv, Failure> {
    builder.build().map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot build the runtime environment: {e}"),
        )
    })
}

/// The builder of the environment these options name, for a runtime working in `cwd`; it
/// serves no runtime yet (a registry entry adds its own).
pub(crate) fn builder(options: &EnvOptions, cwd: PathBuf) -> Result<RuntimeEnvBuilder, Failure> {
    let namespace: CredentialNamespace = options
        .namespace
        .parse()
        .map_err(|e| Failure::new(exit::USAGE, format!("--namespace: {e}")))?;
    let base = match &options.base {
        Some(base) => base.clone(),
        None => data_dir()?.join("runtime-env"),
    };
    if let Some(parent) = base.parent().filter(|p| !p.exists()) {
        create_private_dir(parent)?;
    }
    let (level, tenancy) = match options.level {
        Level::Shared => (IsolationLevel::Shared, Tenancy::Single),
        Level::Namespaced => (IsolationLevel::Namespaced, Tenancy::Multi),
    };
    let builder = RuntimeEnv::builder(base, namespace, cwd)
        .level(level)
        .tenancy(tenancy)
        .host_env(HostEnv::capture());
    // The mode in force: a worker's launch decides it (else the runtime's default, a direct
    // child), so every report of these options names it.
    Ok(match options.worker {
        Some(launch) => builder.mode(launch.mode()),
        None => builder,
    })
}

/// A serialized enum's name, as `--json` shows it.
fn name(value: impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(Value::Null) => "none".to_owned(),
        _ => "?".to_owned(),
    }
}

/// `auth status`.
pub(crate) fn auth_status(
    options: &EnvOptions,
    runtime: Option<&str>,
    json: bool,
) -> Result<(), Failure> {
    let env = build(options)?;
    let statuses = match runtime {
        Some(runtime) => {
            let status = env.auth_status(&registered(runtime)?.descriptor);
            vec![status.map_err(|e| Failure::new(exit::FAILURE, e.to_string()))?]
        }
        None => env.auth_statuses(),
    };
    let mut out = output::Out::stdout();
    if json {
        let value = serde_json::to_string_pretty(&statuses).unwrap_or_default();
        return out.json(&value);
    }
    // The mode in force comes first: a login is only as private as the boundary around it.
    // (`--json` stays an array of `AuthStatus`, the shape `serve` and the bundle share; the
    // mode is in `runtime-env show --json` and the bundle.)
    out.line(&isolation_line(&env))?;
    for warning in env.policy_warnings() {
        out.line(&format!("  warning: {warning}"))?;
    }
    out.line(&format!(
        "{:<12}  {:<9}  {:<12}  LABEL",
        "RUNTIME", "LOGGED_IN", "MODEL"
    ))?;
    for status in &statuses {
        out.line(&format!(
            "{:<12}  {:<9}  {:<12}  {}",
            status.runtime,
            name(status.logged_in),
            name(status.auth_model),
            status.account_label.as_deref().unwrap_or("-")
        ))?;
        for warning in &status.warnings {
            out.line(&format!("  warning: {warning}"))?;
        }
    }
    Ok(())
}

/// The isolation mode in force and whether it separates principals, as one line:
/// `isolation: subprocess (direct child, same OS user) separates_principals=no`.
pub(crate) fn isolation_line(env: &RuntimeEnv) -> String {
    let mode = env.mode();
    format!(
        "isolation: {mode} ({}) separates_principals={}",
        mode.boundary(),
        if mode.separates_principals() {
            "yes"
        } else {
            "no"
        }
    )
}

/// `runtime-env show`.
pub(crate) fn show(options: &EnvOptions, json: bool) -> Result<(), Failure> {
    let summary = build(options)?.summary();
    let mut out = output::Out::stdout();
    if json {
        out.json(&serde_json::to_string_pretty(&summary).unwrap_or_default())
    } else {
        out.text(&summary.to_string())
    }
}
