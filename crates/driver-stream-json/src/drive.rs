//! One whole stream-json turn for a request: the MCP file, the process, the judgement.

use std::path::Path;

use driver_cli::{CliCommand, CliError, Limits, RunFiles};
use driver_spi::{
    ConfigError, Descriptor, DriverError, EventSink, FailureKind, GuardedCodec, Request, Response,
};
use runtime_env::{RuntimeEnv, RuntimeKind};

use crate::events::{StreamTranslator, TurnResult};
use crate::mcp_config::{McpConfigError, McpDialect, mcp_config};
use crate::names::ToolNames;
use crate::session::{Judgement, SessionPlan, judge};
use crate::turn::{TurnOutput, run_turn};

/// What a stream-json driver tells the shared turn about its CLI: the differences between
/// the CLIs, each explicit in the driver that sets it.
#[derive(Debug, Clone, Copy)]
pub struct CliDialect {
    /// Whose state directory holds the per-run files.
    pub runtime: RuntimeKind,
    /// How the `--mcp-config` file is written.
    pub mcp: McpDialect,
    /// The driver's session codec.
    pub codec: &'static GuardedCodec,
    /// Whether a finished turn says, in the CLI's own words, that the session is unknown.
    pub unknown_session: fn(&TurnOutput) -> bool,
    /// The failure class of a failed `result` event.
    pub classify: fn(&TurnResult) -> FailureKind,
}

impl McpConfigError {
    /// This error as the driver reports it: an invalid `mcp` configuration, naming the rule.
    pub fn into_driver_error(self) -> DriverError {
        let reason = match self {
            Self::InvalidServerName { .. } => {
                "server names must be 1-64 ASCII letters, digits, `-` or `_`"
            }
            Self::DuplicateServerName => "server names must be unique within a run",
            Self::Expansion { .. } => "values must not contain `${`",
            Self::InvalidVarName { .. } => "variable names must be [A-Za-z_][A-Za-z0-9_]*",
            Self::PlainAuthorization => "use bearer_token_env_var, not a plain header",
        };
        ConfigError::invalid("mcp", reason).into()
    }
}

/// The checks Claude Code and CodeBuddy make of the options they share: tool rules that
/// are non-empty, without commas and not starting with `-` (the CLI would read one as a
/// flag), an http(s) model endpoint, and a non-empty model name.
///
/// # Errors
/// A [`ConfigError::invalid`](driver_spi::ConfigError::invalid) naming the option
/// (`allowed_tools`, `base_url`, `model`).
pub fn check_shared_options(
    allowed_tools: &[String],
    base_url: Option<&str>,
    model: Option<&str>,
) -> Result<(), ConfigError> {
    if allowed_tools
        .iter()
        .any(|t| t.is_empty() || t.contains(',') || t.starts_with('-'))
    {
        return Err(ConfigError::invalid(
            "allowed_tools",
            "tool rules must be non-empty, without commas, and not start with `-`",
        ));
    }
    if let Some(url) = base_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(ConfigError::invalid(
            "base_url",
            "must be an http or https URL",
        ));
    }
    if model.is_some_and(str::is_empty) {
        return Err(ConfigError::invalid("model", "must not be empty"));
    }
    Ok(())
}

/// A whole `Driver::run` of a stream-json CLI, once the driver's options are valid: the
/// request's needs against the driver's `descriptor`, a fresh session id for a session that
/// starts, the [`SessionPlan`], the CLI's `version` probe (the driver caches its answer),
/// then [`run_request`] with the command the driver builds for that plan.
///
/// # Errors
/// [`DriverError::Unsupported`] for a need the driver lacks, the errors of
/// [`SessionPlan::of`], a failed version probe, and those of [`run_request`].
#[allow(
    clippy::too_many_arguments,
    reason = "each is one part of the driver the turn uses"
)]
pub async fn run_driver_turn<T>(
    env: &RuntimeEnv,
    dialect: &CliDialect,
    descriptor: &Descriptor,
    request: &Request,
    limits: Limits,
    version: impl std::future::Future<Output = Result<T, CliError>>,
    command: impl FnOnce(SessionPlan<'_>, &Path) -> CliCommand,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    descriptor.capabilities.check(request)?;
    let new_id = uuid::Uuid::now_v7().to_string();
    let plan = SessionPlan::of(request, dialect.codec, &new_id)?;
    version.await.map_err(CliError::into_driver_error)?;
    run_request(
        env,
        dialect,
        request,
        plan,
        limits,
        |mcp_config| command(plan, mcp_config),
        sink,
    )
    .await
}

/// Runs one request's turn: writes the request's MCP servers to a 0600 file in a directory of
/// the run's own under the namespace, builds the command (`command` gets the file's path),
/// runs it with [`run_turn`] (required servers checked at `system/init`), removes the file
/// whatever happened, and [`judge`]s the outcome.
///
/// # Errors
/// An invalid MCP configuration ([`DriverError::InvalidConfig`]), the per-run files, and the
/// errors of [`run_turn`] and [`judge`].
pub async fn run_request(
    env: &RuntimeEnv,
    dialect: &CliDialect,
    request: &Request,
    plan: SessionPlan<'_>,
    limits: Limits,
    command: impl FnOnce(&Path) -> CliCommand,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let config = mcp_config(&request.mcp, &request.mcp_secret_names(), dialect.mcp)
        .map_err(McpConfigError::into_driver_error)?;
    let files = RunFiles::create(env, dialect.runtime, request.run_id.as_str())
        .map_err(CliError::into_driver_error)?;
    let path = files
        .write("mcp.json", config.to_string().as_bytes())
        .map_err(CliError::into_driver_error)?;
    let names = ToolNames::new(request.mcp.iter().map(|s| s.name.as_str()));
    let required: Vec<&str> = request
        .mcp
        .iter()
        .filter(|s| s.required)
        .map(|s| s.name.as_str())
        .collect();
    let translator = StreamTranslator::new(request.redactor(), names);
    let output = run_turn(env, command(&path), limits, translator, &required, sink).await;
    // Removed whatever happened; a failure to remove is not the run's failure.
    drop(files);
    let output = output?;
    let judgement = Judgement {
        plan,
        unknown_session: (dialect.unknown_session)(&output),
        codec: dialect.codec,
        classify: dialect.classify,
    };
    judge(request, judgement, output, sink)
}
