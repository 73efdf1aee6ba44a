//! [`AcpAgent`]: what the driver knows of one ACP agent (its command line, variables and
//! capabilities), the registry entries of the agents this workspace tests, and
//! [`AcpAgentBuilder`]: an agent registered at run time by its command, with no Rust type.

use std::sync::{Mutex, PoisonError};

use driver_cli::{Identity, NewSessionId, Runtime};
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor};
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
/// [`CODEBUDDY`]) and [`AcpAgentBuilder::register`] make one.
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

/// An ACP agent registered at run time: its command line, the variables it needs (its key as
/// a secret), where it keeps its state and what it can do. [`register`](Self::register)
/// makes its registry entry, which builds drivers like every other
/// ([`Runtime::driver`]).
///
/// ```
/// use driver_acp::{AcpAgentBuilder, AcpCapabilities};
///
/// let entry = AcpAgentBuilder::new("my_agent", "my-agent")
///     .arg("--acp")
///     .key_var("MY_AGENT_API_KEY")
///     .endpoint_var("MY_AGENT_BASE_URL")
///     .state("MY_AGENT_HOME", ".my-agent")
///     .capabilities(AcpCapabilities::BASELINE.with_load_session(true).with_mcp(true, false))
///     .register()?;
/// assert_eq!(entry.name, "my_agent");
/// assert!(std::ptr::eq(driver_acp::registered("my_agent").unwrap(), entry));
/// # Ok::<(), driver_acp::RegisterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpAgentBuilder {
    name: String,
    program: String,
    args: Vec<String>,
    key_vars: Vec<String>,
    endpoint_var: Option<String>,
    model_flag: Option<String>,
    auth_method: Option<String>,
    empty_load_is_unknown: bool,
    vars: Vec<(String, String)>,
    state_var: Option<String>,
    state_subdir: String,
    capabilities: AcpCapabilities,
}

impl AcpAgentBuilder {
    /// An agent named `name` (`[a-z][a-z0-9_]*`, the registry name) started as `program`
    /// (a name looked up in the child's `PATH`, or a path; a host may name another binary
    /// when it builds the driver). Without more, it takes no key, no endpoint and no model,
    /// keeps its state in the namespace's HOME, and has the protocol's baseline capabilities.
    pub fn new(name: impl Into<String>, program: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            key_vars: Vec::new(),
            endpoint_var: None,
            model_flag: None,
            auth_method: None,
            empty_load_is_unknown: false,
            vars: Vec::new(),
            state_var: None,
            state_subdir: String::new(),
            capabilities: AcpCapabilities::BASELINE,
        }
    }

    /// The agent's registry name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn program_path(&self) -> &std::path::Path {
        std::path::Path::new(&self.program)
    }

    pub(crate) fn arguments(&self) -> &[String] {
        &self.args
    }

    pub(crate) fn plain_vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// One more argument after the program.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// One more variable that carries the agent's key (a credential variable such as
    /// `*_API_KEY`); the first is where a host's key goes. It reaches the agent only as a
    /// secret.
    pub fn key_var(mut self, var: impl Into<String>) -> Self {
        self.key_vars.push(var.into());
        self
    }

    /// The variable that takes the model endpoint.
    pub fn endpoint_var(mut self, var: impl Into<String>) -> Self {
        self.endpoint_var = Some(var.into());
        self
    }

    /// The flag that takes the model (`--model`).
    pub fn model_flag(mut self, flag: impl Into<String>) -> Self {
        self.model_flag = Some(flag.into());
        self
    }

    /// The `authenticate` method to call after `initialize`.
    pub fn auth_method(mut self, method: impl Into<String>) -> Self {
        self.auth_method = Some(method.into());
        self
    }

    /// Whether a `session/load` that replays no history means the session is unknown, for an
    /// agent that answers a load of an unknown id as a success.
    pub fn empty_load_is_unknown(mut self, unknown: bool) -> Self {
        self.empty_load_is_unknown = unknown;
        self
    }

    /// A plain variable for every process (never a credential: those are refused).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// Where the agent keeps its state: the variable that relocates it and its directory
    /// under the namespace's HOME. Without it, the agent's state is the namespace's HOME
    /// itself (the variable `<NAME>_HOME` is set, and ignored by the agent).
    pub fn state(mut self, var: impl Into<String>, subdir: impl Into<String>) -> Self {
        self.state_var = Some(var.into());
        self.state_subdir = subdir.into();
        self
    }

    /// What the agent can do (declared; or learned from a real `initialize`:
    /// [`learn`](Self::learn)).
    pub fn capabilities(mut self, capabilities: AcpCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Registers the agent, for the life of the process: its entry, found again by
    /// [`registered`]. Registering the same spec twice returns the first entry.
    ///
    /// An entry lives as long as the process (registries hold `'static` entries), so a host
    /// registers each agent once, at start-up: each distinct registration keeps a few hundred
    /// bytes.
    ///
    /// # Errors
    /// [`RegisterError::Invalid`] for a field that breaks its rule, [`RegisterError::Taken`]
    /// for a name registered with another spec, [`RegisterError::Descriptor`] when the
    /// descriptor is refused (a key variable that is not a credential variable, say).
    pub fn register(self) -> Result<&'static Runtime, RegisterError> {
        let mut registry = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((spec, entry)) = registry.iter().find(|(spec, _)| spec.name == self.name) {
            return if *spec == self {
                Ok(*entry)
            } else {
                Err(RegisterError::Taken)
            };
        }
        let entry = self.entry()?;
        registry.push((self, entry));
        Ok(entry)
    }

    /// The checked, leaked entry.
    fn entry(&self) -> Result<&'static Runtime, RegisterError> {
        let invalid = |field, rule| RegisterError::Invalid { field, rule };
        if !is_name(&self.name) || crate::is_static_name(&self.name) {
            return Err(invalid(
                "name",
                "must be [a-z][a-z0-9_]*, at most 64 bytes, and not a built-in runtime's",
            ));
        }
        if self.program.is_empty() || self.program.contains('\0') {
            return Err(invalid("program", "must be a non-empty name or path"));
        }
        if self.args.iter().any(|a| a.contains('\0')) {
            return Err(invalid("args", "must not contain NUL"));
        }
        for (name, _) in &self.vars {
            if !driver_cli::is_env_var_name(name) || runtime_env::is_credential_var(name) {
                return Err(invalid(
                    "vars",
                    "names must be variable names, and not credentials (use key_var)",
                ));
            }
        }
        let checked_name = |field, value: &Option<String>| match value {
            Some(v) if !driver_cli::is_env_var_name(v) => {
                Err(invalid(field, "must be a variable name"))
            }
            _ => Ok(()),
        };
        checked_name("endpoint_var", &self.endpoint_var)?;
        let upper = self.name.to_ascii_uppercase();
        let state_var = leak(
            self.state_var
                .clone()
                .unwrap_or_else(|| format!("{upper}_HOME")),
        );
        let key_vars: Vec<&'static str> = self.key_vars.iter().map(|v| leak(v.clone())).collect();
        let endpoint_vars: Vec<&'static str> =
            self.endpoint_var.iter().map(|v| leak(v.clone())).collect();
        let descriptor = RuntimeDescriptor {
            name: leak(self.name.clone()),
            program: leak(self.program.clone()),
            state_var,
            state_subdir: leak(self.state_subdir.clone()),
            state_dir_must_exist: false,
            private_subdirs: &[],
            sources: &[],
            credential_files: &[],
            api_key_vars: key_vars.leak(),
            endpoint_vars: endpoint_vars.leak(),
            keyring: KeyringUse::Possible,
            mcp: McpMechanism::InRequest,
            supported_modes: &[IsolationMode::Subprocess],
        };
        descriptor.validate()?;
        let name = descriptor.name;
        let vars: Vec<(&'static str, &'static str)> = self
            .vars
            .iter()
            .map(|(k, v)| (leak(k.clone()), leak(v.clone())))
            .collect();
        let args: Vec<&'static str> = self.args.iter().map(|a| leak(a.clone())).collect();
        let mut agent = AcpAgent::new(
            name,
            leak(format!("{name} (ACP)")),
            leak(format!("{name}/acp/v1")),
            args.leak(),
            self.capabilities,
        )
        .with_vars(vars.leak());
        agent.model_flag = self.model_flag.clone().map(leak);
        agent.endpoint_var = descriptor.endpoint_vars.first().copied();
        agent.auth_method = self.auth_method.clone().map(leak);
        agent.empty_load_is_unknown = self.empty_load_is_unknown;
        let agent: &'static AcpAgent = Box::leak(Box::new(agent));
        let key_var = descriptor.api_key_vars.first().copied().unwrap_or("");
        let bin_var = leak(format!("{upper}_BIN"));
        let runtime = Runtime::new::<Acp>(descriptor, bin_var, key_var).with_spec(agent);
        Ok(Box::leak(Box::new(runtime)))
    }
}

/// The agents registered at run time, with the specs they were registered with.
static REGISTERED: Mutex<Vec<(AcpAgentBuilder, &'static Runtime)>> = Mutex::new(Vec::new());

/// The entry of the agent registered at run time under `name`.
pub fn registered(name: &str) -> Option<&'static Runtime> {
    REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|(spec, _)| spec.name == name)
        .map(|(_, entry)| *entry)
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn is_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && name.len() <= 64
}
