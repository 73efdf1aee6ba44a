//! The typed construction options of the CodeBuddy driver.

use driver_cli::CliOptions;
use driver_process::version::Version;
use secrecy::SecretString;
use std::fmt;

/// The oldest `codebuddy` release this driver is tested with.
pub const MINIMUM_VERSION: Version = Version::new(2, 117, 0);

/// The construction options of a [`CodeBuddyDriver`](crate::CodeBuddyDriver).
///
/// Everything here except the binary path, the limits, the API key value, the user id and the
/// offline switch is part of the driver's config fingerprint. What CodeBuddy may do without
/// asking is the request's [`PermissionPolicy`](driver_spi::PermissionPolicy), not an option.
///
/// ```
/// use driver_codebuddy::{CodeBuddyOptions, CommonOptions};
/// use secrecy::SecretString;
///
/// let options = CodeBuddyOptions::new()
///     .with_base_url("https://llm-gateway.internal/v1")
///     .with_api_key(SecretString::from("…"))
///     .with_model("gpt-5.1-codex");
/// assert!(format!("{options:?}").contains("api_key: Some(\"[REDACTED]\")"));
/// ```
#[derive(Clone)]
pub struct CodeBuddyOptions {
    pub(crate) cli: CliOptions,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<SecretString>,
    pub(crate) user_id: String,
    pub(crate) max_turns: Option<u32>,
    pub(crate) offline: bool,
}

impl Default for CodeBuddyOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeBuddyOptions {
    /// Defaults: binary `codebuddy` from `PATH`, CodeBuddy's default model and permission
    /// mode, its own endpoint and login, user id `agent-sdk`, no turn limit, offline switches
    /// on, the default [`Limits`](driver_process::command::Limits) and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new("codebuddy", MINIMUM_VERSION),
            base_url: None,
            api_key: None,
            user_id: "agent-sdk".to_owned(),
            max_turns: None,
            offline: true,
        }
    }

    /// The model endpoint (`CODEBUDDY_BASE_URL`): an OpenAI Chat Completions server
    /// (`POST <base>/chat/completions`; CodeBuddy adds no `/v1`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The endpoint's key (`CODEBUDDY_API_KEY`), a secret: it reaches only the CLI's
    /// environment.
    pub fn with_api_key(mut self, key: SecretString) -> Self {
        self.api_key = Some(key);
        self
    }

    /// The user id and nickname CodeBuddy sends and logs (`ACC_USER_ID`,
    /// `ACC_USER_NICKNAME`). Without them CodeBuddy derives both from the last eight
    /// characters of the API key, sends the id as `x-user-id` and writes the nickname to its
    /// log under HOME, so the driver always sets them; the default is `agent-sdk`.
    pub fn with_user_id(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = user_id.into();
        self
    }

    /// The most agentic turns one run may take (`--max-turns`).
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Whether the built-in plugin-marketplace fetch and telemetry are switched off
    /// (`CODEBUDDY_SKIP_BUILTIN_MARKETPLACE=1`, `DISABLE_TELEMETRY=1`; the default). With
    /// them off, CodeBuddy contacts only the model endpoint and the MCP servers.
    pub fn with_offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }
}

impl fmt::Debug for CodeBuddyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeBuddyOptions")
            .field("cli", &self.cli)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("user_id", &self.user_id)
            .field("max_turns", &self.max_turns)
            .field("offline", &self.offline)
            .finish()
    }
}
