//! [`CodeBuddyDriver`]: one `codebuddy -p --output-format stream-json` process per turn.

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
use run_service::{EnvBinding, TransportKind};
use runtime_env::{RuntimeEnv, RuntimeKind};

use crate::argv;
use crate::options::{CodeBuddyOptions, PermissionMode};

/// The driver type: part of every CodeBuddy Thread's fingerprint.
pub const DRIVER_TYPE: &str = "codebuddy";

/// The codec name, part of every CodeBuddy Thread's fingerprint.
pub const CODEC_NAME: &str = "codebuddy/v1";

fn validate_session_id(id: &str) -> Result<(), driver_spi::CodecError> {
    if driver_cli::is_safe_id(id) {
        Ok(())
    } else {
        Err(driver_spi::CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of the CodeBuddy driver: the session id (a UUID the host chose with
/// `--session-id`, or the one a fork reported) and the
/// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored. The codec keeps
/// any id that is safe as one argv element ([`driver_cli::is_safe_id`]); the driver resumes
/// only UUIDs.
pub const CODEBUDDY_CODEC: GuardedCodec = GuardedCodec::new(CODEC_NAME, validate_session_id);

/// The phrase CodeBuddy prints for a session id it does not know: a lone
/// `{"type":"error","error":"No conversation found with session ID: …"}` line, exit 0.
const UNKNOWN_SESSION: &str = "no conversation found with session id";

/// What differs about this CLI, for the shared stream-json turn.
const DIALECT: CliDialect = CliDialect {
    runtime: RuntimeKind::CodeBuddy,
    // MCP tools are deferred behind a search tool unless loading is eager.
    mcp: McpDialect::new().with_defer_loading(false),
    codec: &CODEBUDDY_CODEC,
    unknown_session,
    classify,
};

/// Whether the CLI said it does not know the session.
fn unknown_session(output: &TurnOutput) -> bool {
    // CodeBuddy says so in a lone `error` event (exit 0), before `system/init`.
    [
        output.finished.stderr_tail.as_str(),
        output.translator.error().unwrap_or(""),
    ]
    .iter()
    .any(|text| text.to_ascii_lowercase().contains(UNKNOWN_SESSION))
}

/// The variables that switch off the built-in plugin-marketplace fetch and telemetry.
const OFFLINE_VARS: &[(&str, &str)] = &[
    ("CODEBUDDY_SKIP_BUILTIN_MARKETPLACE", "1"),
    ("DISABLE_TELEMETRY", "1"),
];

/// Drives CodeBuddy Code: one `codebuddy -p --output-format stream-json` process per turn, in
/// a [`RuntimeEnv`] namespace whose `CODEBUDDY_CONFIG_DIR` (and HOME) keep the sessions
/// across host restarts.
///
/// See the [crate docs](crate) for the argv, MCP file and resume rules.
#[derive(Debug)]
pub struct CodeBuddyDriver {
    options: CodeBuddyOptions,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
}

impl CodeBuddyDriver {
    /// A driver that runs `codebuddy` in `env` with `options`.
    pub fn new(env: Arc<RuntimeEnv>, options: CodeBuddyOptions) -> Self {
        let fingerprint = config_fingerprint(&options, &env);
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &CodeBuddyOptions {
        &self.options
    }

    /// Runs `codebuddy --version` once (later calls return the cached version) and checks it
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
        let args = argv::build(
            &self.options,
            request.model.as_deref(),
            request.instructions.as_deref(),
            mcp_config,
            plan,
        );
        let mut command = CliCommand::new(&self.options.binary)
            .args(args)
            .secret_env(&request.runtime.secret_env)
            .stdin_text(request.prompt.clone())
            .redactor(request.redactor());
        if let Some(url) = &self.options.base_url {
            command = command.var("CODEBUDDY_BASE_URL", url.as_str());
        }
        if let Some(key) = &self.options.api_key {
            let binding = EnvBinding::new("CODEBUDDY_API_KEY", key.clone());
            command = command.secret_env([&binding]);
        }
        // Without these CodeBuddy derives its user id and nickname from the last eight
        // characters of the API key, sends the id and writes the nickname to its log.
        command = command
            .var("ACC_USER_ID", self.options.user_id.as_str())
            .var("ACC_USER_NICKNAME", self.options.user_id.as_str());
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

fn config_fingerprint(options: &CodeBuddyOptions, env: &RuntimeEnv) -> Fingerprint {
    ConfigFingerprintBuilder::new(DRIVER_TYPE)
        .opt_str("model", options.model.as_deref())
        .opt_str(
            "permission_mode",
            options.permission_mode.map(PermissionMode::as_str),
        )
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
impl Driver for CodeBuddyDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(DRIVER_TYPE, "CodeBuddy Code").with_capabilities(
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
        if !is_user_id(&self.options.user_id) {
            return Err(ConfigError::invalid(
                "user_id",
                "must be 1-64 ASCII letters, digits, `-`, `_`, `.` or `@`",
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
        Some(&CODEBUDDY_CODEC)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }
}

impl ConfigFingerprinter for CodeBuddyDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}

/// The failure class of a failed `result` event. CodeBuddy reports no HTTP status field, only
/// texts such as `401 Unauthorized` in `errors`.
fn classify(result: &TurnResult) -> FailureKind {
    if result.subtype.starts_with("error_max_") {
        FailureKind::Limit
    } else {
        classify_text(&result.failure_text())
    }
}

fn is_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
}
