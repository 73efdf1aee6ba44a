//! The typed construction options of the Claude Code driver.

use driver_cli::CliOptions;
use driver_process::version::Version;

/// The oldest `claude` release this driver is tested with.
pub const MINIMUM_VERSION: Version = Version::new(2, 1, 197);

/// The construction options of a [`ClaudeCodeDriver`](crate::ClaudeCodeDriver).
///
/// It is also the driver's [`Dialect`](driver_cli::Dialect): `ClaudeCodeDriver` is
/// `CliDriver<ClaudeCodeOptions>`. The binary, model, limits and minimum version are set
/// through [`CommonOptions`](driver_cli::CommonOptions).
///
/// Everything here except the binary path, the limits, the retries and the offline switch is
/// part of the driver's config fingerprint: changing it makes stored Threads incompatible.
///
/// What Claude Code may do without asking is the request's
/// [`PermissionPolicy`](driver_spi::PermissionPolicy), not an option: the dialect maps it to
/// `--permission-mode`, `--allowedTools` and `--disallowedTools` (see `docs/drivers.md`).
///
/// ```
/// use driver_claude_code::{ClaudeCodeOptions, CommonOptions};
///
/// let options = ClaudeCodeOptions::new()
///     .with_model("claude-sonnet-4-5")
///     .with_base_url("https://llm-gateway.internal");
/// assert_eq!(options.model(), Some("claude-sonnet-4-5"));
/// ```
#[derive(Debug, Clone)]
pub struct ClaudeCodeOptions {
    pub(crate) cli: CliOptions,
    pub(crate) base_url: Option<String>,
    pub(crate) max_turns: Option<u32>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) offline: bool,
}

impl Default for ClaudeCodeOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ClaudeCodeOptions {
    /// Defaults: binary `claude` from `PATH`, Claude Code's default model, Anthropic's endpoint, no turn limit, offline switches on, the
    /// default [`Limits`](driver_process::command::Limits) and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new("claude", MINIMUM_VERSION),
            base_url: None,
            max_turns: None,
            max_retries: None,
            offline: true,
        }
    }

    /// The Anthropic API endpoint (`ANTHROPIC_BASE_URL`): a host gateway, or the test kit's
    /// loopback mock. The key comes from the runtime environment's secrets
    /// (`ANTHROPIC_API_KEY`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The most agentic turns one run may take (`--max-turns`).
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// How often Claude Code retries a failed model request (`CLAUDE_CODE_MAX_RETRIES`;
    /// Claude Code's default of 10, about three minutes of back-off, when unset). Not part of
    /// the config fingerprint.
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = Some(retries);
        self
    }

    /// Whether Claude Code's non-essential traffic (telemetry, error reports, update checks)
    /// is switched off (the default). Not part of the config fingerprint.
    pub fn with_offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }
}
