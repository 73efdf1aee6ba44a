//! The `--mcp-config` file both CLIs read: `{"mcpServers": {...}}`, with secrets as `${VAR}`
//! references that the CLI expands from its own environment.

use std::collections::BTreeMap;

use driver_cli::{EnvRefs, McpEntry, McpRefError, mcp_servers};
use run_service::McpServer;
use serde_json::{Value, json};

/// What differs between the CLIs' dialects of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpDialect {
    /// Written as `"defer_loading"` on every server when set (CodeBuddy defers MCP tools
    /// behind a search tool unless it is `false`).
    pub defer_loading: Option<bool>,
}

impl McpDialect {
    /// The plain dialect: nothing beyond the common fields.
    pub const fn new() -> Self {
        Self {
            defer_loading: None,
        }
    }

    /// The dialect with `defer_loading` set.
    pub const fn with_defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = Some(defer);
        self
    }
}

/// Both CLIs expand `${VAR}` in the file; `${` in a plain value is refused.
const REFS: EnvRefs = EnvRefs::new("${", "}", "${");

/// The `--mcp-config` JSON for `servers`.
///
/// - Streamable HTTP → `{"type":"http","url",headers}`, SSE → `{"type":"sse",…}`; the bearer
///   travels as `"Authorization": "Bearer ${VAR}"` and each secret header as
///   `"Name": "${VAR}"`, so only the variables' *names* are on disk.
/// - stdio → `{"type":"stdio","command","args","env"}`; each name in `secret_env[server]` is
///   added to `env` as `"NAME": "${NAME}"`, forwarded from the CLI's environment.
/// - No value may contain `${` (see [`McpRefError::Expansion`]).
///
/// # Errors
/// [`McpRefError`] for an invalid or duplicate name, a value with `${`, an invalid
/// variable name or a plain `Authorization` header.
pub(crate) fn mcp_config(
    servers: &[McpServer],
    secret_env: &BTreeMap<&str, Vec<&str>>,
    dialect: McpDialect,
) -> Result<Value, McpRefError> {
    let entries = mcp_servers(servers, |server| {
        let entry = REFS.entry(server, secret_env)?;
        let transport = match &entry {
            McpEntry::Stdio(_) => "stdio",
            McpEntry::Http { sse: true, .. } => "sse",
            McpEntry::Http { .. } => "http",
            _ => return Err(McpRefError::UnknownTransport),
        };
        let mut entry = entry.into_fields("url");
        entry.insert("type".to_owned(), json!(transport));
        if let Some(defer) = dialect.defer_loading {
            entry.insert("defer_loading".to_owned(), Value::Bool(defer));
        }
        Ok(entry)
    })?;
    Ok(json!({ "mcpServers": entries }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn stdio_servers_forward_their_secrets_by_reference() {
        let server = McpServer::stdio("files", "/usr/bin/files-mcp")
            .with_args(["--root", "/srv"])
            .with_env("MODE", "ro");
        let secrets = BTreeMap::from([("files", vec!["FILES_TOKEN"])]);
        let config = mcp_config(
            &[server],
            &secrets,
            McpDialect::default().with_defer_loading(false),
        )
        .unwrap();
        assert_eq!(
            config,
            json!({"mcpServers": {"files": {
                "type": "stdio", "command": "/usr/bin/files-mcp", "args": ["--root", "/srv"],
                "env": {"MODE": "ro", "FILES_TOKEN": "${FILES_TOKEN}"}, "defer_loading": false
            }}})
        );
    }

    #[test]
    fn expansions_names_and_plain_authorization_are_refused() {
        let none = BTreeMap::new();
        let d = McpDialect::default();
        let url = McpServer::streamable_http("a", "http://x/${ANTHROPIC_API_KEY}");
        assert_eq!(
            mcp_config(&[url], &none, d),
            Err(McpRefError::Expansion { field: "url" })
        );
        let header = McpServer::streamable_http("a", "http://x").with_header("X-Key", "${HOME}");
        assert_eq!(
            mcp_config(&[header], &none, d),
            Err(McpRefError::Expansion { field: "header" })
        );
        let auth =
            McpServer::streamable_http("a", "http://x").with_header("authorization", "Bearer x");
        assert_eq!(
            mcp_config(&[auth], &none, d),
            Err(McpRefError::PlainAuthorization)
        );
        let var = McpServer::streamable_http("a", "http://x").with_bearer_token_env("BAD}NAME");
        assert!(matches!(
            mcp_config(&[var], &none, d),
            Err(McpRefError::InvalidVarName { .. })
        ));
        for name in ["", "a.b", "a b", &"x".repeat(65)] {
            let s = McpServer::streamable_http(name, "http://x");
            assert!(matches!(
                mcp_config(&[s], &none, d),
                Err(McpRefError::InvalidServerName { .. })
            ));
        }
        let s = McpServer::streamable_http("a", "http://x");
        assert_eq!(
            mcp_config(&[s.clone(), s], &none, d),
            Err(McpRefError::DuplicateServerName)
        );
        let arg = McpServer::stdio("s", "run").with_args(["${OPENAI_API_KEY}"]);
        assert_eq!(
            mcp_config(&[arg], &none, d),
            Err(McpRefError::Expansion { field: "arg" })
        );
    }

    #[test]
    fn sse_servers_keep_their_type() {
        let s = McpServer::sse("legacy", "http://127.0.0.1:1/sse").with_bearer_token_env("T");
        let config = mcp_config(&[s], &BTreeMap::new(), McpDialect::default()).unwrap();
        assert_eq!(config["mcpServers"]["legacy"]["type"], "sse");
        assert_eq!(
            config["mcpServers"]["legacy"]["headers"]["Authorization"],
            "Bearer ${T}"
        );
    }

    #[test]
    fn secret_headers_are_variable_references() {
        let http = McpServer::streamable_http("docs", "http://127.0.0.1:1/mcp")
            .with_header("X-Tenant", "t1")
            .with_secret_header("X-Api-Key", "DOCS_API_KEY");
        let sse = McpServer::sse("legacy", "http://127.0.0.1:2/sse")
            .with_bearer_token_env("T")
            .with_secret_header("Cookie", "LEGACY_COOKIE");
        let config = mcp_config(&[http, sse], &BTreeMap::new(), McpDialect::default()).unwrap();
        assert_eq!(
            config["mcpServers"]["docs"]["headers"],
            json!({"X-Tenant": "t1", "X-Api-Key": "${DOCS_API_KEY}"})
        );
        assert_eq!(
            config["mcpServers"]["legacy"]["headers"],
            json!({"Authorization": "Bearer ${T}", "Cookie": "${LEGACY_COOKIE}"})
        );
        let twice = McpServer::streamable_http("a", "http://x")
            .with_bearer_token_env("T")
            .with_secret_header("Authorization", "A");
        assert_eq!(
            mcp_config(&[twice], &BTreeMap::new(), McpDialect::default()),
            Err(McpRefError::DuplicateHeader)
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod doc_examples {
    #[test]
    fn the_bearer_is_a_variable_reference() {
        use super::{McpDialect, mcp_config};
        use run_service::McpServer;

        let server = McpServer::streamable_http("agent-ui", "http://127.0.0.1:4101/mcp")
            .with_bearer_token_env("UI_TOKEN");
        let config = mcp_config(&[server], &Default::default(), McpDialect::default()).unwrap();
        assert_eq!(
            config["mcpServers"]["agent-ui"]["headers"]["Authorization"],
            "Bearer ${UI_TOKEN}"
        );
    }
}
