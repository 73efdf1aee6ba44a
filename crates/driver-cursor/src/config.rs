//! The request's MCP servers as Cursor's `mcp.json`, with secrets as `${env:VAR}` references
//! that Cursor expands from its own environment.
//!
//! Format: `{"mcpServers": {name: {"url", "headers"} | {"command", "args", "env"}}}`, as in
//! <https://cursor.com/docs/cli/mcp.md> (the CLI reads the editor's `mcp.json`); the
//! `"Bearer ${env:VAR}"` header form is Cursor's documented config interpolation (third-party
//! setup guides such as <https://userjot.com/docs/mcp-cursor> show it for the CLI too).

use std::collections::BTreeMap;

use driver_cli::{EnvRefs, mcp_servers};
use driver_stream_json::McpConfigError;
use run_service::{McpServer, McpTransport};
use serde_json::{Map, Value, json};

/// Cursor expands `${env:…}`, `${userHome}` and kin in this file, so `${` in a plain value is
/// refused: a request value could pull another variable (an API key) into a URL or header.
const REFS: EnvRefs = EnvRefs::new("${env:", "}", "${");

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
    let entries = mcp_servers(servers, |server| match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            let secrets = secret_env.get(server.name.as_str());
            let secrets = secrets.map_or(&[][..], Vec::as_slice);
            Ok(REFS.stdio(command, args, env, secrets)?)
        }
        McpTransport::StreamableHttp {
            url,
            headers,
            bearer_token_env_var,
        } => {
            let headers = REFS.headers(headers, bearer_token_env_var.as_deref())?;
            let mut entry = Map::new();
            entry.insert("url".to_owned(), REFS.plain("url", url)?);
            entry.insert("headers".to_owned(), Value::Object(headers));
            Ok(entry)
        }
        _ => Err(McpConfigError::InvalidServerName { len: 0 }),
    })?;
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
