//! `--acp-agent FILE` and `--acp-command PROGRAM`: any ACP agent, registered by its command
//! for this run (`runtimes::register_acp`), with no Rust code. Its capabilities are the
//! file's, or learned from one `initialize` of the agent (`AcpAgentBuilder::learn`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use driver_acp::{AcpAgentBuilder, AcpCapabilities};
use serde::Deserialize;

use crate::env::{EnvOptions, builder as env_builder};
use crate::{Failure, exit};

/// The flags that name an ACP agent by its command.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AcpAgentOptions {
    /// An ACP agent described by a TOML file (its name, command, key and endpoint variables,
    /// state directory and capabilities); see `docs/drivers.md`. Replaces `--runtime`.
    #[arg(long, value_name = "FILE", conflicts_with = "acp_command")]
    acp_agent: Option<PathBuf>,
    /// An ACP agent started as PROGRAM (with `--acp-arg`s), whose capabilities are learned
    /// from its `initialize`. Replaces `--runtime`.
    #[arg(long, value_name = "PROGRAM")]
    acp_command: Option<String>,
    /// An argument of `--acp-command`, repeatable.
    #[arg(
        long = "acp-arg",
        value_name = "ARG",
        requires = "acp_command",
        allow_hyphen_values = true
    )]
    acp_args: Vec<String>,
    /// The registry name of the `--acp-command` agent (part of its Threads' fingerprint).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "acp_agent",
        requires = "acp_command"
    )]
    acp_name: String,
    /// The variable of agentctl's environment that holds the `--acp-command` agent's key, and
    /// under which it reaches the agent (a credential name such as `*_API_KEY`).
    #[arg(long, value_name = "VAR", requires = "acp_command")]
    acp_key_var: Option<String>,
    /// A plain variable of the `--acp-command` agent, repeatable (never a credential).
    #[arg(long = "acp-var", value_name = "NAME=VALUE", requires = "acp_command")]
    acp_vars: Vec<String>,
}

impl AcpAgentOptions {
    /// Whether an agent is named.
    pub(crate) fn given(&self) -> bool {
        self.acp_agent.is_some() || self.acp_command.is_some()
    }
}

/// An agent file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    /// The registry name, `[a-z][a-z0-9_]*`.
    name: String,
    /// The program, then its arguments (`["my-agent", "--acp"]`).
    command: Vec<String>,
    #[serde(default)]
    key_vars: Vec<String>,
    endpoint_var: Option<String>,
    model_flag: Option<String>,
    auth_method: Option<String>,
    #[serde(default)]
    vars: BTreeMap<String, String>,
    state: Option<StateDir>,
    #[serde(default)]
    empty_load_is_unknown: bool,
    /// `"learn"`, or the capabilities.
    capabilities: Capabilities,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateDir {
    var: String,
    dir: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Capabilities {
    Learn(Learn),
    Declared(Declared),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Learn {
    Learn,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Declared {
    #[serde(default)]
    load_session: bool,
    #[serde(default)]
    resume_session: bool,
    #[serde(default)]
    fork_session: bool,
    #[serde(default)]
    mcp_http: bool,
    #[serde(default)]
    mcp_sse: bool,
    #[serde(default = "yes")]
    mcp_stdio: bool,
}

fn yes() -> bool {
    true
}

impl From<Declared> for AcpCapabilities {
    fn from(d: Declared) -> Self {
        AcpCapabilities::BASELINE
            .with_load_session(d.load_session)
            .with_resume_session(d.resume_session)
            .with_fork_session(d.fork_session)
            .with_mcp(d.mcp_http, d.mcp_sse)
            .with_mcp_stdio(d.mcp_stdio)
    }
}

/// The registry entry of the agent the flags name, registered for this run, and the
/// variable its key is read from.
pub(crate) async fn entry(
    options: &AcpAgentOptions,
    env: &EnvOptions,
    workspace: &Path,
) -> Result<&'static driver_cli::Runtime, Failure> {
    let usage = |message: String| Failure::new(exit::USAGE, message);
    let (builder, learn) = if let Some(path) = &options.acp_agent {
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(format!("--acp-agent: cannot read {}: {e}", path.display())))?;
        let file: AgentFile = toml::from_str(&text)
            .map_err(|e| usage(format!("--acp-agent: {}: {}", path.display(), e.message())))?;
        let Some((program, args)) = file.command.split_first() else {
            return Err(usage("--acp-agent: `command` names no program".to_owned()));
        };
        let mut builder = AcpAgentBuilder::new(file.name.clone(), program.clone())
            .empty_load_is_unknown(file.empty_load_is_unknown);
        for arg in args {
            builder = builder.arg(arg.clone());
        }
        for var in &file.key_vars {
            builder = builder.key_var(var.clone());
        }
        if let Some(var) = &file.endpoint_var {
            builder = builder.endpoint_var(var.clone());
        }
        if let Some(flag) = &file.model_flag {
            builder = builder.model_flag(flag.clone());
        }
        if let Some(method) = &file.auth_method {
            builder = builder.auth_method(method.clone());
        }
        for (name, value) in &file.vars {
            builder = builder.var(name.clone(), value.clone());
        }
        if let Some(state) = &file.state {
            builder = builder.state(state.var.clone(), state.dir.clone());
        }
        let learn = match file.capabilities {
            Capabilities::Learn(Learn::Learn) => true,
            Capabilities::Declared(declared) => {
                builder = builder.capabilities(declared.into());
                false
            }
        };
        (builder, learn)
    } else if let Some(program) = &options.acp_command {
        let mut builder = AcpAgentBuilder::new(options.acp_name.clone(), program.clone());
        for arg in &options.acp_args {
            builder = builder.arg(arg.clone());
        }
        if let Some(var) = &options.acp_key_var {
            builder = builder.key_var(var.clone());
        }
        for pair in &options.acp_vars {
            let Some((name, value)) = pair.split_once('=').filter(|(n, _)| !n.is_empty()) else {
                return Err(usage("--acp-var takes NAME=VALUE".to_owned()));
            };
            builder = builder.var(name, value);
        }
        (builder, true)
    } else {
        return Err(usage("no ACP agent named".to_owned()));
    };
    let builder = if learn {
        let env = env_builder(env, workspace.to_path_buf())?
            .build()
            .map_err(|e| {
                Failure::new(
                    exit::FAILURE,
                    format!("cannot build the runtime environment: {e}"),
                )
            })?;
        let limits = driver_process::command::Limits::default();
        builder.learn(&env, limits).await.map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("the ACP agent's capabilities: {}", crate::with_causes(&e)),
            )
        })?
    } else {
        builder
    };
    runtimes::register_acp(builder)
        .map_err(|e| usage(format!("the ACP agent: {}", crate::with_causes(&e))))
}
