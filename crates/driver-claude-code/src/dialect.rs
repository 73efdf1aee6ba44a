//! The Claude Code dialect: argv, environment, the per-run `--mcp-config` file, the
//! unknown-session phrase and failure classification. Everything else is the one CLI driver.

use driver_cli::{
    ConfigFiles, Dialect, Identity, Invocation, NewSessionId, Runtime, Turn, classify_text,
};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, FailureKind, Request,
};
use driver_stream_json::{
    McpDialect, PermissionFlags, StreamJson, TurnResult, check_base_url, mcp_file,
};
use runtime_env::RuntimeEnv;

use crate::options::ClaudeCodeOptions;

/// The variables that switch off Claude Code's non-essential traffic.
const OFFLINE_VARS: &[(&str, &str)] = &[
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
];

/// How Claude Code takes the permission policy.
const PERMISSIONS: PermissionFlags = PermissionFlags::CLAUDE_CODE;

/// The resident mode (`--no-session-persistence` for a bare run).
static RESIDENT: driver_stream_json::Resident =
    driver_stream_json::Resident::new(Some("--no-session-persistence"));

driver_cli::dialect!(
    /// The Claude Code dialect of the one CLI driver, over [`ClaudeCodeOptions`].
    ClaudeCode(ClaudeCodeOptions)
);

impl Dialect for ClaudeCode {
    type Translator = StreamJson;

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

    fn capabilities(&self) -> Capabilities {
        driver_stream_json::capabilities()
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        // The permission options moved to the request's policy (issue 27); their fields keep
        // the values the default options had, so stored Threads keep resuming.
        builder
            .str("permissions", "allow_request_servers/dontAsk")
            .list("allowed_tools", &[] as &[String])
            .opt_str("base_url", self.base_url.as_deref())
            .opt_str(
                "max_turns",
                self.max_turns.map(|t| t.to_string()).as_deref(),
            )
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        check_base_url(self.base_url.as_deref())
    }

    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        Ok(PERMISSIONS.check(&request.permissions)?)
    }

    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        mcp_file(turn.request, McpDialect::new())
    }

    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let mut invocation = Invocation::new(argv(self, turn));
        if let Some(url) = &self.base_url {
            invocation = invocation.var("ANTHROPIC_BASE_URL", url.as_str());
        }
        if let Some(retries) = self.max_retries {
            invocation = invocation.var("CLAUDE_CODE_MAX_RETRIES", retries.to_string());
        }
        Ok(invocation.vars_if(self.offline, OFFLINE_VARS))
    }

    fn translator(&self, request: &Request) -> StreamJson {
        StreamJson::new(request, classify)
    }

    /// `--input-format stream-json`, one process per Thread.
    fn resident(&self) -> Option<&dyn driver_cli::ResidentProtocol> {
        Some(&RESIDENT)
    }

    fn unknown_session(&self, translator: &StreamJson, finished: &driver_cli::Finished) -> bool {
        translator.unknown_session(&finished.stderr_tail)
    }
}

/// The argv (without the program): the shared stream-json flags, then the permission flags
/// and the variadic `--allowedTools` last.
fn argv(options: &ClaudeCodeOptions, turn: &Turn<'_>) -> Vec<String> {
    let head = ["-p", "--output-format", "stream-json", "--verbose"];
    let model = options.cli.model.as_deref();
    let no_persistence = Some("--no-session-persistence");
    let mut args = driver_stream_json::argv(
        &head,
        turn,
        model,
        no_persistence,
        options.max_turns,
        turn.resident,
    );
    let servers = turn.request.mcp.iter().map(|s| s.name.as_str());
    args.extend(PERMISSIONS.args(&turn.request.permissions, servers, turn.resident));
    args
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
