//! What a driver is and what it can do: its [`Descriptor`] and [`Capabilities`].

use std::collections::BTreeSet;

use run_service::TransportKind;

use crate::{Request, SessionMode};

/// A driver's identity and declared capabilities.
///
/// The descriptor must be **non-empty** (a type and a display name without surrounding
/// whitespace) and **deterministic**: every call, on every instance built from the same
/// configuration, returns an equal value. It must also be **truthful**: a capability is
/// declared if and only if the driver implements it (see [`Capabilities`]). The conformance kit
/// checks all three.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Descriptor {
    /// Stable machine name of the driver, for example `codex`. It is part of the Thread
    /// fingerprint, so it never changes for a given driver.
    pub driver_type: String,
    /// Human-readable name, for example `Codex CLI`.
    pub display_name: String,
    /// What the driver supports.
    pub capabilities: Capabilities,
    /// Environment variables that point the runtime at a network endpoint (its model API's
    /// base URL, for example `ANTHROPIC_BASE_URL`), beyond the generic `*_BASE_URL` and proxy
    /// variables every runtime honours. A host's endpoint policy checks the values of run
    /// bindings with these names before the driver runs. Empty for a driver with no runtime
    /// process.
    #[serde(default)]
    pub endpoint_vars: Vec<String>,
}

impl Descriptor {
    /// A descriptor with no capabilities.
    pub fn new(driver_type: impl Into<String>, display_name: impl Into<String>) -> Self {
        Self {
            driver_type: driver_type.into(),
            display_name: display_name.into(),
            capabilities: Capabilities::none(),
            endpoint_vars: Vec::new(),
        }
    }

    /// Sets the endpoint-carrying variables ([`endpoint_vars`](Self::endpoint_vars)).
    pub fn with_endpoint_vars<I, S>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.endpoint_vars = vars.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the capabilities.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
}

/// The capabilities a driver declares.
///
/// # Truthfulness (checked by the conformance kit)
/// - [`resume`](Self::resume) is declared **if and only if** the driver returns a stable
///   [`SessionCodec`](crate::SessionCodec) *and* a
///   [`ConfigFingerprinter`](crate::ConfigFingerprinter).
/// - [`fork`](Self::fork) implies [`resume`](Self::resume).
/// - [`persistent_processes`](Self::persistent_processes) is declared **if and only if** the
///   driver returns a [`ProcessLifecycle`](crate::ProcessLifecycle), so the core can close
///   every process the driver owns.
/// - [`prewarm`](Self::prewarm) is declared **if and only if**
///   [`Driver::prewarm`](crate::Driver::prewarm) does not refuse with
///   [`Unsupported::Prewarm`], and implies [`persistent_processes`](Self::persistent_processes).
/// - [`steer`](Self::steer) is declared **if and only if** a follow-up sent while a turn runs
///   is delivered into it and acknowledged (a driver that does not declare it leaves the
///   run's [`Steering`](crate::Steering) alone, and the host refuses follow-ups itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// Sessions can be continued from a stored checkpoint.
    pub resume: bool,
    /// Sessions can be forked into a new session with a new resume id.
    pub fork: bool,
    /// The MCP transports the driver can hand to its runtime.
    pub mcp_transports: BTreeSet<TransportKind>,
    /// Text and tool-call events are emitted while the run is in progress, not only at the end.
    pub streaming: bool,
    /// Runtime processes are kept alive across turns.
    pub persistent_processes: bool,
    /// The runtime's approval requests reach the host ([`Approvals`](crate::Approvals)), so a
    /// [`PermissionPolicy`](crate::PermissionPolicy) may [`Ask`](crate::Permission::Ask).
    #[serde(default)]
    pub approvals: bool,
    /// The runtime constrains its final answer to a request's
    /// [`OutputSchema`](crate::OutputSchema) natively.
    #[serde(default)]
    pub structured_output: bool,
    /// A process can be started and its session opened before the run that needs it
    /// ([`Driver::prewarm`](crate::Driver::prewarm)).
    #[serde(default)]
    pub prewarm: bool,
    /// A running turn takes follow-up messages ([`Steering`](crate::Steering)): the driver
    /// delivers each into the turn and acknowledges it, or refuses it typed. A driver that
    /// does not declare it never takes them (the host refuses them itself).
    #[serde(default)]
    pub steer: bool,
}

impl Capabilities {
    /// No capabilities: stateless, no MCP, no streaming, one process per run.
    pub fn none() -> Self {
        Self::default()
    }

    /// Declares (or not) session resume.
    pub fn with_resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }

    /// Declares (or not) session fork.
    pub fn with_fork(mut self, fork: bool) -> Self {
        self.fork = fork;
        self
    }

    /// Declares support for one MCP transport.
    pub fn with_mcp_transport(mut self, transport: TransportKind) -> Self {
        self.mcp_transports.insert(transport);
        self
    }

    /// Declares (or not) streaming.
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Declares (or not) persistent runtime processes.
    pub fn with_persistent_processes(mut self, persistent: bool) -> Self {
        self.persistent_processes = persistent;
        self
    }

    /// Declares (or not) native structured output.
    pub fn with_structured_output(mut self, structured: bool) -> Self {
        self.structured_output = structured;
        self
    }

    /// Declares (or not) pre-warmed processes.
    pub fn with_prewarm(mut self, prewarm: bool) -> Self {
        self.prewarm = prewarm;
        self
    }

    /// Declares (or not) steering of a running turn.
    pub fn with_steer(mut self, steer: bool) -> Self {
        self.steer = steer;
        self
    }

    /// Declares (or not) approval requests.
    pub fn with_approvals(mut self, approvals: bool) -> Self {
        self.approvals = approvals;
        self
    }

    /// Whether an MCP transport is supported.
    pub fn supports_mcp_transport(&self, transport: TransportKind) -> bool {
        self.mcp_transports.contains(&transport)
    }

    /// Checks that a request asks for nothing these capabilities lack: resuming a stored
    /// session, forking, an MCP transport, or a permission policy that asks. The core calls this before launch; drivers may
    /// call it again as the first step of [`Driver::run`](crate::Driver::run).
    pub fn check(&self, request: &Request) -> Result<(), Unsupported> {
        match request.session.mode {
            SessionMode::Fork if !self.fork => return Err(Unsupported::Fork),
            SessionMode::ContinueOnly if !self.resume => return Err(Unsupported::Resume),
            SessionMode::ContinueOrStart if request.session.state.is_some() && !self.resume => {
                return Err(Unsupported::Resume);
            }
            _ => {}
        }
        for server in &request.mcp {
            let kind = server.transport.kind();
            if !self.supports_mcp_transport(kind) {
                return Err(Unsupported::McpTransport(kind));
            }
        }
        if request.permissions.asks() && !self.approvals {
            return Err(Unsupported::Approvals);
        }
        let native = request
            .output_schema
            .as_ref()
            .is_some_and(|s| s.delivery() == crate::SchemaDelivery::Native);
        if native && !self.structured_output {
            return Err(Unsupported::StructuredOutput);
        }
        Ok(())
    }
}

/// A request needs something the driver does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unsupported {
    /// Continuing a stored session.
    #[error("session resume is not supported by this driver")]
    Resume,
    /// Forking a session.
    #[error("session fork is not supported by this driver")]
    Fork,
    /// An MCP transport.
    #[error("MCP transport {} is not supported by this driver", transport_name(*.0))]
    McpTransport(TransportKind),
    /// Pre-warming a process ([`Driver::prewarm`](crate::Driver::prewarm)): the driver keeps
    /// no process between runs (in its current mode).
    #[error("pre-warming a process is not supported by this driver in its current mode")]
    Prewarm,
    /// A native output schema, from a driver whose runtime has no structured output (the host
    /// may choose [`SchemaDelivery::PromptOnly`](crate::SchemaDelivery::PromptOnly)).
    #[error("structured output is not supported natively by this driver")]
    StructuredOutput,
    /// A policy that asks the host, from a driver whose runtime cannot deliver approval
    /// requests (in its current mode).
    #[error("approval requests are not supported by this driver in its current mode")]
    Approvals,
    /// One permission of the policy, which the runtime cannot enforce.
    #[error(
        "permission {}={} cannot be enforced by this runtime",
        .action.as_str(),
        .permission.as_str()
    )]
    Permission {
        /// The action.
        action: crate::Action,
        /// The permission asked for it.
        permission: crate::Permission,
    },
    /// One permission of the policy, which the runtime can honour only when another action
    /// is not denied: its only tool for the action is one of that other action (Codex with a
    /// model it has no patch tool for writes only with a command). The host either permits
    /// `needs` (allow or ask) or changes the permission.
    #[error(
        "permission {}={} needs {}=allow or {}=ask on this runtime (it has no other tool for {})",
        .action.as_str(),
        .permission.as_str(),
        .needs.as_str(),
        .needs.as_str(),
        .action.as_str()
    )]
    PermissionNeeds {
        /// The action.
        action: crate::Action,
        /// The permission asked for it.
        permission: crate::Permission,
        /// The action whose tools the runtime would take it with.
        needs: crate::Action,
    },
    /// A native output schema the runtime's structured output refuses and that has no form
    /// it accepts (OpenAI's strict mode, for Codex): the answer's type must change, as the
    /// reason says.
    #[error("the output schema cannot be made strict for this runtime: {0}")]
    StrictOutputSchema(crate::StrictSchemaError),
}

fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::Stdio => "stdio",
        TransportKind::StreamableHttp => "streamable_http",
        TransportKind::Sse => "sse",
        _ => "unknown",
    }
}
