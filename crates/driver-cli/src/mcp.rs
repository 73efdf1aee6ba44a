//! [`EnvRefs`]: the parts of a CLI's MCP server config that every driver writes the same way,
//! with secrets as environment-variable *references* the CLI expands from its own
//! environment, so that only variable names reach the disk.
//!
//! [`mcp_servers`] checks the server names; [`EnvRefs`] writes one server's stdio fields and
//! headers. What differs per CLI stays a parameter or in the driver: how a reference is spelled and
//! what a plain value must not contain ([`EnvRefs::new`]), the keys of an entry (`type`,
//! `url` or `httpUrl`, …), which transports are supported, and the error the driver reports
//! (each converts [`McpRefError`] into its own).

mod env_refs;

pub use env_refs::EnvRefs;

use run_service::McpServer;
use serde_json::{Map, Value};

/// Which rule a value broke while being written as an MCP server config. Names a field and a
/// rule, never the value. Exhaustive, so that each driver maps it variant by variant into
/// its own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpRefError {
    /// The server name breaks [`is_mcp_server_name`].
    #[error("MCP server name is invalid ({len} bytes)")]
    InvalidServerName {
        /// Its length in bytes.
        len: usize,
    },
    /// Two servers share a name.
    #[error("MCP server name appears twice")]
    DuplicateServerName,
    /// A plain value holds the CLI's expansion syntax ([`EnvRefs::new`]'s `refused`).
    #[error("an MCP {field} contains the CLI's expansion syntax")]
    Expansion {
        /// Which field: `url`, `header`, `command`, `arg` or `env`.
        field: &'static str,
    },
    /// A variable name breaks [`is_env_var_name`].
    #[error("an MCP {field} names an invalid environment variable ({len} bytes)")]
    InvalidVarName {
        /// `bearer_token_env_var`, `env_headers` or `env`.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// An `Authorization` header was given as a plain header, not as a bearer variable.
    #[error("an MCP server has a plain Authorization header; use bearer_token_env_var")]
    PlainAuthorization,
    /// A header is given twice: plain and secret, twice as a secret in different case, or as
    /// a secret `Authorization` beside the bearer variable (names compare case-insensitively).
    #[error("an MCP server gives a header twice")]
    DuplicateHeader,
    /// A transport this driver does not know (a newer `run-service`).
    #[error("an MCP server has an unknown transport")]
    UnknownTransport,
}

/// One server's transport with every value checked and every secret a reference
/// ([`EnvRefs::entry`]): what each CLI's config writer turns into its own keys.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpEntry {
    /// A stdio server: `command`, `args` and `env` (its secrets as references).
    Stdio(Map<String, Value>),
    /// A streamable-HTTP or SSE server: its URL, and its headers with the bearer and the secret
    /// headers as references.
    Http {
        /// Whether it is SSE.
        sse: bool,
        /// The URL.
        url: Value,
        /// The headers.
        headers: Map<String, Value>,
    },
}

impl McpEntry {
    /// The entry as a CLI's config object, the URL under `url_key`: a stdio server's
    /// `command`, `args` and `env`; an HTTP or SSE server's URL and `headers`. The driver adds
    /// its own keys (`type`, …) and refuses the transports its CLI lacks.
    ///
    /// ```
    /// let entry = driver_cli::McpEntry::Stdio(Default::default());
    /// assert!(entry.into_fields("url").is_empty());
    /// ```
    pub fn into_fields(self, url_key: &str) -> Map<String, Value> {
        match self {
            Self::Stdio(stdio) => stdio,
            Self::Http { url, headers, .. } => Map::from_iter([
                (url_key.to_owned(), url),
                ("headers".to_owned(), Value::Object(headers)),
            ]),
        }
    }
}

impl McpRefError {
    /// The rule broken, in words, for [`ConfigError::invalid`](driver_spi::ConfigError::invalid).
    pub fn rule(&self) -> &'static str {
        match self {
            Self::InvalidServerName { .. } => {
                "server names must be 1-64 ASCII letters, digits, `-` or `_`"
            }
            Self::DuplicateServerName => "server names must be unique within a run",
            Self::Expansion { .. } => "values must not contain the CLI's variable expansion syntax",
            Self::InvalidVarName { .. } => "variable names must be [A-Za-z_][A-Za-z0-9_]*",
            Self::PlainAuthorization => "use bearer_token_env_var, not a plain header",
            Self::DuplicateHeader => {
                "a header is given once: plain or secret, and a secret Authorization never beside the bearer"
            }
            Self::UnknownTransport => "unknown MCP transport",
        }
    }
}

impl From<McpRefError> for driver_spi::DriverError {
    /// An invalid `mcp` configuration, naming the rule, never the value.
    fn from(err: McpRefError) -> Self {
        driver_spi::ConfigError::invalid("mcp", err.rule()).into()
    }
}

/// Whether `name` is an environment variable name every CLI can reference:
/// `[A-Za-z_][A-Za-z0-9_]*`, at most 256 bytes.
///
/// ```
/// assert!(driver_cli::is_env_var_name("UI_TOKEN"));
/// assert!(!driver_cli::is_env_var_name("A}B"));
/// ```
pub fn is_env_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 256
}

/// Whether `name` is an MCP server name the drivers accept: 1-64 ASCII letters, digits, `-`
/// or `_` (the CLIs build tool names such as `mcp__<server>__<tool>` from it).
///
/// ```
/// assert!(driver_cli::is_mcp_server_name("agent-ui"));
/// assert!(!driver_cli::is_mcp_server_name("a.b"));
/// ```
pub fn is_mcp_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The `mcpServers` map of `servers`: each under its name, which must pass
/// [`is_mcp_server_name`] and be unique, with the entry `entry` makes of it (the CLI's keys).
///
/// # Errors
/// [`McpRefError::InvalidServerName`] or [`McpRefError::DuplicateServerName`] (checked after
/// the entry is made), converted into the driver's error, or `entry`'s own error.
pub fn mcp_servers<E: From<McpRefError>>(
    servers: &[McpServer],
    mut entry: impl FnMut(&McpServer) -> Result<Map<String, Value>, E>,
) -> Result<Map<String, Value>, E> {
    let mut entries = Map::new();
    for server in servers {
        if !is_mcp_server_name(&server.name) {
            let len = server.name.len();
            return Err(McpRefError::InvalidServerName { len }.into());
        }
        let value = Value::Object(entry(server)?);
        if entries.insert(server.name.clone(), value).is_some() {
            return Err(McpRefError::DuplicateServerName.into());
        }
    }
    Ok(entries)
}
