//! [`AcpAgent`]: what the driver knows of one ACP agent (its command line, variables and
//! capabilities), and the registry entries of the agents this workspace tests.

use driver_cli::{Identity, NewSessionId, Runtime};

use serde_json::Value;

use crate::dialect::Acp;

/// What an ACP agent can do, as its `initialize` answer says: declared with the agent, or
/// learned once from a real `initialize` ([`from_initialize`](Self::from_initialize)) and kept.
/// A request the agent cannot serve is refused before a turn starts.
///
/// ```
/// use driver_acp::AcpCapabilities;
/// use serde_json::json;
///
/// let caps = AcpCapabilities::from_initialize(&json!({
///     "protocolVersion": 1,
///     "agentCapabilities": {"loadSession": true, "mcpCapabilities": {"http": true}}
/// }))?;
/// assert!(caps.load_session && caps.mcp_http && !caps.resume_session && !caps.mcp_sse);
/// # Ok::<(), driver_acp::RegisterError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcpCapabilities {
    /// `loadSession`: `session/load` replays a stored session (and continues it).
    pub load_session: bool,
    /// `sessionCapabilities.resume`: `session/resume` continues a stored session without a
    /// replay (preferred over a load where both are offered).
    pub resume_session: bool,
    /// `sessionCapabilities.fork`: `session/fork` branches a stored session.
    pub fork_session: bool,
    /// `mcpCapabilities.http`: MCP servers over streamable HTTP.
    pub mcp_http: bool,
    /// `mcpCapabilities.sse`: MCP servers over SSE.
    pub mcp_sse: bool,
    /// MCP servers over stdio, which every ACP agent must take; `false` for one known to
    /// drop them silently, so a request naming one is refused instead.
    pub mcp_stdio: bool,
}

impl AcpCapabilities {
    /// Nothing beyond a new session and stdio MCP servers: the protocol's baseline.
    pub const BASELINE: Self = Self {
        load_session: false,
        resume_session: false,
        fork_session: false,
        mcp_http: false,
        mcp_sse: false,
        mcp_stdio: true,
    };

    /// With `session/load`.
    pub const fn with_load_session(mut self, load: bool) -> Self {
        self.load_session = load;
        self
    }

    /// With `session/resume`.
    pub const fn with_resume_session(mut self, resume: bool) -> Self {
        self.resume_session = resume;
        self
    }

    /// With `session/fork`.
    pub const fn with_fork_session(mut self, fork: bool) -> Self {
        self.fork_session = fork;
        self
    }

    /// With HTTP and SSE MCP servers as given.
    pub const fn with_mcp(mut self, http: bool, sse: bool) -> Self {
        self.mcp_http = http;
        self.mcp_sse = sse;
        self
    }

    /// With stdio MCP servers, or without (an agent known to drop them).
    pub const fn with_mcp_stdio(mut self, stdio: bool) -> Self {
        self.mcp_stdio = stdio;
        self
    }

    /// Whether a stored session can be continued (by resume or load).
    pub fn continues_sessions(&self) -> bool {
        self.resume_session || self.load_session
    }

    /// The capabilities an `initialize` answer states (its `agentCapabilities`, read with the
    /// protocol's own types; absent fields are `false`).
    ///
    /// # Errors
    /// [`RegisterError::Initialize`] when the answer is not an `InitializeResponse` of
    /// protocol version 1.
    pub fn from_initialize(answer: &Value) -> Result<Self, RegisterError> {
        use agent_client_protocol_schema::v1::InitializeResponse;
        let response: InitializeResponse = serde_json::from_value(answer.clone())
            .map_err(|_| RegisterError::Initialize("not an initialize answer"))?;
        if response.protocol_version != agent_client_protocol_schema::ProtocolVersion::V1 {
            return Err(RegisterError::Initialize("not protocol version 1"));
        }
        let caps = response.agent_capabilities;
        let sessions = caps.session_capabilities;
        Ok(Self {
            load_session: caps.load_session,
            resume_session: sessions.resume.is_some(),
            fork_session: sessions.fork.is_some(),
            mcp_http: caps.mcp_capabilities.http,
            mcp_sse: caps.mcp_capabilities.sse,
            mcp_stdio: true,
        })
    }
}

/// One ACP agent as the driver runs it: the arguments that start its ACP mode, the
/// variables it needs, how it is authenticated and what it can do. Reached from its
/// registry entry ([`Runtime::spec`]); the statics of this crate ([`GEMINI`],
/// [`CODEBUDDY`]) and [`AcpAgentBuilder::register`](crate::AcpAgentBuilder::register) make one.
#[derive(Debug)]
#[non_exhaustive]
pub struct AcpAgent {
    /// The arguments after the program that start its ACP mode (`--acp`).
    pub args: &'static [&'static str],
    /// The flag that takes the model (`--model`), when the agent takes one on its command
    /// line; without one, a model in the options or the request is refused.
    pub model_flag: Option<&'static str>,
    /// The variable that takes the model endpoint, when the agent has one.
    pub endpoint_var: Option<&'static str>,
    /// The endpoint set there when the host names none (Gemini's API: its ACP mode selects
    /// an auth type from the endpoint variable, see [`GEMINI`]).
    pub default_endpoint: Option<&'static str>,
    /// Whether a `session/load` that replays no history means the session is unknown (an
    /// agent that "loads" an unknown id as an empty session: CodeBuddy).
    pub empty_load_is_unknown: bool,
    /// How long a `session/load` of a session must wait, given the agent's state directory,
    /// the session id and the time (Gemini: see `gemini.rs`).
    pub(crate) load_wait: Option<LoadWait>,
    /// The `authenticate` method the driver calls after `initialize`, when the agent needs
    /// one to use its key variable (Gemini's `gemini-api-key`).
    pub auth_method: Option<&'static str>,
    /// Plain variables every process of the agent gets (telemetry and update checks off).
    pub vars: &'static [(&'static str, &'static str)],
    /// What it can do.
    pub capabilities: AcpCapabilities,
    /// The oldest release the driver is tested with, checked by `--version` before the first
    /// turn; `None` (an agent registered by its command): no probe, since an ACP agent need
    /// not answer `--version`.
    pub minimum_version: Option<driver_process::version::Version>,
    /// Its driver identity: type, name and session codec (part of every Thread's
    /// fingerprint, so a Thread of one agent never resumes on another).
    pub identity: Identity,
}

impl AcpAgent {
    /// An agent started by `args` after its program, with the identity of a driver of type
    /// `driver_type` (`display_name` for people) whose sessions the codec `codec` stores.
    pub const fn new(
        driver_type: &'static str,
        display_name: &'static str,
        codec: &'static str,
        args: &'static [&'static str],
        capabilities: AcpCapabilities,
    ) -> Self {
        Self {
            args,
            model_flag: None,
            endpoint_var: None,
            default_endpoint: None,
            empty_load_is_unknown: false,
            load_wait: None,
            auth_method: None,
            vars: &[],
            capabilities,
            minimum_version: None,
            identity: Identity::new(driver_type, display_name, codec, NewSessionId::Cli)
                .with_opaque_ids(),
        }
    }

    /// With the flag that takes the model.
    pub const fn with_model_flag(mut self, flag: &'static str) -> Self {
        self.model_flag = Some(flag);
        self
    }

    /// With the variable that takes the model endpoint.
    pub const fn with_endpoint_var(mut self, var: &'static str) -> Self {
        self.endpoint_var = Some(var);
        self
    }

    /// With the endpoint to use when the host names none.
    pub const fn with_default_endpoint(mut self, url: &'static str) -> Self {
        self.default_endpoint = Some(url);
        self
    }

    /// A load that replays no history means an unknown session.
    pub const fn with_empty_load_is_unknown(mut self) -> Self {
        self.empty_load_is_unknown = true;
        self
    }

    /// With the `authenticate` method to call after `initialize`.
    pub const fn with_auth_method(mut self, method: &'static str) -> Self {
        self.auth_method = Some(method);
        self
    }

    /// With a wait before each load.
    const fn with_load_wait(mut self, wait: LoadWait) -> Self {
        self.load_wait = Some(wait);
        self
    }

    /// With the oldest release the driver is tested with.
    pub const fn with_minimum_version(mut self, version: driver_process::version::Version) -> Self {
        self.minimum_version = Some(version);
        self
    }

    /// With plain variables for every process.
    pub const fn with_vars(mut self, vars: &'static [(&'static str, &'static str)]) -> Self {
        self.vars = vars;
        self
    }
}

/// `gemini --acp --skip-trust`: the Gemini CLI's ACP mode (0.61.0), sharing the `gemini`
/// entry's descriptor (its state directory, login and sessions). It resumes by
/// `session/load` (it offers no `session/resume`, nor fork) and takes HTTP, SSE and stdio MCP
/// servers in `session/new`, which it connects to only in a trusted folder (`--skip-trust`;
/// its default approval mode still asks before edits and commands).
///
/// Its arrangement differs from the headless entry's, which installs a `settings.json`
/// selecting `gemini-api-key` per turn: with that auth type selected, 0.61.0's ACP mode
/// fails every `session/load` ("No previous sessions found") and, worse, rewrites the
/// session's file so that its history is gone; `authenticate {gemini-api-key}` selects it
/// too. So this entry writes no settings and never authenticates: with
/// `GOOGLE_GEMINI_BASE_URL` set (the host's endpoint, else Google's own API) Gemini picks its
/// gateway auth type, which sends `GEMINI_API_KEY` and loads sessions. A namespace whose own
/// `settings.json` selects an auth type breaks its loads the same way.
///
/// 0.61.0 names a session's file by the UTC minute a process opens it, and `session/load`
/// opens it afresh before looking the session up: a load in the same minute as the session's
/// file was made (a restart or recycle within a minute) restarts the file, fails as an
/// unknown session and loses the history (see `docs/acp-agents-observed.md`, Q5).
pub static GEMINI: Runtime = Runtime::new::<Acp>(
    driver_gemini::RUNTIME.descriptor,
    "GEMINI_BIN",
    "GEMINI_API_KEY",
)
.named("gemini_acp")
.with_spec(&GEMINI_AGENT);

static GEMINI_AGENT: AcpAgent = AcpAgent::new(
    "gemini_acp",
    "Gemini CLI (ACP)",
    "gemini_acp/v1",
    &["--acp", "--skip-trust"],
    AcpCapabilities::BASELINE
        .with_load_session(true)
        .with_mcp(true, true),
)
.with_model_flag("--model")
.with_endpoint_var("GOOGLE_GEMINI_BASE_URL")
.with_default_endpoint("https://generativelanguage.googleapis.com")
.with_minimum_version(driver_gemini::MINIMUM_VERSION)
.with_load_wait(crate::gemini::load_wait)
.with_vars(&[("GEMINI_TELEMETRY_ENABLED", "false")]);

/// `codebuddy --acp`: CodeBuddy Code's ACP mode (2.117.0), sharing the `codebuddy` entry's
/// descriptor. It resumes by `session/load` (and "loads" an unknown id as an empty session,
/// so a load that replays no history is taken as an unknown session), takes HTTP, SSE and
/// stdio MCP servers, reads `CODEBUDDY_API_KEY` and `CODEBUDDY_BASE_URL` without an
/// `authenticate` call, and takes the model with `--model`. It does not exit when its stdin
/// closes: the driver ends it after the kill grace.
pub static CODEBUDDY: Runtime = Runtime::new::<Acp>(
    driver_codebuddy::RUNTIME.descriptor,
    "CODEBUDDY_BIN",
    "CODEBUDDY_API_KEY",
)
.named("codebuddy_acp")
.with_spec(&CODEBUDDY_AGENT);

static CODEBUDDY_AGENT: AcpAgent = AcpAgent::new(
    "codebuddy_acp",
    "CodeBuddy Code (ACP)",
    "codebuddy_acp/v1",
    &["--acp"],
    AcpCapabilities::BASELINE
        .with_load_session(true)
        .with_mcp(true, true),
)
.with_model_flag("--model")
.with_endpoint_var("CODEBUDDY_BASE_URL")
.with_empty_load_is_unknown()
.with_minimum_version(driver_codebuddy::MINIMUM_VERSION)
.with_vars(&[
    // As the headless driver: no marketplace fetch, no telemetry, no user id derived from
    // the key, no shell snapshot (with the environment, so the key) written under HOME.
    ("CODEBUDDY_SKIP_BUILTIN_MARKETPLACE", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("ACC_USER_ID", "agent-sdk"),
    ("ACC_USER_NICKNAME", "agent-sdk"),
    ("CODEBUDDY_DISABLE_SHELL_SNAPSHOT", "1"),
]);

/// How long a load must wait: the agent's state directory, the session id, the time.
pub(crate) type LoadWait =
    fn(&std::path::Path, &str, std::time::SystemTime) -> Option<std::time::Duration>;

/// Why an agent could not be registered. Names a field and a rule, never a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// A field breaks its rule.
    #[error("ACP agent `{field}`: {rule}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// The rule.
        rule: &'static str,
    },
    /// Another agent is registered under this name with another spec.
    #[error("an ACP agent of this name is registered already, with another spec")]
    Taken,
    /// The descriptor the agent's fields make is refused by `runtime-env`.
    #[error(transparent)]
    Descriptor(#[from] runtime_env::Error),
    /// An `initialize` answer could not be read.
    #[error("ACP initialize: {0}")]
    Initialize(&'static str),
}
