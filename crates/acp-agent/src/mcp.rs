//! The editor's MCP servers as run-service providers of each run.
//!
//! - HTTP and SSE servers: an `Authorization: Bearer …` header becomes the server's bearer
//!   token, a secret binding of its service; every other header becomes a secret header
//!   (`McpServer::with_secret_header`) with its own secret binding, so no header value is
//!   ever written into a runtime's config, a record or a log. A header given twice is refused.
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

/// One server of the editor, as its service of the run and its semantic identity.
struct Server {
    name: String,
    /// The service (with its secret bindings); `Debug` of a binding never shows the value.
    service: ServiceRef,
    /// What the semantic identity covers besides the name and the transport (a digest of the
    /// stdio command and args, or of the header names), never a URL, port, token, header value
    /// or env value.
    shape: Option<String>,
    transport: TransportKind,
    bearer: bool,
}

/// Why the editor's servers cannot be attached (a fixed text plus the server's name and
/// header or variable names, never a header value, argument or env value).
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

/// The providers for `servers`: the servers named in `semantic` in one provider with a
/// semantic identity (name, transport, bearer or not, stdio command and args, header names),
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

/// An HTTP or SSE server: its bearer token and every other header as secret bindings.
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
    let mut seen = BTreeSet::new();
    // The secret headers' names, lower case: what the semantic identity covers of them.
    let mut secret = BTreeSet::new();
    for header in headers {
        let lower = header.name.to_ascii_lowercase();
        if !seen.insert(lower.clone()) {
            return Err(Refused(format!(
                "MCP server `{name}`: header `{}` is given twice",
                header.name
            )));
        }
        // Checked here because a binding's value, unlike a plain header, is not validated
        // by run-service: a line break would let a value add headers of its own.
        if header.value.chars().any(char::is_control) {
            return Err(Refused(format!(
                "MCP server `{name}`: the value of header `{}` contains a control character",
                header.name
            )));
        }
        let token = header.value.strip_prefix("Bearer ");
        if let Some(token) = token.filter(|t| lower == "authorization" && !t.is_empty()) {
            let var = bearer_var(name);
            mcp = mcp.with_bearer_token_env(&var);
            service = service.with_secret_env(EnvBinding::new(var, token.to_owned()));
            bearer = true;
            continue;
        }
        let var = header_var(name, &lower);
        mcp = mcp.with_secret_header(&header.name, &var);
        service = service.with_secret_env(EnvBinding::new(var, header.value.clone()));
        secret.insert(lower);
    }
    let shape = (!secret.is_empty()).then(|| {
        let mut hasher = blake3::Hasher::new();
        for lower in &secret {
            hasher.update(&(lower.len() as u64).to_le_bytes());
            hasher.update(lower.as_bytes());
        }
        format!("headers:{}", &hasher.finalize().to_hex()[..16])
    });
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

/// The variable carrying server `name`'s bearer token to the runtime (a secret binding).
fn bearer_var(name: &str) -> String {
    format!(
        "ACP_MCP_{}_{}_TOKEN",
        env_part(name, usize::MAX),
        &blake3_hex(name.as_bytes())[..8]
    )
}

/// The variable carrying header `lower` (lower case) of server `name` to the runtime (a
/// secret binding): readable parts, cut short so the name stays within run-service's limit,
/// and a digest of both whole names, so no two servers or headers share one. It ends in hex
/// digits, so it is never a bearer variable (`…_TOKEN`).
fn header_var(name: &str, lower: &str) -> String {
    let digest = blake3_hex(format!("{name}\0{lower}").as_bytes());
    format!(
        "ACP_MCP_{}_H_{}_{}",
        env_part(name, 40),
        env_part(lower, 40),
        &digest[..8]
    )
}

/// `text` as part of a variable name: ASCII letters and digits upper-cased, anything else
/// `_`, at most `max` characters.
fn env_part(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
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
        for twice in [
            [
                ("Authorization", "Bearer s3cr3t"),
                ("authorization", "Bearer s3cr3t"),
            ],
            [("X-Api-Key", "s3cr3t"), ("x-api-key", "s3cr3t")],
            [
                ("Authorization", "Bearer s3cr3t"),
                ("AUTHORIZATION", "Basic s3cr3t"),
            ],
        ] {
            let twice = refusal(&[http("a", &twice)]);
            assert!(
                twice.contains("twice") && !twice.contains("s3cr3t"),
                "{twice}"
            );
        }
        let injected = refusal(&[http("a", &[("X-Api-Key", "s3cr3t\r\nX-Evil: 1")])]);
        assert!(
            injected.contains("control") && !injected.contains("s3cr3t"),
            "{injected}"
        );
        // A header name HTTP cannot carry is refused by run-service's rule.
        let bad_name = refusal(&[http("a", &[("X Api Key", "s3cr3t")])]);
        assert!(
            bad_name.contains("header name") && !bad_name.contains("s3cr3t"),
            "{bad_name}"
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
            env_headers,
            ..
        } = &events_mcp.transport
        else {
            panic!("sse with a bearer")
        };
        // Every header is a secret: none is plain, each is a binding of the service.
        assert!(headers.is_empty());
        assert_eq!(events.secret_env[0].name(), var);
        assert_eq!(events.secret_env[1].name(), env_headers["X-Workspace"]);
        assert_eq!(env_headers.len(), 1);
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

    #[tokio::test]
    async fn credential_headers_become_secret_bindings_named_by_server_and_header() {
        let servers = [http(
            "docs",
            &[
                ("X-Api-Key", "s3cr3t-key"),
                ("Cookie", "id=s3cr3t-cookie"),
                ("Authorization", "Basic s3cr3t-basic"),
            ],
        )];
        let attachments = attached(&servers, &["docs"]).await;
        let service = &attachments[0].services[0];
        let run_service::McpTransport::StreamableHttp {
            headers,
            bearer_token_env_var: None,
            env_headers,
            ..
        } = &service.mcp.as_ref().unwrap().transport
        else {
            panic!("http without a bearer")
        };
        assert!(headers.is_empty());
        let names: Vec<&str> = env_headers.keys().map(String::as_str).collect();
        assert_eq!(names, ["Authorization", "Cookie", "X-Api-Key"]);
        for (header, var) in env_headers {
            assert_eq!(var, &header_var("docs", &header.to_ascii_lowercase()));
            let binding = service.secret_env.iter().find(|b| b.name() == var);
            assert!(binding.is_some(), "{header} is bound");
        }
        let printed = format!("{attachments:?}");
        assert!(!printed.contains("s3cr3t"), "{printed}");
        validate_run(&attachments, &[]).unwrap();
    }

    #[tokio::test]
    async fn an_http_identity_covers_header_names_not_values() {
        let keyed =
            |name: &str, value: &str| http("docs", &[("Authorization", "Bearer t"), (name, value)]);
        let one = fingerprint(&attached(&[keyed("X-Api-Key", "one")], &["docs"]).await);
        let rotated = fingerprint(&attached(&[keyed("x-api-key", "two")], &["docs"]).await);
        let other = fingerprint(&attached(&[keyed("X-Other-Key", "one")], &["docs"]).await);
        let bearer_only = fingerprint(
            &attached(&[http("docs", &[("Authorization", "Bearer t")])], &["docs"]).await,
        );
        assert_eq!(one, rotated, "a new value (or case) of a header resumes");
        assert_ne!(one, other, "another header is drift");
        assert_ne!(one, bearer_only, "a header added or removed is drift");
    }

    #[test]
    fn secret_variables_are_distinct_per_server_and_header() {
        assert_ne!(bearer_var("a-b"), bearer_var("a_b"));
        assert!(bearer_var("docs").starts_with("ACP_MCP_DOCS_"));
        assert_ne!(header_var("a-b", "x-key"), header_var("a_b", "x-key"));
        assert_ne!(header_var("docs", "x-key"), header_var("docs", "x_key"));
        assert!(header_var("docs", "x-api-key").starts_with("ACP_MCP_DOCS_H_X_API_KEY_"));
        // Long names stay within run-service's limit on variable names.
        let long = "n".repeat(128);
        assert!(header_var(&long, &long).len() <= run_service::Limits::ENV_NAME);
        assert!(header_var("é", "x").starts_with("ACP_MCP___H_X_"));
    }
}
