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
const EXACT_MCP_SERVER: Kind = Kind::new("agent-sdk 2026-11-30 run-service exact-mcp-server v1");

/// One projection of a run: digests of its services and of its MCP servers, one digest per
/// component, and a root digest over the components.
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
    /// Everything, exactly: URL, command, cwd, port, metadata, reuse key, MCP URL/command and
    /// bearer env-var name, secret env *names* (never values). It changes whenever anything
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

    let mut concrete_services = Vec::new();
    let mut concrete_mcp = Vec::new();
    let mut session_services = Vec::new();
    let mut session_mcp = Vec::new();
    let mut concrete_components = Breakdown::new();
    let mut session_components = Breakdown::new();

    for attachment in attachments {
        let exact = ExactAttachment::encode(&attachment.services);
        concrete_services.extend(exact.services.iter().cloned());
        concrete_mcp.extend(exact.mcp.iter().cloned());
        if let Some(name) = exact.component_name(&attachment.services) {
            concrete_components.insert_or_replace(name, exact.digest);
        }
        match &attachment.resume_compatibility {
            None => {
                session_services.extend(exact.services.iter().cloned());
                session_mcp.extend(exact.mcp.iter().cloned());
                if let Some(name) = exact.component_name(&attachment.services) {
                    session_components.insert_or_replace(name, exact.digest);
                }
            }
            Some(compat) => {
                let tuple = encode_tuple(compat);
                let digest = Fingerprint::of_encoded(SEMANTIC_ATTACHMENT, &tuple);
                // The tuple stands for the whole logical attachment: its services and, when
                // it owns any, its MCP declarations.
                if !exact.mcp.is_empty() {
                    session_mcp.push(tuple.clone());
                }
                session_services.push(tuple);
                session_components.insert_or_replace(semantic_name(compat), digest);
            }
        }
    }
    for server in host_mcp {
        let mut enc = Encoder::new();
        encode_mcp(&mut enc, server);
        let digest = Fingerprint::of_encoded(EXACT_MCP_SERVER, &enc);
        let name = component_name("mcp", ShortDigest::of_str(&server.name));
        concrete_components.insert_or_replace(name.clone(), digest);
        session_components.insert_or_replace(name, digest);
        concrete_mcp.push(enc.clone());
        session_mcp.push(enc);
    }

    Ok(RunViews {
        concrete: view(
            CONCRETE_ROOT,
            set_digest(CONCRETE_SERVICES, &concrete_services),
            set_digest(CONCRETE_MCP, &concrete_mcp),
            concrete_components,
        ),
        session: view(
            SESSION_ROOT,
            set_digest(SESSION_SERVICES, &session_services),
            set_digest(SESSION_MCP, &session_mcp),
            session_components,
        ),
    })
}

fn view(root: Kind, services: Fingerprint, mcp: Fingerprint, components: Breakdown) -> View {
    // The root covers the component breakdown and both portion digests.
    let digest = Fingerprint::of(root, |e| {
        e.record(|r| {
            r.field(1, |e| e.bytes(components.root(root).as_bytes()));
            r.field(2, |e| e.bytes(services.as_bytes()));
            r.field(3, |e| e.bytes(mcp.as_bytes()));
        })
    });
    View {
        services,
        mcp,
        components,
        digest,
    }
}

fn set_digest(kind: Kind, items: &[Encoder]) -> Fingerprint {
    Fingerprint::of(kind, |e| e.set(items, |e, item| e.encoded(item)))
}

fn component_name(prefix: &str, digest: ShortDigest) -> ComponentName {
    ComponentName::with_digest(prefix, digest)
        .expect("a fixed lowercase prefix plus 12 hex digits is a valid component name")
}

fn semantic_name(compat: &RunServiceCompatibility) -> ComponentName {
    component_name("attachment.semantic", ShortDigest::of_str(&compat.id))
}

fn encode_tuple(compat: &RunServiceCompatibility) -> Encoder {
    let mut enc = Encoder::new();
    enc.record(|r| {
        r.field(1, |e| e.str(&compat.id));
        r.field(2, |e| e.str(&compat.fingerprint));
    });
    enc
}

/// The exact projection of one attachment's services, encoded once and shared by both views.
struct ExactAttachment {
    services: Vec<Encoder>,
    mcp: Vec<Encoder>,
    digest: Fingerprint,
}

impl ExactAttachment {
    fn encode(services: &[ServiceRef]) -> Self {
        let mut encoded = Vec::with_capacity(services.len());
        let mut mcp = Vec::new();
        for service in services {
            let mut enc = Encoder::new();
            encode_service(&mut enc, service);
            encoded.push(enc);
            if let Some(server) = &service.mcp {
                let mut enc = Encoder::new();
                encode_mcp(&mut enc, server);
                mcp.push(enc);
            }
        }
        let digest = set_digest(EXACT_ATTACHMENT, &encoded);
        Self {
            services: encoded,
            mcp,
            digest,
        }
    }

    /// `attachment.exact:<digest of the sorted service ids>`; none for an empty attachment,
    /// which contributes nothing. Service ids are unique across a validated run, so names are.
    fn component_name(&self, services: &[ServiceRef]) -> Option<ComponentName> {
        if services.is_empty() {
            return None;
        }
        let mut ids: Vec<&str> = services.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        let mut enc = Encoder::new();
        enc.list(ids, |e, id| e.str(id));
        let d = Fingerprint::of_encoded(EXACT_ATTACHMENT, &enc).short();
        Some(component_name("attachment.exact", d))
    }
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
            }
            | McpTransport::Sse {
                url,
                headers,
                bearer_token_env_var,
            } => e.record(|r| {
                r.field(1, |e| e.str(url));
                r.field(2, |e| e.map(headers, |e, k| e.str(k), |e, v| e.str(v)));
                r.field(3, |e| encode_opt_str(e, bearer_token_env_var.as_ref()));
            }),
        });
    });
}
