//! The CodeBuddy dialect: argv, environment, the per-run `--mcp-config` file (MCP tools
//! loaded eagerly), the unknown-session phrase and failure classification. Everything else
//! is the one CLI driver.

use driver_cli::{
    ConfigFiles, Dialect, Finished, Identity, Invocation, NewSessionId, ProcessMode, Runtime, Turn,
    classify_text,
};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, FailureKind, Request,
};
use driver_stream_json::{
    McpDialect, PermissionFlags, StreamJson, TurnResult, check_base_url, mcp_file,
};
use run_service::EnvBinding;
use runtime_env::RuntimeEnv;

use crate::options::CodeBuddyOptions;

/// The variables that switch off the built-in plugin-marketplace fetch and telemetry.
const OFFLINE_VARS: &[(&str, &str)] = &[
    ("CODEBUDDY_SKIP_BUILTIN_MARKETPLACE", "1"),
    ("DISABLE_TELEMETRY", "1"),
];

/// How CodeBuddy takes the permission policy.
const PERMISSIONS: PermissionFlags = PermissionFlags::CODEBUDDY;

/// The resident mode (CodeBuddy has no stateless flag).
static RESIDENT: driver_stream_json::Resident = driver_stream_json::Resident::new(None);

driver_cli::dialect!(
    /// The CodeBuddy dialect of the one CLI driver, over [`CodeBuddyOptions`].
    CodeBuddy(CodeBuddyOptions)
);

impl Dialect for CodeBuddy {
    type Translator = StreamJson;

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

    fn capabilities(&self) -> Capabilities {
        driver_stream_json::capabilities()
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        // The permission options moved to the request's policy (issue 27); their fields keep
        // the values the default options had, so stored Threads keep resuming.
        builder
            .opt_str("permission_mode", None)
            .list("allowed_tools", &[] as &[String])
            .opt_str("base_url", self.base_url.as_deref())
            .opt_str(
                "max_turns",
                self.max_turns.map(|t| t.to_string()).as_deref(),
            )
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        if !is_user_id(&self.user_id) {
            return Err(ConfigError::invalid(
                "user_id",
                "must be 1-64 ASCII letters, digits, `-`, `_`, `.` or `@`",
            ));
        }
        check_base_url(self.base_url.as_deref())
    }

    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        Ok(PERMISSIONS.check(&request.permissions)?)
    }

    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        // MCP tools are deferred behind a search tool unless loading is eager.
        mcp_file(turn.request, McpDialect::new().with_defer_loading(false))
    }

    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let mut invocation = Invocation::new(argv(self, turn));
        if let Some(url) = &self.base_url {
            invocation = invocation.var("CODEBUDDY_BASE_URL", url.as_str());
        }
        if let Some(key) = &self.api_key {
            invocation
                .secrets
                .push(EnvBinding::new("CODEBUDDY_API_KEY", key.clone()));
        }
        // Without these CodeBuddy derives its user id and nickname from the last eight
        // characters of the API key, sends the id and writes the nickname to its log.
        invocation = invocation
            .var("ACC_USER_ID", self.user_id.as_str())
            .var("ACC_USER_NICKNAME", self.user_id.as_str());
        // CodeBuddy 2.117.0 otherwise snapshots its shell start-up (the environment included,
        // so the key and MCP bearer values) into `.codebuddy/shell-snapshots/` under HOME,
        // where it outlives the turn. Not an option: a secret must not reach the disk.
        invocation = invocation.var("CODEBUDDY_DISABLE_SHELL_SNAPSHOT", "1");
        Ok(invocation.vars_if(self.offline, OFFLINE_VARS))
    }

    /// A resident CodeBuddy's `result.usage` counts its whole process.
    fn translator(&self, request: &Request) -> StreamJson {
        StreamJson::new(request, classify).with_process_usage(is_resident(self))
    }

    /// `--input-format stream-json`, one process per Thread.
    fn resident(&self) -> Option<&dyn driver_cli::ResidentProtocol> {
        Some(&RESIDENT)
    }

    fn unknown_session(&self, translator: &StreamJson, finished: &Finished) -> bool {
        translator.unknown_session(&finished.stderr_tail)
    }
}

/// The argv (without the program): the shared stream-json flags, then the permission mode
/// and `--allowedTools`. CodeBuddy has no flag to skip persistence: a stateless turn is a new
/// session whose checkpoint is not returned.
fn argv(options: &CodeBuddyOptions, turn: &Turn<'_>) -> Vec<String> {
    let head = ["-p", "--output-format", "stream-json"];
    let model = options.cli.model.as_deref();
    let mut args =
        driver_stream_json::argv(&head, turn, model, None, options.max_turns, turn.resident);
    let servers = turn.request.mcp.iter().map(|s| s.name.as_str());
    args.extend(PERMISSIONS.args(&turn.request.permissions, servers, turn.resident));
    args
}

fn is_resident(options: &CodeBuddyOptions) -> bool {
    matches!(options.cli.process_mode, ProcessMode::Resident(_))
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
