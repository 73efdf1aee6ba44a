//! The editor's MCP servers as run-service providers of each run.
//!
//! - HTTP and SSE servers: an `Authorization: Bearer …` header becomes the server's bearer
//!   token, a secret binding of its service; any other header can reach a runtime only as a
//!   plain (non-secret) `run_service` header, so a header named or shaped like a credential is
//!   refused, never passed in the clear.
//! - stdio servers: a host-declared stdio server of the run (command and args); every
//!   variable of its `env` becomes a secret binding of its service, forwarded by the driver
//!   to the process the runtime starts, never written anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunId, RunServiceCompatibility, RunServiceError,
    RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind, validate_run,
};

/// The compatibility id of the editor's servers given a semantic identity.
const SEMANTIC_ID: &str = "dev.acp-agent.editor-mcp";

/// Parts of a header name that mark it as carrying a credential (lower case). Stricter than
/// `run_service`'s list on purpose: an editor's extra header is usually a credential.
const CREDENTIAL_NAME_PARTS: [&str; 10] = [
    "auth",
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "cookie",
    "credential",
    "signature",
    "session",
];

/// One server of the editor, as its service of the run and its semantic identity.
struct Server {
    name: String,
    /// The service (with its secret bindings); `Debug` of a binding never shows the value.
    service: ServiceRef,
    /// What the semantic identity covers besides the name and the transport (a digest of the
    /// stdio command and args, or of the plain headers), never a URL, port, token or env value.
    shape: Option<String>,
    transport: TransportKind,
    bearer: bool,
}

/// Why the editor's servers cannot be attached (a fixed text plus the server's name and
/// header or variable names, never a header value, argument or env value).
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

/// The providers for `servers`: the servers named in `semantic` in one provider with a
/// semantic identity (name, transport, bearer or not, stdio command and args, plain headers),
/// the others in one without (exact: a new port, token or env value makes a stored Thread
/// incompatible).
pub(crate) fn providers(
    servers: &[acp::McpServer],
    semantic: &BTreeSet<String>,
) -> Result<Vec<Arc<dyn RunServiceProvider>>, Refused> {
    let mut names = BTreeSet::new();
    let mut variables: BTreeMap<String, String> = BTreeMap::new();
    let (mut chosen, mut exact) = (Vec::new(), Vec::new());
    for server in servers {
        let entry = match server {
            acp::McpServer::Http(http) => http_server(
                &http.name,
                &http.url,
                &http.headers,
                TransportKind::StreamableHttp,
            )?,
            acp::McpServer::Sse(sse) => {
                http_server(&sse.name, &sse.url, &sse.headers, TransportKind::Sse)?
            }
            acp::McpServer::Stdio(stdio) => stdio_server(stdio, &mut variables)?,
            _ => {
                return Err(Refused(
                    "unsupported MCP server transport (mcpCapabilities: http, sse, stdio)"
                        .to_owned(),
                ));
            }
        };
        if entry.name.is_empty() || !names.insert(entry.name.clone()) {
            return Err(Refused(format!(
                "MCP server names must be unique and non-empty (`{}`)",
                entry.name
            )));
        }
        // The run-service rules (lengths, control characters, credentials in arguments,
        // headers or URLs, env names), checked now so the editor hears it at once.
        let attachment = RunAttachment::new(vec![entry.service.clone()]);
        if let Err(e) = validate_run(&[attachment], &[]) {
            return Err(Refused(format!(
                "MCP server `{}`: {} {}",
                entry.name,
                e.field(),
                e.reason()
            )));
        }
        if semantic.contains(&entry.name) {
            chosen.push(entry);
        } else {
            exact.push(entry);
        }
    }
    let mut providers: Vec<Arc<dyn RunServiceProvider>> = Vec::new();
    if !chosen.is_empty() {
        providers.push(Arc::new(EditorMcp::new(chosen, true)));
    }
    if !exact.is_empty() {
        providers.push(Arc::new(EditorMcp::new(exact, false)));
    }
    Ok(providers)
}

/// An HTTP or SSE server: its bearer token as a secret binding, its other headers plain when
/// nothing about them looks like a credential.
fn http_server(
    name: &str,
    url: &str,
    headers: &[acp::HttpHeader],
    transport: TransportKind,
) -> Result<Server, Refused> {
    let mut mcp = if transport == TransportKind::Sse {
        McpServer::sse(name, url)
    } else {
        McpServer::streamable_http(name, url)
    };
    let mut service = ServiceRef::new(name, name).with_url(url);
    let mut bearer = false;
    let mut plain = BTreeMap::new();
    for header in headers {
        let lower = header.name.to_ascii_lowercase();
        if lower == "authorization" {
            match header.value.strip_prefix("Bearer ") {
                Some(token) if !bearer && !token.is_empty() => {
                    let var = bearer_var(name);
                    mcp = mcp.with_bearer_token_env(&var);
                    service = service.with_secret_env(EnvBinding::new(var, token.to_owned()));
                    bearer = true;
                }
                _ => {
                    return Err(Refused(format!(
                        "MCP server `{name}`: only one `Authorization: Bearer` header is \
                         supported (header `{}`)",
                        header.name
                    )));
                }
            }
            continue;
        }
        if CREDENTIAL_NAME_PARTS.iter().any(|p| lower.contains(p))
            || shaped_like_credential(&header.value)
        {
            return Err(Refused(format!(
                "MCP server `{name}`: header `{}` looks like a credential; only an \
                 `Authorization: Bearer` token reaches the runtime as a secret, other headers \
                 only as plain values",
                header.name
            )));
        }
        if plain
            .insert(lower, (header.name.clone(), header.value.clone()))
            .is_some()
        {
            return Err(Refused(format!(
                "MCP server `{name}`: header `{}` is given twice",
                header.name
            )));
        }
    }
    let mut shape = None;
    if !plain.is_empty() {
        let mut hasher = blake3::Hasher::new();
        for (lower, (header, value)) in &plain {
            for part in [lower.as_str(), value.as_str()] {
                hasher.update(&(part.len() as u64).to_le_bytes());
                hasher.update(part.as_bytes());
            }
            mcp = mcp.with_header(header, value);
        }
        shape = Some(format!("headers:{}", &hasher.finalize().to_hex()[..16]));
    }
    Ok(Server {
        name: name.to_owned(),
        service: service.with_mcp(mcp),
        shape,
        transport,
        bearer,
    })
}

/// A stdio server: command and args as declared, every env variable a secret binding.
/// `variables` maps each variable already bound in this run to its server: a variable is one
/// binding of the run, so two servers cannot each give it a value.
fn stdio_server(
    stdio: &acp::McpServerStdio,
    variables: &mut BTreeMap<String, String>,
) -> Result<Server, Refused> {
    let name = &stdio.name;
    let Some(command) = stdio.command.to_str() else {
        return Err(Refused(format!(
            "MCP server `{name}`: the command is not valid UTF-8"
        )));
    };
    let mcp = McpServer::stdio(name, command).with_args(stdio.args.iter().cloned());
    let mut service = ServiceRef::new(name, name);
    for variable in &stdio.env {
        if let Some(other) = variables.insert(variable.name.clone(), name.clone()) {
            return Err(Refused(format!(
                "MCP server `{name}`: env variable `{}` is also given to server `{other}`; a \
                 variable is one secret binding of the run",
                variable.name
            )));
        }
        service = service.with_secret_env(EnvBinding::new(
            variable.name.clone(),
            variable.value.clone(),
        ));
    }
    let mut hasher = blake3::Hasher::new();
    for part in std::iter::once(command).chain(stdio.args.iter().map(String::as_str)) {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    Ok(Server {
        name: name.clone(),
        service: service.with_mcp(mcp),
        shape: Some(format!("stdio:{}", &hasher.finalize().to_hex()[..16])),
        transport: TransportKind::Stdio,
        bearer: false,
    })
}

/// Whether a plain value is shaped like a credential: the redactor's token patterns change
/// it (the rule `run_service` applies to plain values), or it is a long unbroken run of
/// token characters.
fn shaped_like_credential(value: &str) -> bool {
    matches!(redaction::redact(value), std::borrow::Cow::Owned(_))
        || (value.len() >= 32
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.+/=".contains(&b)))
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
    services: Vec<ServiceRef>,
    /// The semantic compatibility tuple, when the host chose one for these servers.
    compatibility: Option<RunServiceCompatibility>,
}

impl EditorMcp {
    fn new(servers: Vec<Server>, semantic: bool) -> Self {
        let mut fingerprint = SemanticFingerprint::new().service_role("acp-editor-mcp");
        let mut services = Vec::with_capacity(servers.len());
        for server in servers {
            fingerprint = fingerprint.mcp_server(&server.name, server.transport, false);
            if server.bearer {
                fingerprint = fingerprint.authorization("bearer", &server.name);
            }
            if let Some(shape) = &server.shape {
                fingerprint = fingerprint.service_role(&format!("{}:{shape}", server.name));
            }
            services.push(server.service);
        }
        Self {
            services,
            compatibility: semantic
                .then(|| RunServiceCompatibility::new(SEMANTIC_ID, fingerprint.finish())),
        }
    }
}

#[run_service::async_trait]
impl RunServiceProvider for EditorMcp {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let attachment = RunAttachment::new(self.services.clone());
        Ok(match &self.compatibility {
            Some(compatibility) => attachment.with_resume_compatibility(compatibility.clone()),
            None => attachment,
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

    fn headers(headers: &[(&str, &str)]) -> Vec<acp::HttpHeader> {
        headers
            .iter()
            .map(|(n, v)| acp::HttpHeader::new((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn http(name: &str, h: &[(&str, &str)]) -> acp::McpServer {
        acp::McpServer::Http(
            acp::McpServerHttp::new(name.to_owned(), "http://127.0.0.1:1/mcp".to_owned())
                .headers(headers(h)),
        )
    }

    fn stdio(name: &str, args: &[&str], env: &[(&str, &str)]) -> acp::McpServer {
        acp::McpServer::Stdio(
            acp::McpServerStdio::new(name.to_owned(), "/usr/bin/files-mcp")
                .args(args.iter().map(|a| (*a).to_owned()).collect())
                .env(
                    env.iter()
                        .map(|(n, v)| acp::EnvVariable::new((*n).to_owned(), (*v).to_owned()))
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

    async fn attached(servers: &[acp::McpServer], semantic: &[&str]) -> Vec<RunAttachment> {
        let semantic = semantic.iter().map(|s| (*s).to_owned()).collect();
        let mut out = Vec::new();
        for provider in providers(servers, &semantic).unwrap() {
            out.push(provider.attach_run(&RunId::new("r")).await.unwrap());
        }
        out
    }

    fn fingerprint(attachments: &[RunAttachment]) -> String {
        let compat = attachments[0].resume_compatibility.as_ref().unwrap();
        compat.fingerprint.clone()
    }

    #[test]
    fn servers_split_by_identity_and_what_is_not_taken_is_refused_without_its_value() {
        let semantic = BTreeSet::from(["a".to_owned()]);
        let both = [
            http("a", &[]),
            http("b", &[("Authorization", "Bearer s3cr3t")]),
            stdio("c", &[], &[("C_TOKEN", "s3cr3t")]),
        ];
        assert_eq!(providers(&both, &semantic).unwrap().len(), 2);
        assert_eq!(providers(&both[..1], &semantic).unwrap().len(), 1);
        assert!(providers(&[], &semantic).unwrap().is_empty());
        assert!(refusal(&[http("a", &[]), stdio("a", &[], &[])]).contains("unique"));
        for h in [
            ("X-Api-Key", "s3cr3t"),
            ("X-Session", "plain"),
            ("X-Trace", "Bearer s3cr3t"),
            ("X-Trace", "ghp_s3cr3ts3cr3ts3cr3ts3cr3ts3cr3ts3cr3t"),
            ("X-Trace", "s3cr3ts3cr3ts3cr3ts3cr3ts3cr3ts3cr3t"),
            ("Authorization", "Basic s3cr3t"),
            ("Cookie", "id=s3cr3t"),
        ] {
            let header = refusal(&[http("a", &[h])]);
            assert!(
                header.contains(h.0) && !header.contains("s3cr3t"),
                "{header}"
            );
        }
        let twice = refusal(&[http(
            "a",
            &[
                ("Authorization", "Bearer s3cr3t"),
                ("authorization", "Bearer s3cr3t"),
            ],
        )]);
        assert!(
            twice.contains("only one") && !twice.contains("s3cr3t"),
            "{twice}"
        );
        // A credential given as an argument is refused like run-service refuses it.
        let argument = refusal(&[stdio("s", &["--token", "s3cr3t"], &[])]);
        assert!(
            argument.contains("argument") && !argument.contains("s3cr3t"),
            "{argument}"
        );
        let shared = refusal(&[
            stdio("s", &[], &[("SHARED_TOKEN", "s3cr3t")]),
            stdio("t", &[], &[("SHARED_TOKEN", "s3cr3t")]),
        ]);
        assert!(
            shared.contains("SHARED_TOKEN") && !shared.contains("s3cr3t"),
            "{shared}"
        );
        let bad = refusal(&[stdio("s", &[], &[("1BAD", "v")])]);
        assert!(bad.contains("env"), "{bad}");
    }

    #[tokio::test]
    async fn stdio_and_sse_servers_reach_the_run_with_their_secrets_as_bindings_only() {
        let servers = [
            stdio("files", &["--root", "/w"], &[("FILES_TOKEN", "s3cr3t-env")]),
            acp::McpServer::Sse(
                acp::McpServerSse::new("events".to_owned(), "http://127.0.0.1:2/sse".to_owned())
                    .headers(headers(&[
                        ("Authorization", "Bearer s3cr3t-sse"),
                        ("X-Workspace", "acme"),
                    ])),
            ),
        ];
        let attachments = attached(&servers, &[]).await;
        assert_eq!(attachments.len(), 1);
        assert!(attachments[0].resume_compatibility.is_none());
        let [files, events] = &attachments[0].services[..] else {
            panic!("two services")
        };
        let mcp = files.mcp.as_ref().unwrap();
        assert_eq!(
            mcp.transport,
            run_service::McpTransport::Stdio {
                command: "/usr/bin/files-mcp".to_owned(),
                args: vec!["--root".to_owned(), "/w".to_owned()],
                env: BTreeMap::new(),
            }
        );
        assert_eq!(files.secret_env.len(), 1);
        assert_eq!(files.secret_env[0].name(), "FILES_TOKEN");
        let events_mcp = events.mcp.as_ref().unwrap();
        let run_service::McpTransport::Sse {
            headers,
            bearer_token_env_var: Some(var),
            ..
        } = &events_mcp.transport
        else {
            panic!("sse with a bearer")
        };
        assert_eq!(headers["X-Workspace"], "acme");
        assert_eq!(events.secret_env[0].name(), var);
        // No secret in what a record, an error or a log could print.
        let printed = format!("{attachments:?}");
        assert!(!printed.contains("s3cr3t"), "{printed}");
        validate_run(&attachments, &[]).unwrap();
    }

    #[tokio::test]
    async fn a_stdio_identity_covers_command_and_args_not_env_values() {
        let one = fingerprint(
            &attached(
                &[stdio("files", &["--root", "/w"], &[("FILES_TOKEN", "one")])],
                &["files"],
            )
            .await,
        );
        let rotated = fingerprint(
            &attached(
                &[stdio("files", &["--root", "/w"], &[("FILES_TOKEN", "two")])],
                &["files"],
            )
            .await,
        );
        let other_args = fingerprint(
            &attached(
                &[stdio("files", &["--root", "/x"], &[("FILES_TOKEN", "one")])],
                &["files"],
            )
            .await,
        );
        assert_eq!(one, rotated);
        assert_ne!(one, other_args);
        let port = |p: u16| {
            acp::McpServer::Http(acp::McpServerHttp::new(
                "files".to_owned(),
                format!("http://127.0.0.1:{p}/mcp"),
            ))
        };
        let http = fingerprint(&attached(&[port(1)], &["files"]).await);
        assert_eq!(http, fingerprint(&attached(&[port(2)], &["files"]).await));
        assert_ne!(one, http);
    }

    #[test]
    fn bearer_variables_are_distinct_per_name() {
        assert_ne!(bearer_var("a-b"), bearer_var("a_b"));
        assert!(bearer_var("docs").starts_with("ACP_MCP_DOCS_"));
    }
}
