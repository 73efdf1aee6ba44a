//! The request's MCP servers as Cursor's `mcp.json`, with secrets as `${env:VAR}` references
//! that Cursor expands from its own environment.
//!
//! Format: `{"mcpServers": {name: {"url", "headers"} | {"command", "args", "env"}}}`, as in
//! <https://cursor.com/docs/cli/mcp.md> (the CLI reads the editor's `mcp.json`); the
//! `"Bearer ${env:VAR}"` header form is Cursor's documented config interpolation (third-party
//! setup guides such as <https://userjot.com/docs/mcp-cursor> show it for the CLI too).
//!
//! Cursor has no per-run MCP flag: it reads `<CURSOR_CONFIG_DIR>/mcp.json`, one file per
//! namespace. So the file is a [`ConfigFiles::Namespace`] file: the shared driver takes the
//! namespace's turn lock (`<CURSOR_CONFIG_DIR>/sdk-turn.lock`, an advisory lock that also
//! holds across processes) before it writes the file, and keeps it until the process has
//! ended and the file is put back as it was.

use std::collections::BTreeMap;

use driver_cli::{ConfigFiles, EnvRefs, McpEntry, McpRefError, NamespaceConfig, mcp_servers};
use driver_spi::{DriverError, Request};
use run_service::McpServer;
use serde_json::{Value, json};

/// Cursor expands `${env:…}`, `${userHome}` and kin in this file, so `${` in a plain value is
/// refused: a request value could pull another variable (an API key) into a URL or header.
const REFS: EnvRefs = EnvRefs::new("${env:", "}", "${");

/// The file Cursor reads its MCP servers from, in its config directory.
const MCP_FILE: &str = "mcp.json";

/// The request's `mcp.json`, installed in the namespace for one turn.
///
/// # Errors
/// [`DriverError::InvalidConfig`] naming the broken rule (see [`mcp_json`]).
pub(crate) fn mcp_file(request: &Request) -> Result<ConfigFiles, DriverError> {
    let config = mcp_json(&request.mcp, &request.mcp_secret_names())?;
    let contents = config.to_string().into_bytes();
    Ok(ConfigFiles::Namespace(NamespaceConfig {
        paths: vec![MCP_FILE.to_owned()],
        // Only the request's servers: the namespace's own file is put back after the turn.
        contents: Box::new(move |_| vec![Some(contents)]),
    }))
}

/// The `mcp.json` for `servers`.
///
/// - Streamable HTTP → `{"url", "headers"}`; the bearer travels as `"Authorization": "Bearer
///   ${env:VAR}"` and each secret header as `"Name": "${env:VAR}"`, so only the variables'
///   *names* are on disk.
/// - stdio → `{"command", "args", "env"}`; each name in `secret_env[server]` is added to `env`
///   as `"NAME": "${env:NAME}"`, forwarded from Cursor's environment.
/// - No value may contain `${`, names are 1-64 ASCII letters, digits, `-` or `_`, and a plain
///   `Authorization` header is refused (use `bearer_token_env_var`).
///
/// # Errors
/// [`McpRefError`] naming the rule; SSE servers are refused before this (the driver does not
/// declare the transport) and are [`McpRefError::UnknownTransport`] here, as is any other.
pub(crate) fn mcp_json(
    servers: &[McpServer],
    secret_env: &BTreeMap<&str, Vec<&str>>,
) -> Result<Value, McpRefError> {
    let entries = mcp_servers(servers, |server| match REFS.entry(server, secret_env)? {
        McpEntry::Http { sse: true, .. } => Err(McpRefError::UnknownTransport),
        entry => Ok(entry.into_fields("url")),
    })?;
    Ok(json!({ "mcpServers": entries }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn http_servers_carry_the_bearer_and_secret_headers_as_env_references() {
        let server = McpServer::streamable_http("agent-ui", "http://127.0.0.1:4101/mcp")
            .with_header("X-Tenant", "t1")
            .with_bearer_token_env("UI_TOKEN")
            .with_secret_header("X-Api-Key", "UI_KEY");
        let config = mcp_json(&[server], &BTreeMap::new()).unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"agent-ui": {
                "url": "http://127.0.0.1:4101/mcp",
                "headers": {
                    "X-Tenant": "t1",
                    "Authorization": "Bearer ${env:UI_TOKEN}",
                    "X-Api-Key": "${env:UI_KEY}"
                }
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
            Err(McpRefError::Expansion { field: "url" })
        );
        let header = McpServer::streamable_http("a", "http://x").with_header("X", "${userHome}");
        assert_eq!(
            mcp_json(&[header], &none),
            Err(McpRefError::Expansion { field: "header" })
        );
        let auth = McpServer::streamable_http("a", "http://x").with_header("Authorization", "x");
        assert_eq!(
            mcp_json(&[auth], &none),
            Err(McpRefError::PlainAuthorization)
        );
        let var = McpServer::streamable_http("a", "http://x").with_bearer_token_env("A}B");
        assert!(matches!(
            mcp_json(&[var], &none),
            Err(McpRefError::InvalidVarName { .. })
        ));
        let secret = BTreeMap::from([("s", vec!["NOT-A-NAME"])]);
        assert!(matches!(
            mcp_json(&[McpServer::stdio("s", "run")], &secret),
            Err(McpRefError::InvalidVarName { .. })
        ));
        for name in ["", "a.b", "a b", &"x".repeat(65)] {
            assert!(matches!(
                mcp_json(&[McpServer::streamable_http(name, "http://x")], &none),
                Err(McpRefError::InvalidServerName { .. })
            ));
        }
        let s = McpServer::streamable_http("a", "http://x");
        assert_eq!(
            mcp_json(&[s.clone(), s], &none),
            Err(McpRefError::DuplicateServerName)
        );
        assert_eq!(
            mcp_json(&[McpServer::sse("a", "http://x")], &none),
            Err(McpRefError::UnknownTransport)
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
