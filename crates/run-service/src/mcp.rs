//! MCP server declarations: how an agent runtime reaches a tool server.

use std::collections::BTreeMap;

/// An MCP server the agent runtime should connect to.
///
/// Credentials never appear here: an HTTP server names the environment variable that carries
/// its bearer token ([`McpTransport::StreamableHttp::bearer_token_env_var`]) and those that
/// carry its secret headers ([`McpTransport::StreamableHttp::env_headers`]), and the values
/// travel as secret [`EnvBinding`](crate::EnvBinding)s of the owning service.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct McpServer {
    /// The server key the runtime knows it by (unique within a run), for example `agent-ui`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Whether the run must fail when the server is unavailable.
    pub required: bool,
}

/// The transport of an [`McpServer`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Non-secret environment; secrets go through the service's secret env.
        env: BTreeMap<String, String>,
    },
    /// MCP Streamable HTTP.
    StreamableHttp {
        /// Endpoint URL.
        url: String,
        /// Non-secret headers; an `Authorization` header is rejected by validation.
        headers: BTreeMap<String, String>,
        /// Name of the environment variable that carries the bearer token, never the token.
        bearer_token_env_var: Option<String>,
        /// Secret headers: header name → name of the environment variable that carries its
        /// value, never the value (a secret binding of the owning service, like the bearer).
        /// Empty in any request written before secret headers existed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env_headers: BTreeMap<String, String>,
    },
    /// MCP over server-sent events (legacy HTTP transport).
    Sse {
        /// Endpoint URL.
        url: String,
        /// Non-secret headers; an `Authorization` header is rejected by validation.
        headers: BTreeMap<String, String>,
        /// Name of the environment variable that carries the bearer token, never the token.
        bearer_token_env_var: Option<String>,
        /// Secret headers: header name → name of the environment variable that carries its
        /// value, never the value (a secret binding of the owning service, like the bearer).
        /// Empty in any request written before secret headers existed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env_headers: BTreeMap<String, String>,
    },
}

/// The kind of an [`McpTransport`], without its materialization.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TransportKind {
    /// [`McpTransport::Stdio`].
    Stdio,
    /// [`McpTransport::StreamableHttp`].
    StreamableHttp,
    /// [`McpTransport::Sse`].
    Sse,
}

impl TransportKind {
    /// A stable code for fingerprints; never reorder.
    pub(crate) fn code(self) -> u64 {
        match self {
            Self::Stdio => 1,
            Self::StreamableHttp => 2,
            Self::Sse => 3,
        }
    }
}

impl McpTransport {
    /// The transport kind.
    pub fn kind(&self) -> TransportKind {
        match self {
            Self::Stdio { .. } => TransportKind::Stdio,
            Self::StreamableHttp { .. } => TransportKind::StreamableHttp,
            Self::Sse { .. } => TransportKind::Sse,
        }
    }
}

impl McpServer {
    /// A stdio server.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
            required: false,
        }
    }

    /// A Streamable HTTP server.
    pub fn streamable_http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::StreamableHttp {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token_env_var: None,
                env_headers: BTreeMap::new(),
            },
            required: false,
        }
    }

    /// An SSE server.
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Sse {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token_env_var: None,
                env_headers: BTreeMap::new(),
            },
            required: false,
        }
    }

    /// Marks the server required (or not).
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Appends stdio arguments; no effect on HTTP transports.
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio { args: a, .. } = &mut self.transport {
            a.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Adds a non-secret stdio environment variable; no effect on HTTP transports.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(name.into(), value.into());
        }
        self
    }

    /// Adds a non-secret HTTP header; no effect on stdio.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::StreamableHttp { headers, .. } | McpTransport::Sse { headers, .. } => {
                headers.insert(name.into(), value.into());
            }
            McpTransport::Stdio { .. } => {}
        }
        self
    }

    /// Names the environment variable that carries the bearer token; no effect on stdio.
    pub fn with_bearer_token_env(mut self, env_var: impl Into<String>) -> Self {
        match &mut self.transport {
            McpTransport::StreamableHttp {
                bearer_token_env_var,
                ..
            }
            | McpTransport::Sse {
                bearer_token_env_var,
                ..
            } => *bearer_token_env_var = Some(env_var.into()),
            McpTransport::Stdio { .. } => {}
        }
        self
    }

    /// Adds a secret HTTP header: its value is the environment variable `env_var`, which the
    /// owning service binds as a secret [`EnvBinding`](crate::EnvBinding); the header's value
    /// is never part of the declaration. No effect on stdio.
    ///
    /// ```
    /// use run_service::{EnvBinding, McpServer, RunAttachment, ServiceRef, validate_run};
    ///
    /// let docs = McpServer::streamable_http("docs", "http://127.0.0.1:4101/mcp")
    ///     .with_secret_header("X-Api-Key", "DOCS_API_KEY");
    /// let service = ServiceRef::new("docs", "Docs")
    ///     .with_mcp(docs)
    ///     .with_secret_env(EnvBinding::new("DOCS_API_KEY", "the-key"));
    /// assert!(validate_run(&[RunAttachment::new([service])], &[]).is_ok());
    /// ```
    pub fn with_secret_header(
        mut self,
        header: impl Into<String>,
        env_var: impl Into<String>,
    ) -> Self {
        match &mut self.transport {
            McpTransport::StreamableHttp { env_headers, .. }
            | McpTransport::Sse { env_headers, .. } => {
                env_headers.insert(header.into(), env_var.into());
            }
            McpTransport::Stdio { .. } => {}
        }
        self
    }
}
