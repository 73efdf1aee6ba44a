//! [`WireRequest`]: a `driver_spi::Request` on the wire.
//!
//! `Request` derives `Serialize` with secret *names* only, and some of its parts
//! (`SessionContext`, `ServiceRef`, `OutputSchema`) cannot be deserialized; so the wire has its
//! own form. Everything but secrets is the [`WireRequestBody`] (plain serde, both ways); the
//! secret values ride beside it as [`WireBinding`]s, written only by
//! [`WireRequest::to_wire`]. The host's `Approvals` do not cross: the worker makes its own,
//! which relay to the host (`runtime.approve`), with the host's timeout.

use std::collections::BTreeMap;
use std::time::Duration;

use driver_spi::{
    Approvals, OutputSchema, PermissionPolicy, PrewarmTicket, ProfilePayload, Request,
    RuntimePayload, SchemaDelivery, SessionContext, SessionMode, SessionState,
};
use run_service::{Lifecycle, McpServer, RunId, ServiceRef};
use serde_json::{Value, json};

use crate::{ProtocolError, WireBinding};

/// A [`Request`] on the wire: its body, and its secret values as [`WireBinding`]s.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct WireRequest {
    /// Everything but the secret values.
    pub body: WireRequestBody,
    /// [`RuntimePayload::secret_env`].
    #[serde(default)]
    pub secret_env: Vec<WireBinding>,
    /// Each service's `secret_env`, in the order of [`WireRequestBody::services`].
    #[serde(default)]
    pub service_secret_env: Vec<Vec<WireBinding>>,
}

/// A [`Request`] without its secret values and its `Approvals`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct WireRequestBody {
    /// [`Request::run_id`].
    pub run_id: RunId,
    /// [`Request::prompt`].
    pub prompt: String,
    /// [`Request::session`].
    pub session: WireSession,
    /// [`RuntimePayload::services`], without their secret env.
    #[serde(default)]
    pub services: Vec<WireService>,
    /// [`Request::mcp`].
    #[serde(default)]
    pub mcp: Vec<McpServer>,
    /// [`Request::profile`].
    pub profile: ProfilePayload,
    /// [`Request::workspace`].
    #[serde(default)]
    pub workspace: Option<String>,
    /// [`Request::model`].
    #[serde(default)]
    pub model: Option<String>,
    /// [`Request::instructions`].
    #[serde(default)]
    pub instructions: Option<String>,
    /// [`Request::metadata`].
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// [`Request::permissions`].
    #[serde(default)]
    pub permissions: PermissionPolicy,
    /// [`Request::output_schema`].
    #[serde(default)]
    pub output_schema: Option<WireOutputSchema>,
    /// The host's approval timeout ([`Approvals::timeout`]), in milliseconds.
    pub approval_timeout_ms: u64,
    /// Whether the host has an approval handler ([`Approvals::has_handler`]): without one the
    /// worker denies at once, as in process, and never asks the host.
    #[serde(default)]
    pub approvals: bool,
    /// [`Request::prewarmed`]: the ticket of a pre-warm of this request (`runtime.prewarm`).
    /// Left off the wire when there is none, so an older host's request parses as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prewarmed: Option<PrewarmTicket>,
}

/// A [`SessionContext`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WireSession {
    /// The mode.
    pub mode: SessionMode,
    /// The state to continue or fork.
    #[serde(default)]
    pub state: Option<SessionState>,
    /// The informational previous id.
    #[serde(default)]
    pub previous_id: Option<String>,
}

/// A [`ServiceRef`] without its secret env.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[allow(
    missing_docs,
    reason = "each field is the `ServiceRef` field of the same name"
)]
pub struct WireService {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub lifecycle: Lifecycle,
    #[serde(default)]
    pub reuse_key: Option<String>,
    #[serde(default)]
    pub mcp: Option<McpServer>,
}

/// An [`OutputSchema`] on the wire.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WireOutputSchema {
    /// The JSON Schema.
    pub schema: Value,
    /// [`SchemaDelivery::PromptOnly`] rather than native.
    #[serde(default)]
    pub prompt_only: bool,
}

impl WireRequest {
    /// The wire form of `request`.
    pub fn from_request(request: &Request) -> Self {
        let services = request.runtime.services.iter().map(|s| WireService {
            id: s.id.clone(),
            name: s.name.clone(),
            url: s.url.clone(),
            command: s.command.clone(),
            args: s.args.clone(),
            cwd: s.cwd.clone(),
            port: s.port,
            metadata: s.metadata.clone(),
            lifecycle: s.lifecycle,
            reuse_key: s.reuse_key.clone(),
            mcp: s.mcp.clone(),
        });
        let body = WireRequestBody {
            run_id: request.run_id.clone(),
            prompt: request.prompt.clone(),
            session: WireSession {
                mode: request.session.mode,
                state: request.session.state.clone(),
                previous_id: request.session.previous_id.clone(),
            },
            services: services.collect(),
            mcp: request.mcp.clone(),
            profile: request.profile,
            workspace: request.workspace.clone(),
            model: request.model.clone(),
            instructions: request.instructions.clone(),
            metadata: request.metadata.clone(),
            permissions: request.permissions,
            output_schema: request.output_schema.as_ref().map(|o| WireOutputSchema {
                schema: o.schema().clone(),
                prompt_only: o.delivery() == SchemaDelivery::PromptOnly,
            }),
            approval_timeout_ms: u64::try_from(request.approvals.timeout().as_millis())
                .unwrap_or(u64::MAX),
            approvals: request.approvals.has_handler(),
            prewarmed: request.prewarmed.clone(),
        };
        let bindings = |list: &[run_service::EnvBinding]| list.iter().map(Into::into).collect();
        Self {
            body,
            secret_env: bindings(&request.runtime.secret_env),
            service_secret_env: request
                .runtime
                .services
                .iter()
                .map(|s| bindings(&s.secret_env))
                .collect(),
        }
    }

    /// The message the host writes: the body, and the secret values in clear (for the pipe
    /// only).
    pub fn to_wire(&self) -> Value {
        json!({
            "body": serde_json::to_value(&self.body).unwrap_or(Value::Null),
            "secret_env": WireBinding::list_to_wire(&self.secret_env),
            "service_secret_env": self
                .service_secret_env
                .iter()
                .map(|list| WireBinding::list_to_wire(list))
                .collect::<Vec<_>>(),
        })
    }

    /// The approval timeout the host set.
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.body.approval_timeout_ms)
    }

    /// The request, on the worker's side, with the worker's `approvals`.
    ///
    /// # Errors
    /// [`ProtocolError::InvalidParams`] when there are more service secret lists than
    /// services.
    pub fn into_request(self, approvals: Approvals) -> Result<Request, ProtocolError> {
        let Self {
            body,
            secret_env,
            service_secret_env,
        } = self;
        if service_secret_env.len() > body.services.len() {
            return Err(ProtocolError::InvalidParams);
        }
        let mut secrets = service_secret_env.into_iter();
        let services = body.services.into_iter().map(|s| {
            let mut service = ServiceRef::new(s.id, s.name);
            service.url = s.url;
            service.command = s.command;
            service.args = s.args;
            service.cwd = s.cwd;
            service.port = s.port;
            service.metadata = s.metadata;
            service.lifecycle = s.lifecycle;
            service.reuse_key = s.reuse_key;
            service.mcp = s.mcp;
            service.secret_env = secrets
                .next()
                .unwrap_or_default()
                .into_iter()
                .map(WireBinding::into_binding)
                .collect();
            service
        });
        let mut runtime = RuntimePayload::from_services(services);
        runtime.secret_env = secret_env
            .into_iter()
            .map(WireBinding::into_binding)
            .collect();
        let mut session = SessionContext::start();
        session.mode = body.session.mode;
        session.state = body.session.state;
        session.previous_id = body.session.previous_id;
        let mut request = Request::new(body.run_id, body.prompt, body.profile)
            .with_session(session)
            .with_runtime(runtime)
            .with_mcp(body.mcp)
            .with_permissions(body.permissions)
            .with_approvals(approvals);
        request.workspace = body.workspace;
        request.model = body.model;
        request.instructions = body.instructions;
        request.metadata = body.metadata;
        request.prewarmed = body.prewarmed;
        request.output_schema = body.output_schema.map(|o| {
            let schema = OutputSchema::new(o.schema);
            if o.prompt_only {
                schema.prompt_only()
            } else {
                schema
            }
        });
        Ok(request)
    }
}
