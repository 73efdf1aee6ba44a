//! The Claude Code dialect: what Claude Code does differently from the other stream-json CLI
//! (its argv head, variables, identity and failure classification), as the
//! [`StreamJsonCli`] of its options. Everything else is the stream-json dialect and the one
//! CLI driver.

use driver_cli::{Identity, Invocation, NewSessionId, Runtime, classify_text};
use driver_spi::{ConfigFingerprintBuilder, FailureKind};
use driver_stream_json::{
    McpDialect, PermissionFlags, StreamJsonCli, StreamJsonDialect, TurnResult,
};

use crate::options::ClaudeCodeOptions;

/// What the stream-json dialect of the driver needs to know of its CLI.
#[derive(Debug)]
pub struct ClaudeCode;

driver_cli::dialect!(ClaudeCodeOptions => StreamJsonDialect<ClaudeCode>);

impl From<ClaudeCodeOptions> for StreamJsonDialect<ClaudeCode> {
    fn from(options: ClaudeCodeOptions) -> Self {
        Self::new(options)
    }
}

impl StreamJsonCli for ClaudeCode {
    type Options = ClaudeCodeOptions;

    const RUNTIME: &'static Runtime = &crate::RUNTIME;

    /// The session codec of the Claude Code driver: the session id (a UUID the host chose with
    /// `--session-id`, or the one a fork reported) and the
    /// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored.
    const IDENTITY: Identity = Identity::new(
        "claude-code",
        "Claude Code",
        "claude-code/v1",
        NewSessionId::Host,
    );

    const HEAD: &'static [&'static str] = &["-p", "--output-format", "stream-json", "--verbose"];

    const NO_PERSISTENCE: Option<&'static str> = Some("--no-session-persistence");

    const PERMISSIONS: PermissionFlags = PermissionFlags::CLAUDE_CODE;

    const MCP: McpDialect = McpDialect::new();

    const BASE_URL_VAR: &'static str = "ANTHROPIC_BASE_URL";

    const OFFLINE_VARS: &'static [(&'static str, &'static str)] = &[
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
    ];

    /// A resident `claude` takes another `user` line during a turn and echoes it when it
    /// takes it (`docs/stream-json-resident.md`, "Steering").
    const STEERS: bool = true;

    fn base_url(options: &ClaudeCodeOptions) -> Option<&str> {
        options.base_url.as_deref()
    }

    fn max_turns(options: &ClaudeCodeOptions) -> Option<u32> {
        options.max_turns
    }

    fn offline(options: &ClaudeCodeOptions) -> bool {
        options.offline
    }

    /// The former `PermissionPolicy` option, at its default.
    fn former_fields(builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        builder.str("permissions", "allow_request_servers/dontAsk")
    }

    /// The failure class of a failed `result` event: the model API's HTTP status when Claude
    /// Code reports one, else the subtype and text.
    fn classify(result: &TurnResult) -> FailureKind {
        match result.api_error_status {
            Some(401 | 403) => return FailureKind::Authentication,
            Some(429) => return FailureKind::RateLimited,
            Some(_) => return FailureKind::ModelProvider,
            None => {}
        }
        if result.subtype.starts_with("error_max_") {
            FailureKind::Limit
        } else {
            classify_text(&result.failure_text())
        }
    }

    fn vars(options: &ClaudeCodeOptions, invocation: Invocation) -> Invocation {
        match options.max_retries {
            Some(retries) => invocation.var("CLAUDE_CODE_MAX_RETRIES", retries.to_string()),
            None => invocation,
        }
    }
}
