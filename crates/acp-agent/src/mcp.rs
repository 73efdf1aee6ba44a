//! The editor's MCP servers as run-service providers of each run.

use std::collections::BTreeSet;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunId, RunServiceCompatibility, RunServiceError,
    RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind,
};
use secrecy::{ExposeSecret as _, SecretString};

/// The compatibility id of the editor's servers given a semantic identity.
const SEMANTIC_ID: &str = "dev.acp-agent.editor-mcp";

/// One HTTP server of the editor.
struct HttpServer {
    name: String,
    url: String,
    /// The bearer token of its `Authorization: Bearer …` header.
    bearer: Option<SecretString>,
}

/// Why the editor's servers cannot be attached (a fixed text plus the server's name, never a
/// header value).
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

/// The providers for `servers`: the servers named in `semantic` in one provider with a
/// semantic identity (name, transport, whether it takes a bearer), the others in one without
/// (exact: a new port or token makes a stored Thread incompatible).
pub(crate) fn providers(
    servers: &[acp::McpServer],
    semantic: &BTreeSet<String>,
) -> Result<Vec<Arc<dyn RunServiceProvider>>, Refused> {
    let mut names = BTreeSet::new();
    let (mut chosen, mut exact) = (Vec::new(), Vec::new());
    for server in servers {
        let acp::McpServer::Http(http) = server else {
            return Err(Refused(
                "only HTTP MCP servers are supported (mcpCapabilities: http)".to_owned(),
            ));
        };
        if http.name.is_empty() || !names.insert(http.name.clone()) {
            return Err(Refused(format!(
                "MCP server names must be unique and non-empty (`{}`)",
                http.name
            )));
        }
        let mut bearer = None;
        for header in &http.headers {
            let value = header
                .value
                .strip_prefix("Bearer ")
                .filter(|_| header.name.eq_ignore_ascii_case("authorization"));
            match value {
                Some(token) if bearer.is_none() => {
                    bearer = Some(SecretString::from(token.to_owned()));
                }
                _ => {
                    return Err(Refused(format!(
                        "MCP server `{}`: only one `Authorization: Bearer` header is supported \
                         (header `{}`)",
                        http.name, header.name
                    )));
                }
            }
        }
        let entry = HttpServer {
            name: http.name.clone(),
            url: http.url.clone(),
            bearer,
        };
        if semantic.contains(&http.name) {
            chosen.push(entry);
        } else {
            exact.push(entry);
        }
    }
    let mut providers: Vec<Arc<dyn RunServiceProvider>> = Vec::new();
    if !chosen.is_empty() {
        providers.push(Arc::new(EditorMcp {
            servers: chosen,
            semantic: true,
        }));
    }
    if !exact.is_empty() {
        providers.push(Arc::new(EditorMcp {
            servers: exact,
            semantic: false,
        }));
    }
    Ok(providers)
}

/// The variable carrying server `name`'s bearer token to the runtime (a secret binding).
fn bearer_var(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "ACP_MCP_{cleaned}_{}_TOKEN",
        &blake3_hex(name.as_bytes())[..8]
    )
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

struct EditorMcp {
    servers: Vec<HttpServer>,
    semantic: bool,
}

#[run_service::async_trait]
impl RunServiceProvider for EditorMcp {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let mut fingerprint = SemanticFingerprint::new().service_role("acp-editor-mcp");
        let mut services = Vec::new();
        for server in &self.servers {
            let mut mcp = McpServer::streamable_http(&server.name, &server.url);
            let mut service = ServiceRef::new(&server.name, &server.name).with_url(&server.url);
            fingerprint =
                fingerprint.mcp_server(&server.name, TransportKind::StreamableHttp, false);
            if let Some(token) = &server.bearer {
                let var = bearer_var(&server.name);
                mcp = mcp.with_bearer_token_env(&var);
                service =
                    service.with_secret_env(EnvBinding::new(var, token.expose_secret().to_owned()));
                fingerprint = fingerprint.authorization("bearer", &server.name);
            }
            services.push(service.with_mcp(mcp));
        }
        let attachment = RunAttachment::new(services);
        Ok(if self.semantic {
            attachment.with_resume_compatibility(RunServiceCompatibility::new(
                SEMANTIC_ID,
                fingerprint.finish(),
            ))
        } else {
            attachment
        })
    }

    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn http(name: &str, headers: &[(&str, &str)]) -> acp::McpServer {
        acp::McpServer::Http(
            acp::McpServerHttp::new(name.to_owned(), "http://127.0.0.1:1/mcp".to_owned()).headers(
                headers
                    .iter()
                    .map(|(n, v)| acp::HttpHeader::new((*n).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
        )
    }

    fn refusal(servers: &[acp::McpServer]) -> String {
        match providers(servers, &BTreeSet::new()) {
            Err(Refused(message)) => message,
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn servers_split_by_identity_and_what_is_not_taken_is_refused_without_its_value() {
        let semantic = BTreeSet::from(["a".to_owned()]);
        let both = [
            http("a", &[]),
            http("b", &[("Authorization", "Bearer s3cr3t")]),
        ];
        assert_eq!(providers(&both, &semantic).unwrap().len(), 2);
        assert_eq!(providers(&both[..1], &semantic).unwrap().len(), 1);
        assert!(providers(&[], &semantic).unwrap().is_empty());
        assert!(refusal(&[http("a", &[]), http("a", &[])]).contains("unique"));
        let header = refusal(&[http("a", &[("X-Api-Key", "s3cr3t")])]);
        assert!(
            header.contains("X-Api-Key") && !header.contains("s3cr3t"),
            "{header}"
        );
        let stdio = acp::McpServer::Stdio(acp::McpServerStdio::new("s".to_owned(), "/bin/s"));
        assert!(refusal(&[stdio]).contains("only HTTP"));
    }

    #[test]
    fn bearer_variables_are_distinct_per_name() {
        assert_ne!(bearer_var("a-b"), bearer_var("a_b"));
        assert!(bearer_var("docs").starts_with("ACP_MCP_DOCS_"));
    }
}
