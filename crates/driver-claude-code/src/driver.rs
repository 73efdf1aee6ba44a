//! [`ClaudeCodeDriver`]: one `claude -p --output-format stream-json` process per turn.

use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use driver_cli::{CliCommand, CliError, Version, VersionCheck};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver,
    DriverError, EventSink, FailureKind, GuardedCodec, Request, Response, SessionCodec,
};
use driver_stream_json::{
    CliDialect, McpDialect, SessionPlan, TurnOutput, TurnResult, check_shared_options,
    classify_text, run_driver_turn,
};
use run_service::TransportKind;
use runtime_env::{RuntimeEnv, RuntimeKind};

use crate::argv;
use crate::options::{ClaudeCodeOptions, PermissionPolicy};

/// The driver type: part of every Claude Code Thread's fingerprint.
pub const DRIVER_TYPE: &str = "claude-code";

/// The codec name, part of every Claude Code Thread's fingerprint.
pub const CODEC_NAME: &str = "claude-code/v1";

fn validate_session_id(id: &str) -> Result<(), driver_spi::CodecError> {
    if driver_cli::is_safe_id(id) {
        Ok(())
    } else {
        Err(driver_spi::CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of the Claude Code driver: the session id (a UUID the host chose with
/// `--session-id`, or the one a fork reported) and the
/// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored. The codec keeps
/// any id that is safe as one argv element ([`driver_cli::is_safe_id`]); the driver resumes
/// only UUIDs.
pub const CLAUDE_CODE_CODEC: GuardedCodec = GuardedCodec::new(CODEC_NAME, validate_session_id);

/// The phrase Claude Code prints (on stderr, exit 1, with a lone `error_during_execution`
/// result and no `system/init`) for a session id it does not know.
const UNKNOWN_SESSION: &str = "no conversation found with session id";

/// What differs about this CLI, for the shared stream-json turn.
const DIALECT: CliDialect = CliDialect {
    runtime: RuntimeKind::ClaudeCode,
    mcp: McpDialect::new(),
    codec: &CLAUDE_CODE_CODEC,
    unknown_session,
    classify,
};

/// Whether the CLI said it does not know the session.
fn unknown_session(output: &TurnOutput) -> bool {
    // Claude Code says so on stderr (exit 1), with a lone result and no `system/init`.
    [
        output.finished.stderr_tail.as_str(),
        output.translator.error().unwrap_or(""),
    ]
    .iter()
    .any(|text| text.to_ascii_lowercase().contains(UNKNOWN_SESSION))
}

/// The variables that switch off Claude Code's non-essential traffic.
const OFFLINE_VARS: &[(&str, &str)] = &[
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
];

/// Drives Claude Code: one `claude -p --output-format stream-json --verbose` process per
/// turn, in a [`RuntimeEnv`] namespace whose `CLAUDE_CONFIG_DIR` (and HOME) keep the
/// sessions across host restarts.
///
/// See the [crate docs](crate) for the argv, MCP file and resume rules.
#[derive(Debug)]
pub struct ClaudeCodeDriver {
    options: ClaudeCodeOptions,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
}

impl ClaudeCodeDriver {
    /// A driver that runs `claude` in `env` with `options`.
    pub fn new(env: Arc<RuntimeEnv>, options: ClaudeCodeOptions) -> Self {
        let fingerprint = config_fingerprint(&options, &env);
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &ClaudeCodeOptions {
        &self.options
    }

    /// Runs `claude --version` once (later calls return the cached version) and checks it
    /// against the minimum version. [`Driver::run`] calls it before the first turn.
    ///
    /// # Errors
    /// [`CliError::NotFound`], [`CliError::VersionTooOld`], [`CliError::VersionUnparseable`]
    /// and the spawn errors of [`driver_cli::CliProcess::spawn`].
    pub async fn check_version(&self) -> Result<Version, CliError> {
        self.version
            .get(
                &self.env,
                &self.options.binary,
                self.options.minimum_version,
                self.options.version_probe_timeout,
            )
            .await
    }

    /// The command for one turn: argv (the MCP file at `mcp_config`), plain variables and
    /// the request's secrets.
    fn command(
        &self,
        request: &Request,
        plan: SessionPlan<'_>,
        mcp_config: &std::path::Path,
    ) -> CliCommand {
        let names: Vec<&str> = request.mcp.iter().map(|s| s.name.as_str()).collect();
        let args = argv::build(
            &self.options,
            request.model.as_deref(),
            request.instructions.as_deref(),
            mcp_config,
            &names,
            plan,
        );
        let mut command = CliCommand::new(&self.options.binary)
            .args(args)
            .secret_env(&request.runtime.secret_env)
            .stdin_text(request.prompt.clone())
            .redactor(request.redactor());
        if let Some(url) = &self.options.base_url {
            command = command.var("ANTHROPIC_BASE_URL", url.as_str());
        }
        if let Some(retries) = self.options.max_retries {
            command = command.var("CLAUDE_CODE_MAX_RETRIES", retries.to_string());
        }
        if self.options.offline {
            for (name, value) in OFFLINE_VARS {
                command = command.var(*name, *value);
            }
        }
        if let Some(workspace) = &request.workspace {
            command = command.cwd(workspace);
        }
        command
    }
}

fn config_fingerprint(options: &ClaudeCodeOptions, env: &RuntimeEnv) -> Fingerprint {
    ConfigFingerprintBuilder::new(DRIVER_TYPE)
        .opt_str("model", options.model.as_deref())
        .str("permissions", &options.permissions.fingerprint_name())
        .list("allowed_tools", &options.allowed_tools)
        .opt_str("base_url", options.base_url.as_deref())
        .opt_str(
            "max_turns",
            options.max_turns.map(|t| t.to_string()).as_deref(),
        )
        .str("namespace", env.namespace().as_str())
        .str("isolation_level", env.level().name())
        .finish()
}

#[async_trait::async_trait]
impl Driver for ClaudeCodeDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(DRIVER_TYPE, "Claude Code").with_capabilities(
            Capabilities::none()
                .with_resume(true)
                .with_fork(true)
                .with_streaming(true)
                .with_mcp_transport(TransportKind::StreamableHttp)
                .with_mcp_transport(TransportKind::Sse)
                .with_mcp_transport(TransportKind::Stdio),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.options.binary.as_os_str().is_empty() {
            return Err(ConfigError::missing("binary"));
        }
        if self.options.permissions == PermissionPolicy::DangerouslySkipPermissions
            && rustix::process::geteuid().is_root()
        {
            return Err(ConfigError::invalid(
                "permissions",
                "Claude Code refuses --dangerously-skip-permissions as root",
            ));
        }
        check_shared_options(
            &self.options.allowed_tools,
            self.options.base_url.as_deref(),
            self.options.model.as_deref(),
        )
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.validate_config()?;
        run_driver_turn(
            &self.env,
            &DIALECT,
            &self.descriptor(),
            &request,
            self.options.limits,
            self.check_version(),
            |plan, mcp_config| self.command(&request, plan, mcp_config),
            &*sink,
        )
        .await
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&CLAUDE_CODE_CODEC)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }
}

impl ConfigFingerprinter for ClaudeCodeDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}

/// The failure class of a failed `result` event: the model API's HTTP status when Claude
/// Code reports one, else the subtype and text.
fn classify(result: &TurnResult) -> FailureKind {
    match result.api_error_status {
        Some(401 | 403) => return FailureKind::Authentication,
        Some(429) => return FailureKind::RateLimited,
        Some(_) => return FailureKind::Provider,
        None => {}
    }
    if result.subtype.starts_with("error_max_") {
        FailureKind::Limit
    } else {
        classify_text(&result.failure_text())
    }
}
