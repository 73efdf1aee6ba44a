//! [`GeminiOptions`]: the construction options of the Gemini driver, and the dialect
//! ([`crate::dialect`]) that [`GeminiDriver`](crate::GeminiDriver) runs.

use driver_cli::CliOptions;
use driver_process::version::Version;
use driver_spi::{ConfigError, Request};
use secrecy::SecretString;

use crate::config::{self, SettingsPlan};

/// The oldest `gemini` release this driver is tested with; older ones are refused by the
/// version probe (their stream-json events, exit codes and session flags differ).
pub const MINIMUM_VERSION: Version = Version::new(0, 61, 0);

/// How Gemini authenticates (`security.auth.selectedType` in `settings.json`).
///
/// Gemini's `-p` mode needs a selected auth type: from the environment alone it infers the
/// `gateway` type as soon as `GOOGLE_GEMINI_BASE_URL` is set, and refuses it (exit 41).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthType {
    /// `gemini-api-key`: the Gemini API with `GEMINI_API_KEY` (the
    /// [key option](GeminiOptions::with_api_key), or a secret injected into the runtime
    /// environment). Chosen automatically when the key option is set.
    GeminiApiKey,
    /// `vertex-ai`: Vertex AI (`GOOGLE_API_KEY`, or `GOOGLE_CLOUD_PROJECT` and
    /// `GOOGLE_CLOUD_LOCATION`, from the runtime environment).
    VertexAi,
    /// `oauth-personal`: a Google login whose credentials the namespace already holds
    /// (`.gemini/oauth_creds.json`).
    LoginWithGoogle,
    /// `compute-default-credentials`: the machine's application default credentials.
    ComputeDefaultCredentials,
}

impl AuthType {
    /// The value Gemini expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GeminiApiKey => "gemini-api-key",
            Self::VertexAi => "vertex-ai",
            Self::LoginWithGoogle => "oauth-personal",
            Self::ComputeDefaultCredentials => "compute-default-credentials",
        }
    }
}

/// The construction options of a [`GeminiDriver`](crate::GeminiDriver), and its dialect.
///
/// Binary, model, limits and the minimum version are the [`CommonOptions`](driver_cli::CommonOptions) every CLI driver
/// has (`use driver_gemini::CommonOptions` for their builder methods); the total timeout
/// also bounds the wait for another turn of the same namespace to end (see the
/// [crate docs](crate)). Model, endpoint, auth type and MCP trust are part of the driver's
/// config fingerprint: changing them makes stored Threads incompatible. The key, binary,
/// limits and the offline switch are not. `Debug` never shows the key.
///
/// ```
/// use driver_gemini::{AuthType, CommonOptions, GeminiOptions};
/// use secrecy::SecretString;
///
/// let options = GeminiOptions::new()
///     .with_binary("/opt/gemini/bin/gemini")
///     .with_model("gemini-2.5-pro")
///     .with_base_url("https://llm-gateway.internal")
///     .with_api_key(SecretString::from("AIza-…"));
/// assert_eq!(options.model(), Some("gemini-2.5-pro"));
/// assert_eq!(options.auth_type(), Some(AuthType::GeminiApiKey));
/// assert!(!format!("{options:?}").contains("AIza"));
/// ```
#[derive(Debug, Clone)]
pub struct GeminiOptions {
    pub(crate) cli: CliOptions,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<SecretString>,
    pub(crate) auth_type: Option<AuthType>,
    pub(crate) trust_mcp_servers: bool,
    pub(crate) offline: bool,
}

impl Default for GeminiOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl GeminiOptions {
    /// Defaults: binary `gemini` from `PATH`, Gemini's default model (`auto`, which adds a
    /// routing request before every turn), Google's endpoint, no key and no auth type (the
    /// namespace's own `settings.json`, else Gemini's detection), the request's MCP servers
    /// trusted, offline switches on, the default [`Limits`](driver_process::command::Limits) and
    /// [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new("gemini", MINIMUM_VERSION),
            base_url: None,
            api_key: None,
            auth_type: None,
            trust_mcp_servers: true,
            offline: true,
        }
    }

    /// The Gemini API endpoint (`GOOGLE_GEMINI_BASE_URL`): a host gateway, or the test kit's
    /// loopback mock.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The Gemini API key. It reaches Gemini only through its environment
    /// (`GEMINI_API_KEY`), never argv or a file, and selects [`AuthType::GeminiApiKey`]
    /// unless [`with_auth_type`](Self::with_auth_type) says otherwise.
    pub fn with_api_key(mut self, key: SecretString) -> Self {
        self.api_key = Some(key);
        self
    }

    /// The auth type written to `settings.json`, for credentials that come from the runtime
    /// environment rather than [`with_api_key`](Self::with_api_key).
    pub fn with_auth_type(mut self, auth_type: AuthType) -> Self {
        self.auth_type = Some(auth_type);
        self
    }

    /// Whether the request's MCP servers are written with `"trust": true` (the default), so
    /// their tools run without a confirmation nobody can give in `-p` mode. Without it,
    /// Gemini's policy engine decides, and in `-p` mode that usually means the call is
    /// refused.
    pub fn with_trust_mcp_servers(mut self, trust: bool) -> Self {
        self.trust_mcp_servers = trust;
        self
    }

    /// Whether Gemini's usage statistics are switched off (`privacy.usageStatisticsEnabled:
    /// false`, the default). With them on, Gemini looks up and contacts Google's statistics
    /// endpoint on every run. Not part of the config fingerprint.
    pub fn with_offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }

    /// The endpoint.
    pub fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }

    /// The auth type the driver writes: the explicit one, else [`AuthType::GeminiApiKey`]
    /// when a key is set, else none.
    pub fn auth_type(&self) -> Option<AuthType> {
        self.auth_type
            .or(self.api_key.as_ref().map(|_| AuthType::GeminiApiKey))
    }

    /// The settings the driver lays over the namespace's `settings.json` for `request`:
    /// environment-variable names, never values. A dry run: nothing is written.
    ///
    /// # Errors
    /// [`ConfigError`] (field `mcp`) for MCP servers that cannot be written (see the
    /// [crate docs](crate)).
    pub fn settings_json(&self, request: &Request) -> Result<serde_json::Value, ConfigError> {
        let plan = SettingsPlan {
            auth_type: self.auth_type().map(AuthType::as_str),
            offline: self.offline,
            trust: self.trust_mcp_servers,
            instructions: request.instructions.is_some(),
        };
        config::settings(&request.mcp, &request.mcp_secret_names(), plan)
            .map_err(|e| ConfigError::invalid("mcp", e.rule()))
    }
}
