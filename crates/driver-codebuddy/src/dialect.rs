//! The CodeBuddy dialect: what CodeBuddy does differently from the other stream-json CLI (its
//! argv head, variables and key, MCP tools loaded eagerly, identity and failure
//! classification), as the [`StreamJsonCli`] of its options. Everything else is the
//! stream-json dialect and the one CLI driver.

use driver_cli::{Identity, Invocation, NewSessionId, ProcessMode, Runtime, classify_text};
use driver_spi::{ConfigError, ConfigFingerprintBuilder, FailureKind};
use driver_stream_json::{
    McpDialect, PermissionFlags, StreamJsonCli, StreamJsonDialect, TurnResult,
};
use run_service::EnvBinding;

use crate::options::CodeBuddyOptions;

/// What the stream-json dialect of the driver needs to know of its CLI.
#[derive(Debug)]
pub struct CodeBuddy;

driver_cli::dialect!(CodeBuddyOptions => StreamJsonDialect<CodeBuddy>);

impl From<CodeBuddyOptions> for StreamJsonDialect<CodeBuddy> {
    fn from(options: CodeBuddyOptions) -> Self {
        Self::new(options)
    }
}

impl StreamJsonCli for CodeBuddy {
    type Options = CodeBuddyOptions;

    const RUNTIME: &'static Runtime = &crate::RUNTIME;

    /// The session codec of the CodeBuddy driver: the session id (a UUID the host chose with
    /// `--session-id`, or the one a fork reported) and the
    /// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored.
    const IDENTITY: Identity = Identity::new(
        "codebuddy",
        "CodeBuddy Code",
        "codebuddy/v1",
        NewSessionId::Host,
    );

    const HEAD: &'static [&'static str] = &["-p", "--output-format", "stream-json"];

    /// CodeBuddy has no flag to skip persistence: a stateless turn is a new session whose
    /// checkpoint is not returned.
    const NO_PERSISTENCE: Option<&'static str> = None;

    const PERMISSIONS: PermissionFlags = PermissionFlags::CODEBUDDY;

    /// MCP tools are deferred behind a search tool unless loading is eager.
    const MCP: McpDialect = McpDialect::new().with_defer_loading(false);

    const BASE_URL_VAR: &'static str = "CODEBUDDY_BASE_URL";

    /// The built-in plugin-marketplace fetch and telemetry.
    const OFFLINE_VARS: &'static [(&'static str, &'static str)] = &[
        ("CODEBUDDY_SKIP_BUILTIN_MARKETPLACE", "1"),
        ("DISABLE_TELEMETRY", "1"),
    ];

    fn base_url(options: &CodeBuddyOptions) -> Option<&str> {
        options.base_url.as_deref()
    }

    fn max_turns(options: &CodeBuddyOptions) -> Option<u32> {
        options.max_turns
    }

    fn offline(options: &CodeBuddyOptions) -> bool {
        options.offline
    }

    /// The former `PermissionMode` option, at its default (none).
    fn former_fields(builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        builder.opt_str("permission_mode", None)
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

    fn validate(options: &CodeBuddyOptions) -> Result<(), ConfigError> {
        if is_user_id(&options.user_id) {
            Ok(())
        } else {
            Err(ConfigError::invalid(
                "user_id",
                "must be 1-64 ASCII letters, digits, `-`, `_`, `.` or `@`",
            ))
        }
    }

    fn vars(options: &CodeBuddyOptions, mut invocation: Invocation) -> Invocation {
        if let Some(key) = &options.api_key {
            invocation
                .secrets
                .push(EnvBinding::new("CODEBUDDY_API_KEY", key.clone()));
        }
        // Without these CodeBuddy derives its user id and nickname from the last eight
        // characters of the API key, sends the id and writes the nickname to its log.
        invocation = invocation
            .var("ACC_USER_ID", options.user_id.as_str())
            .var("ACC_USER_NICKNAME", options.user_id.as_str());
        // CodeBuddy 2.117.0 otherwise snapshots its shell start-up (the environment included,
        // so the key and MCP bearer values) into `.codebuddy/shell-snapshots/` under HOME,
        // where it outlives the turn. Not an option: a secret must not reach the disk.
        invocation.var("CODEBUDDY_DISABLE_SHELL_SNAPSHOT", "1")
    }

    /// A resident CodeBuddy's `result.usage` counts its whole process.
    fn usage_per_process(options: &CodeBuddyOptions) -> bool {
        matches!(options.cli.process_mode, ProcessMode::Resident(_))
    }
}

fn is_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
}
