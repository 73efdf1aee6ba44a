//! The typed construction options of the Claude Code driver.

use driver_cli::{CliOptions, Version};

/// The oldest `claude` release this driver is tested with.
pub const MINIMUM_VERSION: Version = Version::new(2, 1, 197);

/// A Claude Code permission mode (`--permission-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermissionMode {
    /// `default`: tools that need permission are refused in `-p` mode unless allowed.
    Default,
    /// `acceptEdits`: file edits are accepted; other tools still need an allow rule.
    AcceptEdits,
    /// `plan`: the model may read and plan, not change anything.
    Plan,
    /// `dontAsk`: every tool that is not allowed is denied at once instead of waiting for an
    /// answer nobody can give in `-p` mode.
    DontAsk,
}

impl PermissionMode {
    /// The value Claude Code expects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::DontAsk => "dontAsk",
        }
    }
}

/// Which tools may run without asking, in a `-p` run that nobody can answer.
///
/// Claude Code refuses `--dangerously-skip-permissions` when it runs as root, so the safe
/// default allows exactly the request's MCP servers by name (`--allowedTools mcp__<server>`)
/// and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermissionPolicy {
    /// Allow every tool of the request's MCP servers (`--allowedTools mcp__<server>` for each
    /// server), plus [`ClaudeCodeOptions::with_allowed_tools`]; everything else follows
    /// `mode`. The default, with [`PermissionMode::DontAsk`].
    AllowRequestServers {
        /// The permission mode for all other tools.
        mode: PermissionMode,
    },
    /// Only the explicitly allowed tools ([`ClaudeCodeOptions::with_allowed_tools`]); MCP
    /// tools of the request are not allowed by name.
    Explicit {
        /// The permission mode for all other tools.
        mode: PermissionMode,
    },
    /// `--dangerously-skip-permissions`: every tool runs without asking, shell included.
    /// Claude Code refuses it as root; [`validate_config`](driver_spi::Driver::validate_config)
    /// reports that up front. Only inside an external sandbox.
    DangerouslySkipPermissions,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self::AllowRequestServers {
            mode: PermissionMode::DontAsk,
        }
    }
}

impl PermissionPolicy {
    /// A stable name, for fingerprints.
    pub(crate) fn fingerprint_name(&self) -> String {
        match self {
            Self::AllowRequestServers { mode } => {
                format!("allow_request_servers/{}", mode.as_str())
            }
            Self::Explicit { mode } => format!("explicit/{}", mode.as_str()),
            Self::DangerouslySkipPermissions => "dangerously_skip_permissions".to_owned(),
        }
    }
}

/// The construction options of a [`ClaudeCodeDriver`](crate::ClaudeCodeDriver).
///
/// It is also the driver's [`Dialect`](driver_cli::Dialect): `ClaudeCodeDriver` is
/// `CliDriver<ClaudeCodeOptions>`. The binary, model, limits and minimum version are set
/// through [`CommonOptions`](driver_cli::CommonOptions).
///
/// Everything here except the binary path, the limits, the retries and the offline switch is
/// part of the driver's config fingerprint: changing it makes stored Threads incompatible.
///
/// ```
/// use driver_claude_code::{ClaudeCodeOptions, CommonOptions, PermissionMode, PermissionPolicy};
///
/// let options = ClaudeCodeOptions::new()
///     .with_model("claude-sonnet-4-5")
///     .with_permissions(PermissionPolicy::AllowRequestServers { mode: PermissionMode::AcceptEdits })
///     .with_allowed_tools(["Read", "Grep"])
///     .with_base_url("https://llm-gateway.internal");
/// assert_eq!(options.model(), Some("claude-sonnet-4-5"));
/// ```
#[derive(Debug, Clone)]
pub struct ClaudeCodeOptions {
    pub(crate) cli: CliOptions,
    pub(crate) permissions: PermissionPolicy,
    pub(crate) allowed_tools: Vec<String>,
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
    /// Defaults: binary `claude` from `PATH`, Claude Code's default model, the request's MCP
    /// servers allowed by name, Anthropic's endpoint, no turn limit, offline switches on, the
    /// default [`Limits`](driver_cli::Limits) and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new("claude", MINIMUM_VERSION),
            permissions: PermissionPolicy::default(),
            allowed_tools: Vec::new(),
            base_url: None,
            max_turns: None,
            max_retries: None,
            offline: true,
        }
    }

    /// The permission policy.
    pub fn with_permissions(mut self, permissions: PermissionPolicy) -> Self {
        self.permissions = permissions;
        self
    }

    /// More tools allowed without asking (`--allowedTools`), for example `Read` or
    /// `Bash(git diff:*)`.
    pub fn with_allowed_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools.extend(tools.into_iter().map(Into::into));
        self
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
