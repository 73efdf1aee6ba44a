//! The request's MCP servers as ACP declares them in `session/new`, `session/load`,
//! `session/resume` and `session/fork`: with concrete values, since the agent connects to
//! them itself. A bearer token, a secret header or a stdio server's secret variable is a
//! value of the request's bindings, held in memory and written into the message only as it
//! is sent ([`Call::with_secret`]): never into a file, a log or an error.

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

/// The request's MCP servers, each with its bearer, secret headers or secret variables from
/// the request's bindings.
///
/// # Errors
/// [`DriverError::InvalidConfig`] on `mcp` for an invalid or repeated name, a plain
/// `Authorization` header, a header given twice, an invalid variable name, a secret variable
/// no binding of the request carries, or an unknown transport; naming the rule, never a
/// value.
pub(crate) fn servers(request: &Request) -> Result<Servers, DriverError> {
    // The value of a request's binding `var`, once `var` is checked as a name (of `field`).
    let binding = |field: &'static str, var: &str| {
        if !is_env_var_name(var) {
            let len = var.len();
            return Err(DriverError::from(McpRefError::InvalidVarName {
                field,
                len,
            }));
        }
        let value = request.runtime.secret(var).map(|b| b.value().clone());
        value.ok_or_else(|| {
            DriverError::from(ConfigError::invalid(
                "mcp",
                "a secret variable of an MCP server is carried by no binding of the run",
            ))
        })
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
                    let value = binding("env", var)?;
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
                env_headers,
            }
            | McpTransport::Sse {
                url,
                headers,
                bearer_token_env_var,
                env_headers,
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
                // The bearer, then each secret header: declared by name, its value written
                // only on the wire.
                let bearer_header = bearer_token_env_var
                    .iter()
                    .map(|var| ("Authorization", var, "bearer_token_env_var"));
                let secret_headers = env_headers
                    .iter()
                    .map(|(header, var)| (header.as_str(), var, "env_headers"));
                for (header, var, field) in bearer_header.chain(secret_headers) {
                    if list.iter().any(|h| h.name.eq_ignore_ascii_case(header)) {
                        return Err(McpRefError::DuplicateHeader.into());
                    }
                    let value = binding(field, var)?;
                    let value = if field == "bearer_token_env_var" {
                        bearer(&value)
                    } else {
                        value
                    };
                    let pointer = format!("/mcpServers/{i}/headers/{}/value", list.len());
                    list.push(HttpHeader::new(header, PLACEHOLDER));
                    secrets.push((pointer, value));
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use compat_fingerprint::{Fingerprint, Kind};
    use driver_spi::{ProfilePayload, RuntimePayload};
    use run_service::{EnvBinding, ExposeSecret as _, McpServer, RunId, ServiceRef};

    const KEY: &str = "s3cr3t-api-key";

    fn request(mcp: McpServer, bound: &[(&str, &str)]) -> Request {
        const K: Kind = Kind::new("driver-acp mcp test v1");
        let fp = Fingerprint::of(K, |e| e.str("p"));
        let service = bound.iter().fold(
            ServiceRef::new("docs", "Docs").with_mcp(mcp.clone()),
            |s, (name, value)| s.with_secret_env(EnvBinding::new(*name, *value)),
        );
        Request::new(RunId::new("r"), "hi", ProfilePayload::new(fp, fp))
            .with_runtime(RuntimePayload::from_services([service]))
            .with_mcp([mcp])
    }

    #[test]
    fn a_secret_header_is_declared_by_name_and_written_only_at_its_pointer() {
        let mcp = McpServer::sse("docs", "http://127.0.0.1:1/sse")
            .with_header("X-Tenant", "t1")
            .with_bearer_token_env("DOCS_TOKEN")
            .with_secret_header("X-Api-Key", "DOCS_API_KEY");
        let request = request(mcp, &[("DOCS_TOKEN", "tok"), ("DOCS_API_KEY", KEY)]);
        let servers = servers(&request).unwrap();
        let declared = serde_json::to_value(servers.declared()).unwrap();
        assert_eq!(
            declared[0]["headers"],
            serde_json::json!([
                {"name": "X-Tenant", "value": "t1"},
                {"name": "Authorization", "value": PLACEHOLDER},
                {"name": "X-Api-Key", "value": PLACEHOLDER}
            ])
        );
        let secrets: Vec<(&str, &str)> = servers
            .secrets
            .iter()
            .map(|(pointer, value)| (pointer.as_str(), value.expose_secret()))
            .collect();
        assert_eq!(
            secrets,
            [
                ("/mcpServers/0/headers/1/value", "Bearer tok"),
                ("/mcpServers/0/headers/2/value", KEY)
            ]
        );
        assert!(!format!("{servers:?}").contains(KEY));
    }

    #[test]
    fn a_secret_header_twice_or_unbound_is_refused_without_its_value() {
        let http = || McpServer::streamable_http("docs", "http://127.0.0.1:1/mcp");
        let cases = [
            http()
                .with_header("x-api-key", "plain")
                .with_secret_header("X-Api-Key", "DOCS_API_KEY"),
            http()
                .with_bearer_token_env("DOCS_API_KEY")
                .with_secret_header("Authorization", "DOCS_API_KEY"),
            http().with_secret_header("X-Api-Key", "NOT_BOUND"),
            http().with_secret_header("X-Api-Key", "A}B"),
        ];
        for mcp in cases {
            let err = servers(&request(mcp, &[("DOCS_API_KEY", KEY)])).unwrap_err();
            assert!(matches!(err, DriverError::InvalidConfig(_)), "{err:?}");
            assert!(!format!("{err} {err:?}").contains(KEY));
        }
    }
}
