//! [`AcpOptions`] and the ACP dialect: one dialect for every ACP agent, which reads the agent
//! it runs from its registry entry.

use driver_cli::{
    CliOptions, ConfigFiles, Dialect, Identity, Invocation, KeyRoute, ModelAccess,
    ResidentProtocol, Runtime, Turn, WithEndpoint, cli_capabilities,
};
use driver_process::process::Finished;
use driver_process::version::Version;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, Redactor, Request,
};
use run_service::TransportKind;
use runtime_env::RuntimeEnv;

use crate::agent::AcpAgent;
use crate::events::Updates;
use crate::protocol::AcpProtocol;

/// The construction options of an [`AcpDriver`](crate::AcpDriver): the agent (its registry
/// entry), the common options every CLI driver has (`use driver_acp::CommonOptions` for their
/// builder methods) and the model endpoint. The agent, the model and the endpoint are part of
/// the driver's config fingerprint; the binary and limits are not.
///
/// ```
/// use driver_acp::{AcpOptions, CommonOptions};
///
/// let options = AcpOptions::new(&driver_acp::GEMINI)
///     .with_binary("/opt/gemini/bin/gemini")
///     .with_base_url("http://127.0.0.1:8080");
/// assert_eq!(options.agent_name(), "gemini_acp");
/// ```
#[derive(Debug, Clone)]
pub struct AcpOptions {
    pub(crate) cli: CliOptions,
    pub(crate) runtime: &'static Runtime,
    pub(crate) base_url: Option<String>,
    pub(crate) protocol: AcpProtocol,
}

/// The agent of an entry made without a spec: refused by `validate_config`.
static UNREGISTERED: AcpAgent = AcpAgent::new(
    "acp_unregistered",
    "ACP agent (unregistered)",
    "acp_unregistered/v1",
    &[],
    crate::AcpCapabilities::BASELINE,
);

impl AcpOptions {
    /// Options for the agent of `entry` ([`GEMINI`](crate::GEMINI),
    /// [`CODEBUDDY`](crate::CODEBUDDY), or one [registered](crate::AcpAgentBuilder)), whose
    /// program is the entry's.
    pub fn new(entry: &'static Runtime) -> Self {
        let agent = entry.spec::<AcpAgent>().unwrap_or(&UNREGISTERED);
        let minimum = agent.minimum_version.unwrap_or(Version::new(0, 0, 0));
        Self {
            cli: CliOptions::new(entry.descriptor.program, minimum),
            runtime: entry,
            base_url: None,
            protocol: AcpProtocol::new(agent, entry),
        }
    }

    /// With the model endpoint, set in the agent's endpoint variable (refused by
    /// `validate_config` for an agent that has none).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The agent's registry name.
    pub fn agent_name(&self) -> &'static str {
        self.runtime.name
    }

    pub(crate) fn agent(&self) -> &'static AcpAgent {
        self.protocol.agent
    }
}

driver_cli::dialect!(
    /// The ACP dialect: any agent, by its entry.
    Acp(AcpOptions)
);

impl ModelAccess for Acp {
    type Options = AcpOptions;

    const WITH_ENDPOINT: WithEndpoint<Self::Options> =
        |options, url, _| Ok(options.with_base_url(url));
    const KEY: KeyRoute<Self::Options> = KeyRoute::KeyVar;

    fn options(runtime: &'static Runtime) -> AcpOptions {
        AcpOptions::new(runtime)
    }
}

impl Dialect for Acp {
    type Translator = Updates;

    fn runtime(&self) -> &'static Runtime {
        self.runtime
    }

    fn identity(&self) -> &Identity {
        &self.agent().identity
    }

    /// What the agent declared (or was learned to) do: resume by load or resume, fork, the
    /// MCP transports it takes.
    fn capabilities(&self) -> Capabilities {
        let caps = self.agent().capabilities;
        let transports: Vec<TransportKind> = [
            (caps.mcp_http, TransportKind::StreamableHttp),
            (caps.mcp_sse, TransportKind::Sse),
            (caps.mcp_stdio, TransportKind::Stdio),
        ]
        .into_iter()
        .filter_map(|(on, kind)| on.then_some(kind))
        .collect();
        cli_capabilities(caps.fork_session, &transports).with_resume(caps.continues_sessions())
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        let agent = self.agent();
        builder
            .str("acp_agent", self.runtime.name)
            .str("acp_args", &agent.args.join("\u{1f}"))
            .opt_str("base_url", self.base_url.as_deref())
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        let agent = self.agent();
        if std::ptr::eq(agent, &UNREGISTERED) {
            return Err(ConfigError::invalid(
                "agent",
                "the entry has no ACP agent spec: use driver_acp's entries or AcpAgentBuilder",
            ));
        }
        if self.base_url.is_some() && agent.endpoint_var.is_none() {
            return Err(ConfigError::invalid(
                "base_url",
                "this ACP agent takes no model endpoint",
            ));
        }
        if let Some(url) = self.base_url.as_deref()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError::invalid(
                "base_url",
                "must be an http or https URL",
            ));
        }
        if self.cli.model.is_some() && agent.model_flag.is_none() {
            return Err(ConfigError::invalid(
                "model",
                "this ACP agent takes no model on its command line",
            ));
        }
        Ok(())
    }

    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        if request.model.is_some() && self.agent().model_flag.is_none() {
            return Err(ConfigError::invalid(
                "model",
                "this ACP agent takes no model on its command line",
            )
            .into());
        }
        // The MCP servers as `session/new` will carry them: refused now, before a launch.
        crate::mcp::servers(request)?;
        Ok(())
    }

    /// None: an ACP agent takes its MCP servers in `session/new` and its key and endpoint
    /// from its environment, so no config file is written (Gemini's `settings.json`
    /// included: `authenticate` selects its key, see the crate docs).
    fn config(&self, _turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        Ok(ConfigFiles::None)
    }

    /// The agent's ACP command line (with the model flag), its plain variables and the
    /// endpoint variable.
    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let agent = self.agent();
        let mut args: Vec<String> = agent.args.iter().map(|a| (*a).to_owned()).collect();
        let model = turn.request.model.as_deref().or(self.cli.model.as_deref());
        if let (Some(flag), Some(model)) = (agent.model_flag, model) {
            args.extend([flag.to_owned(), model.to_owned()]);
        }
        let mut invocation = Invocation::new(args);
        for (name, value) in agent.vars {
            invocation = invocation.var(name, *value);
        }
        let url = self.base_url.as_deref().or(agent.default_endpoint);
        if let (Some(var), Some(url)) = (agent.endpoint_var, url) {
            invocation = invocation.var(var, url);
        }
        Ok(invocation)
    }

    fn translator(&self, request: &Request, redactor: Redactor) -> Updates {
        Updates::new(request, redactor)
    }

    /// Never by exit: an ACP agent refuses an unknown session in its answer to the load
    /// ([`ResidentProtocol::rejection`]).
    fn unknown_session(&self, _translator: &Updates, _finished: &Finished) -> bool {
        false
    }

    /// Only for an agent with a known minimum version (the built-in ones).
    fn probes_version(&self) -> bool {
        self.agent().minimum_version.is_some()
    }

    fn resident(&self) -> Option<&dyn ResidentProtocol> {
        Some(&self.protocol)
    }
}
