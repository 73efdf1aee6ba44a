//! [`AcpAgentBuilder`]: an ACP agent registered at run time by its command, with no Rust
//! type, and the registry of such agents ([`registered`]).

use std::sync::{Mutex, PoisonError};

use driver_cli::Runtime;
use runtime_env::{IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor};

use crate::agent::{AcpAgent, AcpCapabilities, RegisterError};
use crate::dialect::Acp;

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
