//! The errors a Thread run can end with, and the self-explaining incompatibility.

use std::fmt;

use compat_fingerprint::{Change, ComponentChange};
use driver_spi::{FailureKind, ResumeRejectReason};
use run_service::ValidationError;
use thread_store::StoreError;

/// Why a stored Thread may not be resumed: which components of its compatibility fingerprint
/// changed. Components are fixed names (`model`, `driver_config`, …) or digests
/// (`attachment.semantic:1bd2edb8788d`, `mcp:…`): never raw provider strings or secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incompatibility {
    changes: Vec<ComponentChange>,
    scheme: Option<(u32, u32)>,
}

impl Incompatibility {
    pub(crate) fn components(changes: Vec<ComponentChange>) -> Self {
        Self {
            changes,
            scheme: None,
        }
    }

    pub(crate) fn scheme(stored: u32, current: u32) -> Self {
        Self {
            changes: Vec::new(),
            scheme: Some((stored, current)),
        }
    }

    /// The components that differ between the stored Thread and this run, sorted by name.
    pub fn changes(&self) -> &[ComponentChange] {
        &self.changes
    }

    /// `(stored, current)` when the stored record was written under another fingerprint scheme.
    pub fn scheme_change(&self) -> Option<(u32, u32)> {
        self.scheme
    }

    /// Whether a component with exactly this name changed, was added or was removed.
    pub fn names(&self, component: &str) -> bool {
        self.changes.iter().any(|c| c.name.as_str() == component)
    }

    /// Whether a component whose name starts with `prefix` changed (for example
    /// `attachment.semantic:`).
    pub fn names_prefix(&self, prefix: &str) -> bool {
        self.changes
            .iter()
            .any(|c| c.name.as_str().starts_with(prefix))
    }
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((stored, current)) = self.scheme {
            return write!(
                f,
                "fingerprint scheme changed (stored v{stored}, current v{current}) and no migration record covers it"
            );
        }
        if self.changes.is_empty() {
            return f.write_str(
                "the stored fingerprint differs and its component breakdown names no change",
            );
        }
        f.write_str("changed components: ")?;
        for (i, c) in self.changes.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let what = match c.change {
                Change::Added => "added",
                Change::Removed => "removed",
                _ => "changed",
            };
            write!(f, "{} ({what})", c.name)?;
        }
        Ok(())
    }
}

/// How a Thread run failed. Callers branch on the variant; messages never contain a secret
/// value or a provider-supplied identity string.
///
/// Error chaining: `Display` alone says what went wrong and what to fix, for a host that
/// prints only `to_string()`. A variant that wraps another error is either `transparent` (it
/// adds nothing: its message and source are the inner error's) or names its own layer and
/// shows the inner error's message after it; the inner error is then not returned from
/// [`source`](std::error::Error::source), so a reporter that walks the chain (`agentctl`,
/// anyhow, eyre) still prints each cause once. The inner errors shown are the workspace's
/// own, whose messages name values by digest, never by value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadError {
    /// The agent has no thread store, so Threads cannot be used.
    #[error("this agent has no thread store; build it with a store to use Threads")]
    StoreRequired,
    /// Nothing is stored under the key (resume-only, fork parent, or checkpoint lookup).
    #[error("no thread is stored under key {key:?}")]
    NotFound {
        /// The Thread key.
        key: String,
    },
    /// Another run holds the Thread's lease.
    #[error("thread {key:?} is busy: another run holds its lease")]
    Busy {
        /// The Thread key.
        key: String,
    },
    /// The stored conversation may not continue under the current configuration. Nothing ran.
    #[error("thread {key:?} is incompatible with the current configuration: {incompatibility}")]
    Incompatible {
        /// The Thread key.
        key: String,
        /// What changed.
        incompatibility: Incompatibility,
    },
    /// The Thread's lease expired or was taken over while the run was in flight; nothing was
    /// persisted.
    #[error("thread {key:?} lost its lease during the run; nothing was persisted")]
    LeaseLost {
        /// The Thread key.
        key: String,
    },
    /// A record exists but holds no resumable checkpoint.
    #[error("thread {key:?} has no resumable checkpoint")]
    CheckpointMissing {
        /// The Thread key.
        key: String,
    },
    /// The Thread belongs to another credential namespace than this agent's (or this agent
    /// has none and the Thread has an owner). Refused before the driver runs: nothing ran,
    /// nothing was archived or written, and the run's lease was released. Keys are global in
    /// one store, so a namespace cannot use a key another namespace owns (see
    /// `docs/threads.md`, "Ownership").
    #[error(
        "thread {key:?} belongs to another credential namespace (owner {owner}); nothing ran and nothing changed"
    )]
    Foreign {
        /// The Thread key.
        key: String,
        /// A short digest of the owning namespace (never its name: it names another tenant).
        owner: compat_fingerprint::ShortDigest,
    },
    /// The Thread was stored without an owning namespace (before ownership was recorded, or
    /// by an agent without one), and this agent, which has a namespace, could not claim it: a
    /// namespaced agent may only resume such a Thread, which claims it for its namespace when
    /// the provider resumes the session; it never starts it over, archives or forks it.
    /// Nothing was written (see `docs/threads.md`, "Ownership").
    #[error(
        "thread {key:?} has no owning namespace and this run could not claim it: {reason}; nothing changed"
    )]
    Unclaimed {
        /// The Thread key.
        key: String,
        /// Why the run could not claim it (a fixed text).
        reason: &'static str,
    },
    /// A fork target key is already taken.
    #[error("thread {key:?} already exists")]
    AlreadyExists {
        /// The Thread key.
        key: String,
    },
    /// The driver refused to continue the stored session (unknown, expired, guard mismatch).
    #[error("the driver rejected the resume: {reason}")]
    ResumeRejected {
        /// Why.
        reason: ResumeRejectReason,
    },
    /// A run-service attachment is invalid. Nothing launched; every provider was detached.
    #[error("invalid run-service attachment: {0}")]
    InvalidAttachment(ValidationError),
    /// A run service names a network endpoint the agent's
    /// [`EndpointPolicy`](crate::EndpointPolicy) refuses. Nothing launched; every provider was
    /// detached.
    #[error("a run service names an endpoint the endpoint policy refuses (url {endpoint})")]
    EndpointRefused {
        /// A short digest of the refused URL (never the URL: it may carry provider identity),
        /// or, for a secret binding that carries an endpoint (a model base URL, a proxy), of
        /// the binding's variable name (never its value).
        endpoint: compat_fingerprint::ShortDigest,
    },
    /// A run-service provider (a [`RunServiceProvider`](run_service::RunServiceProvider) of
    /// the agent, not the model provider) failed to attach. Providers attached before it were
    /// detached. Named `Provider` before issue 40.
    #[error("run-service provider {index} failed to attach: {message}")]
    RunService {
        /// The run-service provider's position in the agent's list of them.
        index: usize,
        /// The run-service provider's message, with secrets redacted.
        message: String,
    },
    /// The driver failed. The message is redacted; for a runtime whose program could not be
    /// started ([`RunFailure::program`](driver_spi::RunFailure::program)) it names the
    /// program's path and what to do about it.
    #[error("the run failed ({kind}): {message}")]
    Driver {
        /// The failure class.
        kind: FailureKind,
        /// Redacted detail.
        message: String,
        /// Whether running again may succeed, when the driver says
        /// ([`RunFailure::retryable`](driver_spi::RunFailure::retryable)): a worker driver
        /// whose worker died says `true` when no tool call was in flight, `false` when one
        /// was. Nothing of a failed run is persisted either way.
        retryable: Option<bool>,
    },
    /// The run was cancelled (the agent closed, or the stream was dropped).
    #[error("the run was cancelled")]
    Cancelled,
    /// The agent is closed.
    #[error("the agent is closed")]
    Closed,
    /// The thread key is not usable.
    #[error("invalid thread key: {reason}")]
    InvalidKey {
        /// Why.
        reason: &'static str,
    },
    /// The driver lacks a capability the Thread needs: Threads need session resume with a
    /// session codec ([`Unsupported::Resume`](driver_spi::Unsupported::Resume)), forks need
    /// fork ([`Unsupported::Fork`](driver_spi::Unsupported::Fork)); or the driver refused
    /// what its runtime cannot honour before launching it (a permission, such as
    /// [`Unsupported::PermissionNeeds`](driver_spi::Unsupported::PermissionNeeds), or an
    /// output schema, [`Unsupported::StrictOutputSchema`](driver_spi::Unsupported::StrictOutputSchema)).
    /// Nothing ran.
    #[error(transparent)]
    Unsupported(#[from] driver_spi::Unsupported),
    /// The run's final answer is not the data its output schema asks for (or the schema is
    /// not a valid JSON Schema, before anything ran). Nothing was persisted.
    // Shown in the message, not as a source, so an error chain does not print it twice.
    #[error("structured output: {0}")]
    Output(crate::OutputError),
    /// The thread store failed.
    #[error("thread store error: {0}")]
    Store(StoreError),
}

impl From<ValidationError> for ThreadError {
    fn from(error: ValidationError) -> Self {
        Self::InvalidAttachment(error)
    }
}

impl From<crate::OutputError> for ThreadError {
    fn from(error: crate::OutputError) -> Self {
        Self::Output(error)
    }
}

impl ThreadError {
    /// The variant's name, for logs: it carries no key, message or value.
    pub(crate) fn class(&self) -> &'static str {
        match self {
            Self::StoreRequired => "store_required",
            Self::NotFound { .. } => "not_found",
            Self::Busy { .. } => "busy",
            Self::Incompatible { .. } => "incompatible",
            Self::LeaseLost { .. } => "lease_lost",
            Self::CheckpointMissing { .. } => "checkpoint_missing",
            Self::Foreign { .. } => "foreign",
            Self::Unclaimed { .. } => "unclaimed",
            Self::AlreadyExists { .. } => "already_exists",
            Self::ResumeRejected { .. } => "resume_rejected",
            Self::InvalidAttachment(_) => "invalid_attachment",
            Self::EndpointRefused { .. } => "endpoint_refused",
            Self::RunService { .. } => "run_service",
            Self::Driver { .. } => "driver",
            Self::Cancelled => "cancelled",
            Self::Closed => "closed",
            Self::InvalidKey { .. } => "invalid_key",
            Self::Unsupported(_) => "unsupported",
            Self::Output(_) => "output",
            Self::Store(_) => "store",
        }
    }

    /// The incompatibility, when this is [`ThreadError::Incompatible`].
    pub fn incompatibility(&self) -> Option<&Incompatibility> {
        match self {
            Self::Incompatible {
                incompatibility, ..
            } => Some(incompatibility),
            _ => None,
        }
    }
}

/// Building an [`Agent`](crate::Agent) failed. Nothing was started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The driver rejected its own construction config. `Display` is the config error's,
    /// which names the field and how to fix it (for example a runtime environment that does
    /// not serve the driver's runtime: `RuntimeEnvBuilder::runtimes`).
    #[error(transparent)]
    DriverConfig(#[from] driver_spi::ConfigError),
    /// A host-declared MCP server is invalid.
    #[error("invalid host MCP server: {0}")]
    HostMcp(ValidationError),
    /// The driver reports a credential namespace
    /// ([`Driver::credential_namespace`](driver_spi::Driver::credential_namespace)) that is
    /// not one (see `runtime_env::CredentialNamespace` for the grammar).
    #[error("the driver's credential namespace is invalid: {0}")]
    DriverNamespace(runtime_env::InvalidName),
    /// The builder's namespace ([`AgentBuilder::namespace`](crate::AgentBuilder::namespace))
    /// differs from the one the driver runs in: an agent's Threads belong to exactly one
    /// namespace. Both are named by a short digest.
    #[error("the agent's namespace (digest {builder}) differs from its driver's (digest {driver})")]
    NamespaceConflict {
        /// A short digest of the driver's namespace.
        driver: compat_fingerprint::ShortDigest,
        /// A short digest of the namespace given to the builder.
        builder: compat_fingerprint::ShortDigest,
    },
    /// The agent identity is empty or has control characters.
    #[error("agent identity must be non-empty text without control characters")]
    Identity,
    /// A skill was declared twice or with an empty name or revision.
    #[error("skills need unique, non-empty names and revisions")]
    Skill,
    #[cfg(feature = "tools")]
    /// A registered tool has no revision (or a blank one).
    #[error("tool {tool:?} has no revision")]
    ToolWithoutRevision {
        /// The tool name.
        tool: String,
    },
    #[cfg(feature = "tools")]
    /// Two registered tools share a name.
    #[error("two tools are named {tool:?}")]
    DuplicateTool {
        /// The shared name.
        tool: String,
    },
    #[cfg(feature = "tools")]
    /// A registered tool is invalid otherwise (name, revision format, schema).
    #[error("invalid tool: {0}")]
    InvalidTool(crate::tools::CatalogError),
}
