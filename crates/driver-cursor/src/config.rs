//! The request's MCP servers as Cursor's `mcp.json`, with secrets as `${env:VAR}` references
//! that Cursor expands from its own environment.
//!
//! Format: `{"mcpServers": {name: {"url", "headers"} | {"command", "args", "env"}}}`, as in
//! <https://cursor.com/docs/cli/mcp.md> (the CLI reads the editor's `mcp.json`); the
//! `"Bearer ${env:VAR}"` header form is Cursor's documented config interpolation (third-party
//! setup guides such as <https://userjot.com/docs/mcp-cursor> show it for the CLI too).

use std::collections::BTreeMap;

use driver_stream_json::McpConfigError;
use run_service::{McpServer, McpTransport};
use serde_json::{Map, Value, json};

fn is_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 256
}

fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A plain value. `${` is refused: Cursor expands `${env:…}`, `${userHome}` and kin in this
/// file, so a request value could pull another variable (an API key) into a URL or header.
fn plain(field: &'static str, value: &str) -> Result<Value, McpConfigError> {
    if value.contains("${") {
        return Err(McpConfigError::Expansion { field });
    }
    Ok(Value::String(value.to_owned()))
}

fn var_ref(field: &'static str, name: &str) -> Result<String, McpConfigError> {
    if !is_var_name(name) {
        return Err(McpConfigError::InvalidVarName {
            field,
            len: name.len(),
        });
    }
    Ok(format!("${{env:{name}}}"))
}

/// The `mcp.json` for `servers`.
///
/// - Streamable HTTP → `{"url", "headers"}`; the bearer travels as `"Authorization": "Bearer
///   ${env:VAR}"`, so only the variable's *name* is on disk.
/// - stdio → `{"command", "args", "env"}`; each name in `secret_env[server]` is added to `env`
///   as `"NAME": "${env:NAME}"`, forwarded from Cursor's environment.
/// - No value may contain `${`, names are 1-64 ASCII letters, digits, `-` or `_`, and a plain
///   `Authorization` header is refused (use `bearer_token_env_var`).
///
/// # Errors
/// [`McpConfigError`] naming the rule; SSE servers are refused before this (the driver does
/// not declare the transport) and any other transport is an invalid server.
pub(crate) fn mcp_json(
    servers: &[McpServer],
    secret_env: &BTreeMap<&str, Vec<&str>>,
) -> Result<Value, McpConfigError> {
    let mut entries = Map::new();
    for server in servers {
        if !is_server_name(&server.name) {
            return Err(McpConfigError::InvalidServerName {
                len: server.name.len(),
            });
        }
        let entry = match &server.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut vars = Map::new();
                for (name, value) in env {
                    if !is_var_name(name) {
                        return Err(McpConfigError::InvalidVarName {
                            field: "env",
                            len: name.len(),
                        });
                    }
                    vars.insert(name.clone(), plain("env", value)?);
                }
                for name in secret_env.get(server.name.as_str()).into_iter().flatten() {
                    vars.insert((*name).to_owned(), Value::String(var_ref("env", name)?));
                }
                let args = args
                    .iter()
                    .map(|a| plain("arg", a))
                    .collect::<Result<Vec<_>, _>>()?;
                json!({"command": plain("command", command)?, "args": args, "env": vars})
            }
            McpTransport::StreamableHttp {
                url,
                headers,
                bearer_token_env_var,
            } => {
                let mut out = Map::new();
                for (name, value) in headers {
                    if name.eq_ignore_ascii_case("authorization") {
                        return Err(McpConfigError::PlainAuthorization);
                    }
                    if name.contains("${") {
                        return Err(McpConfigError::Expansion { field: "header" });
                    }
                    out.insert(name.clone(), plain("header", value)?);
                }
                if let Some(var) = bearer_token_env_var {
                    let reference = var_ref("bearer_token_env_var", var)?;
                    out.insert(
                        "Authorization".to_owned(),
                        Value::String(format!("Bearer {reference}")),
                    );
                }
                json!({"url": plain("url", url)?, "headers": out})
            }
            _ => return Err(McpConfigError::InvalidServerName { len: 0 }),
        };
        if entries.insert(server.name.clone(), entry).is_some() {
            return Err(McpConfigError::DuplicateServerName);
        }
    }
    Ok(json!({ "mcpServers": entries }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn http_servers_carry_the_bearer_as_an_env_reference() {
        let server = McpServer::streamable_http("agent-ui", "http://127.0.0.1:4101/mcp")
            .with_header("X-Tenant", "t1")
            .with_bearer_token_env("UI_TOKEN");
        let config = mcp_json(&[server], &BTreeMap::new()).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"agent-ui": {
                "url": "http://127.0.0.1:4101/mcp",
                "headers": {"X-Tenant": "t1", "Authorization": "Bearer ${env:UI_TOKEN}"}
            }}})
        );
    }

    #[test]
    fn stdio_servers_forward_their_secrets_by_reference() {
        let server = McpServer::stdio("files", "/usr/bin/files-mcp")
            .with_args(["--root", "/srv"])
            .with_env("MODE", "ro");
        let secrets = BTreeMap::from([("files", vec!["FILES_TOKEN"])]);
        assert_eq!(
            mcp_json(&[server], &secrets).unwrap(),
            json!({"mcpServers": {"files": {
                "command": "/usr/bin/files-mcp", "args": ["--root", "/srv"],
                "env": {"MODE": "ro", "FILES_TOKEN": "${env:FILES_TOKEN}"}
            }}})
        );
    }

    #[test]
    fn expansions_bad_names_and_plain_authorization_are_refused() {
        let none = BTreeMap::new();
        let url = McpServer::streamable_http("a", "http://x/${env:CURSOR_API_KEY}");
        assert_eq!(
            mcp_json(&[url], &none),
            Err(McpConfigError::Expansion { field: "url" })
        );
        let header = McpServer::streamable_http("a", "http://x").with_header("X", "${userHome}");
        assert_eq!(
            mcp_json(&[header], &none),
            Err(McpConfigError::Expansion { field: "header" })
        );
        let auth = McpServer::streamable_http("a", "http://x").with_header("Authorization", "x");
        assert_eq!(
            mcp_json(&[auth], &none),
            Err(McpConfigError::PlainAuthorization)
        );
        let var = McpServer::streamable_http("a", "http://x").with_bearer_token_env("A}B");
        assert!(matches!(
            mcp_json(&[var], &none),
            Err(McpConfigError::InvalidVarName { .. })
        ));
        let secret = BTreeMap::from([("s", vec!["NOT-A-NAME"])]);
        assert!(matches!(
            mcp_json(&[McpServer::stdio("s", "run")], &secret),
            Err(McpConfigError::InvalidVarName { .. })
        ));
        for name in ["", "a.b", "a b", &"x".repeat(65)] {
            assert!(matches!(
                mcp_json(&[McpServer::streamable_http(name, "http://x")], &none),
                Err(McpConfigError::InvalidServerName { .. })
            ));
        }
        let s = McpServer::streamable_http("a", "http://x");
        assert_eq!(
            mcp_json(&[s.clone(), s], &none),
            Err(McpConfigError::DuplicateServerName)
        );
        assert_eq!(
            mcp_json(&[McpServer::sse("a", "http://x")], &none),
            Err(McpConfigError::InvalidServerName { len: 0 })
        );
    }

    #[test]
    fn no_servers_is_an_empty_map() {
        assert_eq!(
            mcp_json(&[], &BTreeMap::new()).unwrap(),
            json!({"mcpServers": {}})
        );
    }
}
