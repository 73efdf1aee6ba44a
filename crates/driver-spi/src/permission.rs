//! What a runtime may do without asking: the [`PermissionPolicy`] of a run.

/// How a runtime may take one kind of [`Action`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Permission {
    /// Never: the runtime is not offered the action, or its attempts fail without a request.
    Deny,
    /// Only with the host's consent: each attempt becomes an
    /// [`ApprovalRequest`](crate::ApprovalRequest) the host approves or denies.
    Ask,
    /// Without asking.
    Allow,
}

impl Permission {
    /// `deny`, `ask` or `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Ask => "ask",
            Self::Allow => "allow",
        }
    }
}

impl std::str::FromStr for Permission {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deny" => Ok(Self::Deny),
            "ask" => Ok(Self::Ask),
            "allow" => Ok(Self::Allow),
            _ => Err(ParsePolicyError::Permission),
        }
    }
}

/// The kinds of action a [`PermissionPolicy`] governs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Action {
    /// Creating, editing or deleting files in the workspace, by a file tool or a command.
    Write,
    /// Running shell commands.
    Commands,
    /// Network access from commands and the runtime's own web tools (the model API and the
    /// request's MCP servers are not governed by this).
    Network,
    /// Calling the tools of the request's MCP servers.
    Mcp,
}

impl Action {
    /// Every action, in policy order.
    pub const ALL: [Action; 4] = [Self::Write, Self::Commands, Self::Network, Self::Mcp];

    /// `write`, `commands`, `network` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Commands => "commands",
            Self::Network => "network",
            Self::Mcp => "mcp",
        }
    }
}

impl std::str::FromStr for Action {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or(ParsePolicyError::Action)
    }
}

/// What the runtime of a run may do without asking, what it must ask the host about, and
/// what it may never do: one [`Permission`] per [`Action`].
///
/// Reading the workspace is always allowed: every runtime reads its working directory.
///
/// The default is the conservative policy every driver enforced before policies existed:
/// the request's MCP tools allowed, writes, commands and network denied. A host widens it
/// with [`allow`](Self::allow) and [`ask`](Self::ask).
///
/// # Enforcement
/// The policy is enforced by the runtime (its sandbox, permission mode and tool lists); a
/// driver maps it to its CLI's own flags and refuses, with
/// [`Unsupported::Permission`](crate::Unsupported::Permission), a policy its CLI cannot
/// enforce. `docs/drivers.md` lists what each runtime enforces.
///
/// # Resume
/// The policy is part of a Thread's compatibility fingerprint: resuming under another
/// policy is a semantic change, refused before the driver runs. The default policy adds
/// nothing to the fingerprint, so Threads stored before policies existed keep resuming.
///
/// ```
/// use driver_spi::{Action, Permission, PermissionPolicy};
///
/// let policy = PermissionPolicy::default()
///     .allow(Action::Commands)
///     .ask(Action::Write);
/// assert_eq!(policy.get(Action::Write), Permission::Ask);
/// assert_eq!(policy.get(Action::Network), Permission::Deny);
/// assert!(policy.asks());
/// assert_eq!(policy.to_string(), "write=ask,commands=allow,network=deny,mcp=allow");
/// assert_eq!("write=ask,commands=allow".parse::<PermissionPolicy>(), Ok(policy));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PermissionPolicy {
    /// Workspace writes.
    pub write: Permission,
    /// Shell commands.
    pub commands: Permission,
    /// Network access from commands and web tools.
    pub network: Permission,
    /// The request's MCP tools.
    pub mcp: Permission,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PermissionPolicy {
    /// The default policy (see the type's docs): the request's MCP tools allowed; writes,
    /// commands and network denied.
    pub const DEFAULT: Self = Self {
        write: Permission::Deny,
        commands: Permission::Deny,
        network: Permission::Deny,
        mcp: Permission::Allow,
    };

    /// Everything allowed without asking: for runtimes inside an external sandbox only.
    pub const ALLOW_ALL: Self = Self {
        write: Permission::Allow,
        commands: Permission::Allow,
        network: Permission::Allow,
        mcp: Permission::Allow,
    };

    /// The default policy ([`DEFAULT`](Self::DEFAULT)).
    pub fn new() -> Self {
        Self::DEFAULT
    }

    /// [`ALLOW_ALL`](Self::ALLOW_ALL).
    pub fn allow_all() -> Self {
        Self::ALLOW_ALL
    }

    /// The permission for an action.
    pub fn get(&self, action: Action) -> Permission {
        match action {
            Action::Write => self.write,
            Action::Commands => self.commands,
            Action::Network => self.network,
            Action::Mcp => self.mcp,
        }
    }

    /// Sets the permission for an action.
    pub fn with(mut self, action: Action, permission: Permission) -> Self {
        *match action {
            Action::Write => &mut self.write,
            Action::Commands => &mut self.commands,
            Action::Network => &mut self.network,
            Action::Mcp => &mut self.mcp,
        } = permission;
        self
    }

    /// Allows an action without asking.
    pub fn allow(self, action: Action) -> Self {
        self.with(action, Permission::Allow)
    }

    /// Makes an action ask the host first.
    pub fn ask(self, action: Action) -> Self {
        self.with(action, Permission::Ask)
    }

    /// Forbids an action.
    pub fn deny(self, action: Action) -> Self {
        self.with(action, Permission::Deny)
    }

    /// Whether any action asks the host (so the driver must deliver approval requests).
    pub fn asks(&self) -> bool {
        Action::ALL.iter().any(|a| self.get(*a) == Permission::Ask)
    }

    /// For a runtime that enforces only some whole policies: the position of `self` among
    /// `supported`.
    ///
    /// # Errors
    /// [`Unsupported::Permission`](crate::Unsupported::Permission) naming the first action
    /// whose permission differs from the first supported policy's (the default's, usually).
    ///
    /// ```
    /// use driver_spi::{Action, Permission, PermissionPolicy, Unsupported};
    ///
    /// let supported = [PermissionPolicy::default(), PermissionPolicy::allow_all()];
    /// assert_eq!(PermissionPolicy::allow_all().one_of(&supported), Ok(1));
    /// let writes = PermissionPolicy::default().allow(Action::Write);
    /// assert_eq!(
    ///     writes.one_of(&supported),
    ///     Err(Unsupported::Permission { action: Action::Write, permission: Permission::Allow })
    /// );
    /// ```
    pub fn one_of(&self, supported: &[Self]) -> Result<usize, crate::Unsupported> {
        if let Some(i) = supported.iter().position(|p| p == self) {
            return Ok(i);
        }
        let base = supported.first().copied().unwrap_or_default();
        let action = Action::ALL
            .into_iter()
            .find(|a| self.get(*a) != base.get(*a))
            .unwrap_or(Action::Write);
        Err(crate::Unsupported::Permission {
            action,
            permission: self.get(action),
        })
    }

    /// Whether this is the default policy.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Display for PermissionPolicy {
    /// `write=…,commands=…,network=…,mcp=…`, which [`FromStr`](std::str::FromStr) reads
    /// back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, action) in Action::ALL.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}={}", action.as_str(), self.get(action).as_str())?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PermissionPolicy {
    type Err = ParsePolicyError;

    /// Comma-separated `action=permission` pairs over the default policy; empty is the
    /// default.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut policy = Self::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (action, permission) = pair.split_once('=').ok_or(ParsePolicyError::Pair)?;
            policy = policy.with(action.trim().parse()?, permission.trim().parse()?);
        }
        Ok(policy)
    }
}

/// Why a policy text did not parse. The text itself is not repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParsePolicyError {
    /// An item is not `action=permission`.
    #[error("expected action=permission")]
    Pair,
    /// An unknown action.
    #[error("unknown action (expected write, commands, network or mcp)")]
    Action,
    /// An unknown permission.
    #[error("unknown permission (expected deny, ask or allow)")]
    Permission,
}
