//! Concrete service references: what a provider hands to one run.

use std::collections::BTreeMap;
use std::fmt;

use secrecy::SecretString;

use crate::McpServer;

/// Whether a service outlives the run that attached it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Shared across runs (a long-lived server the provider keeps).
    #[default]
    Shared,
    /// Created for one run and released when the run detaches.
    Ephemeral,
}

/// One concrete service attached to a run: where it is right now and how to reach it.
///
/// Everything here is *materialization*: it is delivered exactly to the driver on every
/// invocation. Whether a Thread may resume across a change of these values is decided by the
/// attachment's [`RunServiceCompatibility`](crate::RunServiceCompatibility), never by them.
///
/// Secret values live only in [`secret_env`](Self::secret_env); serializing a `ServiceRef`
/// writes the secret env *names* only.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ServiceRef {
    /// Stable id of the service within the run, for example `agent-ui`.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Current endpoint URL, if the service is reached over the network.
    pub url: Option<String>,
    /// Command that runs the service, if it is a process.
    pub command: Option<String>,
    /// Arguments of [`command`](Self::command).
    pub args: Vec<String>,
    /// Working directory of the service process.
    pub cwd: Option<String>,
    /// Current port, if any.
    pub port: Option<u16>,
    /// Free-form, non-secret metadata.
    pub metadata: BTreeMap<String, String>,
    /// Whether the service outlives the run.
    pub lifecycle: Lifecycle,
    /// Service-reuse correlation key for runtime managers. It is *not* a resume identity.
    pub reuse_key: Option<String>,
    /// The MCP server this service exposes to the agent runtime, if any.
    pub mcp: Option<McpServer>,
    /// Secret environment bindings the runtime needs to reach the service.
    #[serde(serialize_with = "crate::service::serialize_env_names")]
    pub secret_env: Vec<EnvBinding>,
}

impl ServiceRef {
    /// A service with this id and name and nothing else set.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            url: None,
            command: None,
            args: Vec::new(),
            cwd: None,
            port: None,
            metadata: BTreeMap::new(),
            lifecycle: Lifecycle::default(),
            reuse_key: None,
            mcp: None,
            secret_env: Vec::new(),
        }
    }

    /// Sets the URL.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Sets the command and its arguments.
    pub fn with_command<I, S>(mut self, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.command = Some(command.into());
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the port.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Adds one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Sets the lifecycle.
    pub fn with_lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// Sets the reuse key.
    pub fn with_reuse_key(mut self, reuse_key: impl Into<String>) -> Self {
        self.reuse_key = Some(reuse_key.into());
        self
    }

    /// Sets the MCP declaration.
    pub fn with_mcp(mut self, mcp: McpServer) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Adds a secret environment binding.
    pub fn with_secret_env(mut self, binding: EnvBinding) -> Self {
        self.secret_env.push(binding);
        self
    }
}

pub(crate) fn serialize_env_names<S: serde::Serializer>(
    bindings: &[EnvBinding],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(bindings.iter().map(EnvBinding::name))
}

/// An environment variable whose value is a secret, such as a bearer token.
///
/// The value is a [`SecretString`]: `Debug` shows `[REDACTED]`, it cannot be serialized, and
/// it is read only through [`secrecy::ExposeSecret`] where a child process or request needs it.
///
/// `EnvBinding` does not implement `Serialize`:
///
/// ```compile_fail
/// fn needs_serialize<T: serde::Serialize>() {}
/// needs_serialize::<run_service::EnvBinding>();
/// ```
#[derive(Clone)]
pub struct EnvBinding {
    name: String,
    value: SecretString,
}

impl EnvBinding {
    /// A binding of `name` to a secret `value`.
    pub fn new(name: impl Into<String>, value: impl Into<SecretString>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }

    /// The variable name (not secret).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The secret value; call [`secrecy::ExposeSecret::expose_secret`] only at the boundary
    /// that hands it to a process or request.
    pub fn value(&self) -> &SecretString {
        &self.value
    }
}

impl fmt::Debug for EnvBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvBinding")
            .field("name", &self.name)
            .field("value", &"[REDACTED]")
            .finish()
    }
}

impl PartialEq for EnvBinding {
    /// Compares names only: secret values are never compared outside a process signature.
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
