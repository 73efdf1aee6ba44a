//! The concrete invocation a driver receives: [`Request`] and its payloads.

use std::collections::BTreeMap;

use compat_fingerprint::Fingerprint;
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

use crate::{
    Approvals, OutputSchema, PermissionPolicy, PrewarmTicket, SessionContext, SteerReceiver,
    Steering,
};

/// One invocation of a driver: everything it needs, concrete and current.
///
/// # The current-request rule
/// A driver materializes **this** request on every turn, resumed or not: the MCP URLs,
/// bearer env-var names, secret env values, services, model, workspace and instructions it
/// finds here. It never reuses values remembered from an earlier turn or held by a live
/// runtime process; a persistent process whose [`ProcessSignature`](crate::ProcessSignature)
/// no longer matches is replaced before the prompt is sent. Whether the session may *continue*
/// is a separate question, answered by the checkpoint's guard (see
/// [`SessionGuard`](crate::SessionGuard)), which is built from the profile's
/// session-compatibility fingerprint and so survives an endpoint or credential rotation.
///
/// # Secrets
/// Secret values exist only as [`SecretString`](secrecy::SecretString)s inside [`EnvBinding`]s
/// ([`RuntimePayload::secret_env`] and each service's `secret_env`). `Debug` redacts them and
/// `Serialize` writes their names only; a driver reads a value with
/// [`ExposeSecret::expose_secret`](secrecy::ExposeSecret::expose_secret) only where it hands it to a child process.
///
/// The core builds requests with [`Request::new`] and the `with_*` methods:
///
/// ```
/// use compat_fingerprint::{Fingerprint, Kind};
/// use driver_spi::{ProfilePayload, Request, RuntimePayload, SessionContext};
/// use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
///
/// const PROFILE: Kind = Kind::new("example 2026-11-30 profile v1");
/// let exact = Fingerprint::of(PROFILE, |e| e.str("exact"));
/// let session = Fingerprint::of(PROFILE, |e| e.str("session"));
/// let url = "http://127.0.0.1:4101/mcp";
/// let mcp = McpServer::streamable_http("agent-ui", url).with_bearer_token_env("UI_TOKEN");
/// let service = ServiceRef::new("agent-ui", "Agent UI")
///     .with_url(url)
///     .with_mcp(mcp.clone())
///     .with_secret_env(EnvBinding::new("UI_TOKEN", "canary-secret"));
/// let request = Request::new(RunId::new("run-1"), "hello", ProfilePayload::new(exact, session))
///     .with_session(SessionContext::start())
///     .with_runtime(RuntimePayload::from_services([service]))
///     .with_mcp([mcp])
///     .with_model("gpt-test");
/// assert!(!format!("{request:?}").contains("canary-secret"));
/// assert_eq!(request.runtime.secret_env[0].name(), "UI_TOKEN");
/// ```
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct Request {
    /// The id of this run, unique per invocation.
    pub run_id: RunId,
    /// The user prompt for this turn.
    pub prompt: String,
    /// Which session to start, continue or fork.
    pub session: SessionContext,
    /// The run services, with their current URLs, and the secret env to inject.
    pub runtime: RuntimePayload,
    /// The effective MCP servers (host-declared and attachment-owned) with current URLs,
    /// commands and bearer env-var names.
    pub mcp: Vec<McpServer>,
    /// The profile identity: exact and session-compatibility fingerprints.
    pub profile: ProfilePayload,
    /// Workspace directory the runtime works in (its cwd), if the core assigned one.
    pub workspace: Option<String>,
    /// Model override for this invocation.
    pub model: Option<String>,
    /// Extra system instructions.
    pub instructions: Option<String>,
    /// Free-form, non-secret metadata from the host.
    pub metadata: BTreeMap<String, String>,
    /// What the runtime may do without asking; the driver enforces it through its CLI or
    /// refuses it as [`Unsupported`](crate::Unsupported).
    pub permissions: PermissionPolicy,
    /// Where approval requests go (never serialized).
    #[serde(skip)]
    pub approvals: Approvals,
    /// The JSON Schema the final answer must match, for this run only; delivered natively by
    /// a driver that declares [`structured_output`](crate::Capabilities::structured_output).
    pub output_schema: Option<OutputSchema>,
    /// The ticket of a pre-warm of this request ([`Driver::prewarm`](crate::Driver::prewarm)),
    /// whose process this run takes when its exact configuration is the pre-warm's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prewarmed: Option<PrewarmTicket>,
    /// The run's follow-ups, when the host may steer it (never serialized): a driver that
    /// declares [`steer`](crate::Capabilities::steer) takes them while its turn runs (see
    /// [`steering`](crate::steering)).
    #[serde(skip)]
    pub steering: Steering,
}

impl Request {
    /// A request for a fresh session with no services, MCP servers, workspace, model,
    /// instructions or metadata.
    pub fn new(run_id: RunId, prompt: impl Into<String>, profile: ProfilePayload) -> Self {
        Self {
            run_id,
            prompt: prompt.into(),
            session: SessionContext::default(),
            runtime: RuntimePayload::default(),
            mcp: Vec::new(),
            profile,
            workspace: None,
            model: None,
            instructions: None,
            metadata: BTreeMap::new(),
            permissions: PermissionPolicy::default(),
            approvals: Approvals::default(),
            output_schema: None,
            prewarmed: None,
            steering: Steering::default(),
        }
    }

    /// Sets the ticket of a pre-warm of this request ([`prewarmed`](Self::prewarmed)).
    pub fn with_prewarmed(mut self, ticket: PrewarmTicket) -> Self {
        self.prewarmed = Some(ticket);
        self
    }

    /// Lets the host steer this run: the follow-ups its paired
    /// [`Steerer`](crate::Steerer) sends ([`steering`](crate::steering)).
    pub fn with_steering(mut self, receiver: SteerReceiver) -> Self {
        self.steering = Steering::new(receiver);
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the permission policy.
    pub fn with_permissions(mut self, permissions: PermissionPolicy) -> Self {
        self.permissions = permissions;
        self
    }

    /// Sets where approval requests go.
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// Sets the session context.
    pub fn with_session(mut self, session: SessionContext) -> Self {
        self.session = session;
        self
    }

    /// Sets the runtime payload.
    pub fn with_runtime(mut self, runtime: RuntimePayload) -> Self {
        self.runtime = runtime;
        self
    }

    /// Sets the effective MCP servers.
    pub fn with_mcp(mut self, servers: impl IntoIterator<Item = McpServer>) -> Self {
        self.mcp = servers.into_iter().collect();
        self
    }

    /// Sets the profile payload.
    pub fn with_profile(mut self, profile: ProfilePayload) -> Self {
        self.profile = profile;
        self
    }

    /// Sets the workspace (cwd).
    pub fn with_workspace(mut self, workspace: impl Into<String>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }

    /// Sets the model override.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The names (never the values) of each service's secret bindings, keyed by the name of
    /// that service's MCP server. A CLI driver forwards these to a stdio MCP server the CLI
    /// starts, which would otherwise not see them.
    ///
    /// ```
    /// use compat_fingerprint::{Fingerprint, Kind};
    /// use driver_spi::{ProfilePayload, Request, RuntimePayload};
    /// use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
    ///
    /// const K: Kind = Kind::new("example 2026-11-30 profile v1");
    /// let fp = Fingerprint::of(K, |e| e.str("p"));
    /// let files = ServiceRef::new("files", "Files")
    ///     .with_mcp(McpServer::stdio("files", "/usr/bin/files-mcp"))
    ///     .with_secret_env(EnvBinding::new("FILES_TOKEN", "secret"));
    /// let request = Request::new(RunId::new("r"), "hi", ProfilePayload::new(fp, fp))
    ///     .with_runtime(RuntimePayload::from_services([files]));
    /// assert_eq!(request.mcp_secret_names()["files"], ["FILES_TOKEN"]);
    /// ```
    pub fn mcp_secret_names(&self) -> BTreeMap<&str, Vec<&str>> {
        let mut names = BTreeMap::new();
        for service in &self.runtime.services {
            if let Some(server) = &service.mcp
                && !service.secret_env.is_empty()
            {
                names.insert(
                    server.name.as_str(),
                    service.secret_env.iter().map(EnvBinding::name).collect(),
                );
            }
        }
        names
    }

    /// A redactor for every secret value this request carries: the runtime secret env and
    /// each service's secret env. Drivers pass provider text (stderr, error messages) through
    /// it before putting it into a [`RunFailure`](crate::RunFailure).
    pub fn redactor(&self) -> Redactor {
        let services = self
            .runtime
            .services
            .iter()
            .flat_map(|s| s.secret_env.iter());
        self.runtime
            .secret_env
            .iter()
            .chain(services)
            .map(|b| b.value().clone())
            .collect()
    }
}

/// The run services of one invocation, and the secret env the runtime needs to reach them.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[non_exhaustive]
pub struct RuntimePayload {
    /// The concrete services, in provider order, with their current URLs. Serializing writes
    /// their secret env names only.
    pub services: Vec<ServiceRef>,
    /// Every secret binding to inject into the runtime's environment, as secret values. This
    /// is the authoritative list for the child environment. Serializing writes names only.
    #[serde(serialize_with = "serialize_env_names")]
    pub secret_env: Vec<EnvBinding>,
}

impl RuntimePayload {
    /// A payload of these services whose [`secret_env`](Self::secret_env) is the union of
    /// their secret bindings, in order.
    pub fn from_services(services: impl IntoIterator<Item = ServiceRef>) -> Self {
        let services: Vec<ServiceRef> = services.into_iter().collect();
        let secret_env = services
            .iter()
            .flat_map(|s| s.secret_env.iter().cloned())
            .collect();
        Self {
            services,
            secret_env,
        }
    }

    /// Adds a secret binding that belongs to no service (for example a host credential).
    pub fn with_secret_env(mut self, binding: EnvBinding) -> Self {
        self.secret_env.push(binding);
        self
    }

    /// The secret binding with this name, if any (the last one wins, as in an environment).
    pub fn secret(&self, name: &str) -> Option<&EnvBinding> {
        self.secret_env.iter().rev().find(|b| b.name() == name)
    }
}

fn serialize_env_names<S: serde::Serializer>(
    bindings: &[EnvBinding],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(bindings.iter().map(EnvBinding::name))
}

/// The profile identity of one invocation, as two fingerprints.
///
/// - [`exact`](Self::exact) covers everything provider-visible, concrete MCP URLs and bearer
///   env-var names included. It changes whenever anything is materialized differently.
/// - [`session_compatibility`](Self::session_compatibility) is the same projection in which
///   every attachment that declared a
///   [`RunServiceCompatibility`](run_service::RunServiceCompatibility) is replaced by its
///   `{id, fingerprint}` tuple. It survives an endpoint or credential rotation and changes on
///   a real semantic change.
///
/// **Rule:** a session codec's guard is built from `session_compatibility`, never from
/// `exact` (see [`SessionGuard`](crate::SessionGuard)). Process signatures and materialization
/// use the exact, concrete values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ProfilePayload {
    /// Exact fingerprint of the materialized profile.
    pub exact: Fingerprint,
    /// Session-compatibility fingerprint of the profile.
    pub session_compatibility: Fingerprint,
}

impl ProfilePayload {
    /// A profile payload.
    pub fn new(exact: Fingerprint, session_compatibility: Fingerprint) -> Self {
        Self {
            exact,
            session_compatibility,
        }
    }
}

/// The workspace's one redactor ([`redaction::Redactor`]), under the name drivers know it
/// by: the secret values it knows, in every form (literal, percent-encoded, JSON-escaped,
/// overlapping), then the token patterns. [`Request::redactor`] builds one from a request's
/// secret bindings.
///
/// ```
/// use driver_spi::Redactor;
/// use run_service::EnvBinding;
///
/// let r = Redactor::from_iter([EnvBinding::new("T", "tok/en")].iter().map(|b| b.value().clone()));
/// assert_eq!(r.redact("a tok/en b"), "a [REDACTED] b");
/// assert_eq!(r.redact("?t=tok%2Fen"), "?t=[REDACTED]");
/// assert_eq!(r.redact(r#"{"t":"tok\/en"}"#), r#"{"t":"[REDACTED]"}"#);
/// assert_eq!(r.redact("Authorization: Bearer other"), "Authorization: Bearer [REDACTED]");
/// ```
pub use redaction::Redactor;
