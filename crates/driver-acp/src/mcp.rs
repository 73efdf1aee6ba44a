//! The request's MCP servers as ACP declares them in `session/new`, `session/load`,
//! `session/resume` and `session/fork`: with concrete values, since the agent connects to
//! them itself. A bearer token or a stdio server's secret variable is a value of the
//! request's bindings, held in memory and written into the message only as it is sent
//! ([`Call::with_secret`]): never into a file, a log or an error.

use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    EnvVariable, HttpHeader, McpServer as AcpServer, McpServerHttp, McpServerSse, McpServerStdio,
};
use driver_cli::{Call, McpRefError, Turn, is_env_var_name, is_mcp_server_name};
use driver_spi::{ConfigError, DriverError, Request};
use run_service::{McpTransport, SecretString};

/// The value a secret's place holds until the message is written.
const PLACEHOLDER: &str = "";

/// A request's servers, declared, with the secrets to write into them.
#[derive(Debug)]
pub(crate) struct Servers {
    declared: Vec<AcpServer>,
    /// JSON pointers (under the params) and the secret values written there.
    secrets: Vec<(String, SecretString)>,
}

impl Servers {
    /// The servers as declared, secrets left out.
    pub(crate) fn declared(&self) -> Vec<AcpServer> {
        self.declared.clone()
    }

    /// `call` with the servers' secrets, to be written at their places.
    pub(crate) fn with_secrets(&self, call: Call) -> Call {
        self.secrets.iter().fold(call, |call, (pointer, value)| {
            call.with_secret(pointer.clone(), value.clone())
        })
    }
}

/// The process's working directory, which is the session's: the workspace, else the
/// environment's (Gemini files sessions by the directory its process runs in).
pub(crate) fn cwd(turn: &Turn<'_>) -> PathBuf {
    turn.request
        .workspace
        .as_deref()
        .map_or_else(|| turn.env.cwd().to_path_buf(), PathBuf::from)
}

/// The request's MCP servers, each with its bearer or secret variables from the request's
/// bindings.
///
/// # Errors
/// [`DriverError::InvalidConfig`] on `mcp` for an invalid or repeated name, a plain
/// `Authorization` header, an invalid variable name, a secret variable no binding of the
/// request carries, or an unknown transport; naming the rule, never a value.
pub(crate) fn servers(request: &Request) -> Result<Servers, DriverError> {
    let binding = |name: &str| request.runtime.secret(name).map(|b| b.value().clone());
    let unbound = || {
        DriverError::from(ConfigError::invalid(
            "mcp",
            "a secret variable of an MCP server is carried by no binding of the run",
        ))
    };
    let secret_names = request.mcp_secret_names();
    let mut declared = Vec::new();
    let mut secrets = Vec::new();
    for (i, server) in request.mcp.iter().enumerate() {
        let name = server.name.as_str();
        if !is_mcp_server_name(name) {
            return Err(McpRefError::InvalidServerName { len: name.len() }.into());
        }
        if request.mcp[..i].iter().any(|s| s.name == name) {
            return Err(McpRefError::DuplicateServerName.into());
        }
        let entry = match &server.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut vars: Vec<EnvVariable> = env
                    .iter()
                    .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
                    .collect();
                for var in secret_names.get(name).into_iter().flatten() {
                    if !is_env_var_name(var) {
                        return Err(McpRefError::InvalidVarName {
                            field: "env",
                            len: var.len(),
                        }
                        .into());
                    }
                    let value = binding(var).ok_or_else(unbound)?;
                    let pointer = format!("/mcpServers/{i}/env/{}/value", vars.len());
                    vars.push(EnvVariable::new(*var, PLACEHOLDER));
                    secrets.push((pointer, value));
                }
                AcpServer::Stdio(
                    McpServerStdio::new(name, command.as_str())
                        .args(args.clone())
                        .env(vars),
                )
            }
            McpTransport::StreamableHttp {
                url,
                headers,
                bearer_token_env_var,
            }
            | McpTransport::Sse {
                url,
                headers,
                bearer_token_env_var,
            } => {
                if headers
                    .keys()
                    .any(|h| h.eq_ignore_ascii_case("authorization"))
                {
                    return Err(McpRefError::PlainAuthorization.into());
                }
                let mut list: Vec<HttpHeader> = headers
                    .iter()
                    .map(|(k, v)| HttpHeader::new(k.clone(), v.clone()))
                    .collect();
                if let Some(var) = bearer_token_env_var {
                    if !is_env_var_name(var) {
                        return Err(McpRefError::InvalidVarName {
                            field: "bearer_token_env_var",
                            len: var.len(),
                        }
                        .into());
                    }
                    let token = binding(var).ok_or_else(unbound)?;
                    let pointer = format!("/mcpServers/{i}/headers/{}/value", list.len());
                    list.push(HttpHeader::new("Authorization", PLACEHOLDER));
                    secrets.push((pointer, bearer(&token)));
                }
                if matches!(server.transport, McpTransport::Sse { .. }) {
                    AcpServer::Sse(McpServerSse::new(name, url.as_str()).headers(list))
                } else {
                    AcpServer::Http(McpServerHttp::new(name, url.as_str()).headers(list))
                }
            }
            _ => return Err(McpRefError::UnknownTransport.into()),
        };
        declared.push(entry);
    }
    Ok(Servers { declared, secrets })
}

/// `Bearer <token>`, as a secret.
fn bearer(token: &SecretString) -> SecretString {
    use secrecy::ExposeSecret as _;
    SecretString::from(format!("Bearer {}", token.expose_secret()))
}
