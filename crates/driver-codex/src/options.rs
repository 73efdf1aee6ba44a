//! [`CodexOptions`]: the typed construction options of the Codex driver, which are also its
//! [`Dialect`](driver_cli::Dialect) (see `dialect.rs`).

use driver_cli::CliOptions;
use driver_process::version::Version;

/// The oldest `codex` release this driver is tested with; older ones are refused by the version
/// probe (their `exec --json` events and `-c` keys differ).
pub const MINIMUM_VERSION: Version = Version::new(0, 169, 0);

/// How hard the model thinks (`model_reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`.
    High,
    /// `xhigh`.
    XHigh,
}

impl ReasoningEffort {
    /// The value Codex expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }
}

/// The Responses or Chat wire API of a model provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireApi {
    /// The OpenAI Responses API (`POST <base>/responses`). The default.
    #[default]
    Responses,
}

impl WireApi {
    /// The value Codex expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Responses => "responses",
        }
    }
}

/// A model provider Codex talks to instead of its built-in OpenAI one: a host gateway, or the
/// test kit's loopback mock.
///
/// The key is not here: Codex reads it from the environment variable named by
/// [`env_key`](Self::env_key), which the host injects as a secret into the
/// [`RuntimeEnv`](runtime_env::RuntimeEnv) (or the request's secret env).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelProvider {
    pub(crate) id: String,
    pub(crate) base_url: String,
    pub(crate) wire_api: WireApi,
    pub(crate) env_key: Option<String>,
    pub(crate) request_max_retries: Option<u32>,
    pub(crate) stream_max_retries: Option<u32>,
}

impl ModelProvider {
    /// A provider named `id` (a config key: ASCII letters, digits, `-` and `_`) at `base_url`
    /// (for example `http://127.0.0.1:8080/v1`), speaking the Responses API.
    pub fn new(id: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            base_url: base_url.into(),
            wire_api: WireApi::Responses,
            env_key: None,
            request_max_retries: None,
            stream_max_retries: None,
        }
    }

    /// Sets the wire API.
    pub fn with_wire_api(mut self, wire_api: WireApi) -> Self {
        self.wire_api = wire_api;
        self
    }

    /// Names the environment variable that carries the provider's API key.
    pub fn with_env_key(mut self, env_key: impl Into<String>) -> Self {
        self.env_key = Some(env_key.into());
        self
    }

    /// How often Codex retries a failed HTTP request to the provider
    /// (`request_max_retries`; Codex's default when unset). Not part of the config
    /// fingerprint: it changes how long a failure takes, not what a session means.
    pub fn with_request_max_retries(mut self, retries: u32) -> Self {
        self.request_max_retries = Some(retries);
        self
    }

    /// How often Codex reconnects a dropped response stream (`stream_max_retries`; Codex's
    /// default when unset). Not part of the config fingerprint.
    pub fn with_stream_max_retries(mut self, retries: u32) -> Self {
        self.stream_max_retries = Some(retries);
        self
    }

    /// The provider id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The name of the key's environment variable, if any.
    pub fn env_key(&self) -> Option<&str> {
        self.env_key.as_deref()
    }
}

/// The construction options of a [`CodexDriver`](crate::CodexDriver), and its
/// [`Dialect`](driver_cli::Dialect).
///
/// The binary, model, limits and minimum version are set with the [`CommonOptions`](driver_cli::CommonOptions) methods
/// (re-exported by this crate). Everything here except the binary path, the
/// [limits](driver_cli::CommonOptions::with_limits), the connection retries and the provider's retry
/// settings is part of the driver's config fingerprint: changing it makes stored Threads
/// incompatible.
///
/// ```
/// use driver_codex::{CodexOptions, CommonOptions, ModelProvider, ReasoningEffort};
///
/// let options = CodexOptions::new()
///     .with_binary("/opt/codex/bin/codex")
///     .with_model("gpt-5.1-codex")
///     .with_reasoning_effort(ReasoningEffort::High)
///     .with_model_provider(ModelProvider::new("gateway", "https://llm.internal/v1").with_env_key("GATEWAY_KEY"));
/// assert_eq!(options.model(), Some("gpt-5.1-codex"));
/// ```
#[derive(Debug, Clone)]
pub struct CodexOptions {
    pub(crate) cli: CliOptions,
    pub(crate) reasoning_effort: Option<ReasoningEffort>,
    pub(crate) provider: Option<ModelProvider>,
    pub(crate) hermetic_config: bool,
    pub(crate) skip_git_repo_check: bool,
    pub(crate) unbounded_connection_retries: bool,
}

impl Default for CodexOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl CodexOptions {
    /// Defaults: binary `codex` from `PATH`, Codex's default model and effort, Codex's
    /// built-in provider, a hermetic config
    /// (the namespace's `config.toml` is not loaded), git repository check skipped, bounded
    /// connection retries, the default [`Limits`](driver_process::command::Limits) and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new("codex", MINIMUM_VERSION),
            reasoning_effort: None,
            provider: None,
            hermetic_config: true,
            skip_git_repo_check: true,
            unbounded_connection_retries: false,
        }
    }

    /// The reasoning effort.
    pub fn with_reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.reasoning_effort = Some(effort);
        self
    }

    /// A model provider instead of Codex's built-in one.
    pub fn with_model_provider(mut self, provider: ModelProvider) -> Self {
        self.provider = Some(provider);
        self
    }

    /// A model provider instead of Codex's built-in one: the name of
    /// [`with_model_provider`](Self::with_model_provider) before issue 40.
    #[deprecated(
        note = "use `CodexOptions::with_model_provider`: \"provider\" alone also means a run-service provider"
    )]
    pub fn with_provider(self, provider: ModelProvider) -> Self {
        self.with_model_provider(provider)
    }

    /// Whether Codex ignores the namespace's `$CODEX_HOME/config.toml` (`--ignore-user-config`,
    /// the default). Hermetic runs use only what the driver passes, so nothing outside the
    /// config fingerprint changes what a resumed session sees. Turn it off to let a
    /// hand-written `config.toml` in the namespace apply (its content is then not part of
    /// Thread compatibility).
    pub fn with_hermetic_config(mut self, hermetic: bool) -> Self {
        self.hermetic_config = hermetic;
        self
    }

    /// Whether `--skip-git-repo-check` is passed (the default): without it Codex refuses to
    /// run outside a git repository.
    pub fn with_skip_git_repo_check(mut self, skip: bool) -> Self {
        self.skip_git_repo_check = skip;
        self
    }

    /// Whether Codex may retry an unreachable model endpoint forever (its
    /// `unbounded_connection_retries` feature). Off by default: Codex's "Reconnecting..."
    /// events would otherwise keep the idle timeout from firing, and a run against a dead
    /// endpoint would last until the total timeout. Not part of the config fingerprint.
    pub fn with_unbounded_connection_retries(mut self, unbounded: bool) -> Self {
        self.unbounded_connection_retries = unbounded;
        self
    }
}
