//! The two projections of a run's attachments: the concrete view and the session view.
//!
//! # Ordering rules
//! Neither digest depends on the order of providers, of services within an attachment, of
//! metadata, headers, env bindings or MCP servers: each is encoded as a set or map. Command
//! arguments are an ordered list. The concrete request handed to a driver keeps provider order;
//! only the digests are order-free.
//!
//! # Domain separation
//! Every digest below has its own blake3 context, so a concrete digest can never equal a
//! session digest, and an attachment's semantic tuple can never collide with an exact service
//! projection.

use compat_fingerprint::{Breakdown, ComponentName, Encoder, Fingerprint, Kind, ShortDigest};

use crate::{
    McpServer, McpTransport, RunAttachment, RunServiceCompatibility, ServiceRef, ValidationError,
    validate_run,
};

const CONCRETE_ROOT: Kind = Kind::new("agent-sdk 2026-11-30 run-service concrete-view v1");
const CONCRETE_SERVICES: Kind = Kind::new("agent-sdk 2026-11-30 run-service concrete-services v1");
const CONCRETE_MCP: Kind = Kind::new("agent-sdk 2026-11-30 run-service concrete-mcp v1");
const SESSION_ROOT: Kind = Kind::new("agent-sdk 2026-11-30 run-service session-view v1");
const SESSION_SERVICES: Kind = Kind::new("agent-sdk 2026-11-30 run-service session-services v1");
const SESSION_MCP: Kind = Kind::new("agent-sdk 2026-11-30 run-service session-mcp v1");
const EXACT_ATTACHMENT: Kind = Kind::new("agent-sdk 2026-11-30 run-service exact-attachment v1");
const SEMANTIC_ATTACHMENT: Kind =
    Kind::new("agent-sdk 2026-11-30 run-service semantic-attachment v1");
const ATTACHMENT_MCP: Kind = Kind::new("agent-sdk 2026-11-30 run-service attachment-mcp v1");
const EXACT_MCP_SERVER: Kind = Kind::new("agent-sdk 2026-11-30 run-service exact-mcp-server v1");

/// One projection of a run: digests of its services and of its MCP servers, one digest per
/// component, and a root digest over the services and MCP digests.
///
/// Components are named `attachment.exact:<d>` (an attachment without a compatibility tuple;
/// `<d>` digests its service ids), `attachment.semantic:<d>` (an opted-in attachment; `<d>`
/// digests its compatibility id) and `mcp:<d>` (a host-declared MCP server; `<d>` digests its
/// key). Names and digests carry no raw values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    services: Fingerprint,
    mcp: Fingerprint,
    components: Breakdown,
    digest: Fingerprint,
}

impl View {
    /// The digest of the runtime-service portion.
    pub fn services(&self) -> Fingerprint {
        self.services
    }

    /// The digest of the effective MCP servers (attachment-owned and host-declared).
    pub fn mcp(&self) -> Fingerprint {
        self.mcp
    }

    /// One digest per attachment and per host MCP server.
    pub fn components(&self) -> &Breakdown {
        &self.components
    }

    /// The root digest of the whole view.
    pub fn digest(&self) -> Fingerprint {
        self.digest
    }
}

/// Both projections of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunViews {
    /// Everything, exactly: URL, command, cwd, port, metadata, reuse key, MCP URL/command,
    /// bearer env-var name and secret-header names with their env-var names, secret env
    /// *names* (never values). It changes whenever anything
    /// concrete changes, and drives materialization, reports and process reuse.
    pub concrete: View,
    /// Exact data for attachments that did not opt in; only `{id, fingerprint}` for those that
    /// did, in place of their services and MCP materialization. Host MCP servers stay exact.
    /// This is what Thread resume compatibility compares.
    pub session: View,
}

/// Validates a run ([`validate_run`]) and builds both views.
pub fn build_views(
    attachments: &[RunAttachment],
    host_mcp: &[McpServer],
) -> Result<RunViews, ValidationError> {
    validate_run(attachments, host_mcp)?;

    // Each attachment is hashed once as a set of its services (and once as a set of its MCP
    // servers), keeping attachment boundaries; the views are sets of those digests.
    let mut arena = Encoder::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut concrete_services = Vec::with_capacity(attachments.len());
    let mut concrete_mcp = Vec::with_capacity(attachments.len() + host_mcp.len());
    let mut session_services = Vec::with_capacity(attachments.len());
    let mut session_mcp = Vec::with_capacity(attachments.len() + host_mcp.len());
    let mut concrete_components = Breakdown::new();
    let mut session_components = Breakdown::new();

    for attachment in attachments {
        if attachment.services.is_empty() && attachment.resume_compatibility.is_none() {
            continue; // contributes nothing
        }
        arena.clear();
        spans.clear();
        for service in &attachment.services {
            spans.push(encode_into(&mut arena, |e| encode_service(e, service)));
        }
        let services = encoded_set(EXACT_ATTACHMENT, &arena, &spans);
        spans.clear();
        for server in attachment.services.iter().filter_map(|s| s.mcp.as_ref()) {
            spans.push(encode_into(&mut arena, |e| encode_mcp(e, server)));
        }
        let mcp = (!spans.is_empty()).then(|| encoded_set(ATTACHMENT_MCP, &arena, &spans));

        concrete_services.push(services);
        concrete_mcp.extend(mcp);
        let exact = exact_component(&attachment.services);
        if let Some(name) = &exact {
            concrete_components.insert_or_replace(name.clone(), services);
        }
        match &attachment.resume_compatibility {
            Some(compat) => {
                let tuple = Fingerprint::of(SEMANTIC_ATTACHMENT, |e| encode_tuple(e, compat));
                // The tuple stands for the whole logical attachment: its services and, when
                // it owns any, its MCP declarations.
                session_services.push(tuple);
                if mcp.is_some() {
                    session_mcp.push(tuple);
                }
                session_components.insert_or_replace(semantic_name(compat), tuple);
            }
            None => {
                session_services.push(services);
                session_mcp.extend(mcp);
                if let Some(name) = exact {
                    session_components.insert_or_replace(name, services);
                }
            }
        }
    }
    for server in host_mcp {
        let digest = Fingerprint::of(EXACT_MCP_SERVER, |e| encode_mcp(e, server));
        let name = component_name("mcp", ShortDigest::of_str(&server.name));
        concrete_components.insert_or_replace(name.clone(), digest);
        session_components.insert_or_replace(name, digest);
        concrete_mcp.push(digest);
        session_mcp.push(digest);
    }

    Ok(RunViews {
        concrete: view(
            CONCRETE_ROOT,
            digest_set(CONCRETE_SERVICES, &concrete_services),
            digest_set(CONCRETE_MCP, &concrete_mcp),
            concrete_components,
        ),
        session: view(
            SESSION_ROOT,
            digest_set(SESSION_SERVICES, &session_services),
            digest_set(SESSION_MCP, &session_mcp),
            session_components,
        ),
    })
}

/// A byte range of an arena encoder.
type Span = (usize, usize);

fn encode_into(arena: &mut Encoder, encode: impl FnOnce(&mut Encoder)) -> Span {
    let start = arena.as_bytes().len();
    encode(arena);
    (start, arena.as_bytes().len())
}

/// The digest of the set of encoded values at `spans` of `arena`.
fn encoded_set(kind: Kind, arena: &Encoder, spans: &[Span]) -> Fingerprint {
    let bytes = arena.as_bytes();
    let mut items: Vec<&[u8]> = spans.iter().map(|&(a, b)| &bytes[a..b]).collect();
    Fingerprint::of_encoded_set(kind, &mut items)
}

/// The digest of a set of digests (order-free).
fn digest_set(kind: Kind, digests: &[Fingerprint]) -> Fingerprint {
    let mut items: Vec<&[u8]> = digests.iter().map(|d| d.as_bytes().as_slice()).collect();
    Fingerprint::of_encoded_set(kind, &mut items)
}

fn view(root: Kind, services: Fingerprint, mcp: Fingerprint, components: Breakdown) -> View {
    // The two portion digests already commit to every byte of the view (the components are
    // per-attachment digests of the same projections, named from the same data), so the
    // root hashes just those two: hashing the breakdown again would only cost compressions.
    let digest = Fingerprint::of(root, |e| {
        e.record(|r| {
            r.field(1, |e| e.bytes(services.as_bytes()));
            r.field(2, |e| e.bytes(mcp.as_bytes()));
        })
    });
    View {
        services,
        mcp,
        components,
        digest,
    }
}

fn component_name(prefix: &str, digest: ShortDigest) -> ComponentName {
    ComponentName::with_digest(prefix, digest)
        .expect("a fixed lowercase prefix plus 12 hex digits is a valid component name")
}

fn semantic_name(compat: &RunServiceCompatibility) -> ComponentName {
    component_name("attachment.semantic", ShortDigest::of_str(&compat.id))
}

/// `attachment.exact:<digest of the sorted service ids>`; none for an empty attachment, which
/// contributes nothing. Service ids are unique across a validated run, so names are too.
fn exact_component(services: &[ServiceRef]) -> Option<ComponentName> {
    if services.is_empty() {
        return None;
    }
    let mut ids: Vec<&str> = services.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    let d = Fingerprint::of(EXACT_ATTACHMENT, |e| e.list(ids, |e, id| e.str(id))).short();
    Some(component_name("attachment.exact", d))
}

fn encode_tuple(e: &mut Encoder, compat: &RunServiceCompatibility) {
    e.record(|r| {
        r.field(1, |e| e.str(&compat.id));
        r.field(2, |e| e.str(&compat.fingerprint));
    });
}

fn encode_opt_str(e: &mut Encoder, value: Option<&String>) {
    e.option(value, |e, v| e.str(v));
}

fn encode_service(e: &mut Encoder, s: &ServiceRef) {
    e.record(|r| {
        r.field(1, |e| e.str(&s.id));
        r.field(2, |e| e.str(&s.name));
        r.field(3, |e| encode_opt_str(e, s.url.as_ref()));
        r.field(4, |e| encode_opt_str(e, s.command.as_ref()));
        r.field(5, |e| e.list(&s.args, |e, a| e.str(a)));
        r.field(6, |e| encode_opt_str(e, s.cwd.as_ref()));
        r.field(7, |e| e.option(s.port, |e, p| e.u64(u64::from(p))));
        r.field(8, |e| e.map(&s.metadata, |e, k| e.str(k), |e, v| e.str(v)));
        r.field(9, |e| {
            e.u64(match s.lifecycle {
                crate::Lifecycle::Shared => 1,
                crate::Lifecycle::Ephemeral => 2,
            })
        });
        r.field(10, |e| encode_opt_str(e, s.reuse_key.as_ref()));
        r.field(11, |e| e.option(s.mcp.as_ref(), encode_mcp));
        // Names only: secret values never enter a view.
        r.field(12, |e| e.set(&s.secret_env, |e, b| e.str(b.name())));
    });
}

fn encode_mcp(e: &mut Encoder, m: &McpServer) {
    e.record(|r| {
        r.field(1, |e| e.str(&m.name));
        r.field(2, |e| e.u64(m.transport.kind().code()));
        r.field(3, |e| e.bool(m.required));
        r.field(4, |e| match &m.transport {
            McpTransport::Stdio { command, args, env } => e.record(|r| {
                r.field(1, |e| e.str(command));
                r.field(2, |e| e.list(args, |e, a| e.str(a)));
                r.field(3, |e| e.map(env, |e, k| e.str(k), |e, v| e.str(v)));
            }),
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
            } => e.record(|r| {
                r.field(1, |e| e.str(url));
                r.field(2, |e| e.map(headers, |e, k| e.str(k), |e, v| e.str(v)));
                r.field(3, |e| encode_opt_str(e, bearer_token_env_var.as_ref()));
                // Header and variable names only. Written only when set, so a server without
                // secret headers encodes exactly as before they existed and every stored
                // fingerprint stays valid.
                if !env_headers.is_empty() {
                    r.field(4, |e| e.map(env_headers, |e, k| e.str(k), |e, v| e.str(v)));
                }
            }),
        });
    });
}
