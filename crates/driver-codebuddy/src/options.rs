//! The typed construction options of the CodeBuddy driver.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use driver_cli::{Limits, Version};
use secrecy::SecretString;

/// The oldest `codebuddy` release this driver is tested with.
pub const MINIMUM_VERSION: Version = Version::new(2, 117, 0);

/// A CodeBuddy permission mode (`--permission-mode`).
///
/// In `-p` mode CodeBuddy runs MCP tools without asking, also as root, so the CLI's own
/// default is usually enough.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermissionMode {
    /// `default`.
    Default,
    /// `acceptEdits`: file edits are accepted without asking.
    AcceptEdits,
    /// `plan`: the model may read and plan, not change anything.
    Plan,
    /// `dontAsk`: every tool that is not allowed is denied at once.
    DontAsk,
    /// `bypassPermissions`: every tool runs without asking, shell included. Only inside an
    /// external sandbox.
    BypassPermissions,
}

impl PermissionMode {
    /// The value CodeBuddy expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::DontAsk => "dontAsk",
            Self::BypassPermissions => "bypassPermissions",
        }
    }
}

/// The construction options of a [`CodeBuddyDriver`](crate::CodeBuddyDriver).
///
/// Everything here except the binary path, the limits, the API key value, the user id and the
/// offline switch is part of the driver's config fingerprint.
///
/// ```
/// use driver_codebuddy::CodeBuddyOptions;
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
    pub(crate) binary: PathBuf,
    pub(crate) model: Option<String>,
    pub(crate) permission_mode: Option<PermissionMode>,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<SecretString>,
    pub(crate) user_id: String,
    pub(crate) max_turns: Option<u32>,
    pub(crate) offline: bool,
    pub(crate) limits: Limits,
    pub(crate) minimum_version: Version,
    pub(crate) version_probe_timeout: Duration,
}

impl Default for CodeBuddyOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeBuddyOptions {
    /// Defaults: binary `codebuddy` from `PATH`, CodeBuddy's default model and permission
    /// mode, its own endpoint and login, user id `agent-sdk`, no turn limit, offline switches
    /// on, the default [`Limits`] and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            binary: PathBuf::from("codebuddy"),
            model: None,
            permission_mode: None,
            allowed_tools: Vec::new(),
            base_url: None,
            api_key: None,
            user_id: "agent-sdk".to_owned(),
            max_turns: None,
            offline: true,
            limits: Limits::default(),
            minimum_version: MINIMUM_VERSION,
            version_probe_timeout: Duration::from_secs(30),
        }
    }

    /// The `codebuddy` executable (the npm package `@tencent-ai/agent-sdk` ships it at
    /// `cli/bin/codebuddy`).
    pub fn with_binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.binary = binary.into();
        self
    }

    /// The default model (`--model`); a request's model overrides it.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The permission mode (`--permission-mode`); CodeBuddy's default when unset.
    pub fn with_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// Tools allowed without asking (`--allowedTools`).
    pub fn with_allowed_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools.extend(tools.into_iter().map(Into::into));
        self
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

    /// Time, line and stderr limits of each run. CodeBuddy hangs without a result when the
    /// model endpoint refuses connections, so these are what end such a run.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The oldest accepted `codebuddy --version`.
    pub fn with_minimum_version(mut self, version: Version) -> Self {
        self.minimum_version = version;
        self
    }

    /// The binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The default model.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

impl fmt::Debug for CodeBuddyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeBuddyOptions")
            .field("binary", &self.binary)
            .field("model", &self.model)
            .field("permission_mode", &self.permission_mode)
            .field("allowed_tools", &self.allowed_tools)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("user_id", &self.user_id)
            .field("max_turns", &self.max_turns)
            .field("offline", &self.offline)
            .field("limits", &self.limits)
            .field("minimum_version", &self.minimum_version)
            .finish()
    }
}
