//! A builder for provider-side semantic fingerprints that cannot take allocation details.

use compat_fingerprint::{Encoder, Fingerprint, Kind};

use crate::TransportKind;

const SEMANTIC: Kind = Kind::new("agent-sdk 2026-11-30 run-service semantic-fingerprint v1");

/// Builds the [`fingerprint`](crate::RunServiceCompatibility::fingerprint) half of a
/// compatibility tuple from semantic properties only.
///
/// There is deliberately no method that takes a URL, port, token, run id, process id or
/// timestamp: what changes on every allocation cannot reach the fingerprint by accident.
/// Everything given is order-insensitive (each kind of property is a set) and hashed under a
/// dedicated blake3 context; the result is `b3:<hex>`.
///
/// ```
/// use run_service::{SemanticFingerprint, TransportKind};
/// use serde_json::json;
///
/// let v1 = SemanticFingerprint::new()
///     .service_role("orders")
///     .mcp_server("orders", TransportKind::StreamableHttp, true)
///     .tool("lookup_order", &json!({"type": "object"}), "3")
///     .authorization("bearer", "orders:read")
///     .finish();
/// let v2 = SemanticFingerprint::new()
///     .service_role("orders")
///     .mcp_server("orders", TransportKind::StreamableHttp, true)
///     .tool("lookup_order", &json!({"type": "object"}), "4") // new revision
///     .authorization("bearer", "orders:read")
///     .finish();
/// assert_ne!(v1, v2);
/// assert!(v1.starts_with("b3:"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct SemanticFingerprint {
    roles: Vec<String>,
    mcp: Vec<(String, TransportKind, bool)>,
    tools: Vec<(String, Encoder, String)>,
    authorization: Vec<(String, String)>,
    protocol: Vec<String>,
}

impl SemanticFingerprint {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A logical service role, for example `agent-ui`.
    pub fn service_role(mut self, role: &str) -> Self {
        self.roles.push(role.to_owned());
        self
    }

    /// An MCP server key with its transport kind and required flag.
    pub fn mcp_server(mut self, key: &str, transport: TransportKind, required: bool) -> Self {
        self.mcp.push((key.to_owned(), transport, required));
        self
    }

    /// A tool with its JSON Schema and revision. The schema is encoded canonically (object
    /// keys sorted), so key order does not matter.
    pub fn tool(mut self, name: &str, schema: &serde_json::Value, revision: &str) -> Self {
        let mut enc = Encoder::new();
        encode_json(&mut enc, schema);
        self.tools.push((name.to_owned(), enc, revision.to_owned()));
        self
    }

    /// An authorization class (for example `bearer`, `mtls`) and a non-secret scope (tenant,
    /// principal class, allowed operations, approval policy).
    pub fn authorization(mut self, class: &str, scope: &str) -> Self {
        self.authorization
            .push((class.to_owned(), scope.to_owned()));
        self
    }

    /// A protocol revision, for example an MCP protocol version.
    pub fn protocol_revision(mut self, revision: &str) -> Self {
        self.protocol.push(revision.to_owned());
        self
    }

    /// The fingerprint, as `b3:<hex>`.
    pub fn finish(&self) -> String {
        Fingerprint::of(SEMANTIC, |e| {
            e.record(|r| {
                r.field(1, |e| e.set(&self.roles, |e, s| e.str(s)));
                r.field(2, |e| {
                    e.set(&self.mcp, |e, (key, kind, required)| {
                        e.record(|r| {
                            r.field(1, |e| e.str(key));
                            r.field(2, |e| e.u64(kind.code()));
                            r.field(3, |e| e.bool(*required));
                        })
                    })
                });
                r.field(3, |e| {
                    e.set(&self.tools, |e, (name, schema, revision)| {
                        e.record(|r| {
                            r.field(1, |e| e.str(name));
                            r.field(2, |e| e.encoded(schema));
                            r.field(3, |e| e.str(revision));
                        })
                    })
                });
                r.field(4, |e| {
                    e.set(&self.authorization, |e, (class, scope)| {
                        e.record(|r| {
                            r.field(1, |e| e.str(class));
                            r.field(2, |e| e.str(scope));
                        })
                    })
                });
                r.field(5, |e| e.set(&self.protocol, |e, s| e.str(s)));
            })
        })
        .to_string()
    }
}

/// Canonical encoding of a JSON value: objects as maps (key order irrelevant), arrays as lists,
/// numbers by their JSON text, null as an empty field 6. Each JSON type is a distinct record tag, so `"1"` ≠ `1`.
pub(crate) fn encode_json(e: &mut Encoder, value: &serde_json::Value) {
    use serde_json::Value;
    e.record(|r| match value {
        Value::Null => {
            r.field(6, |_| {});
        }
        Value::Bool(b) => {
            r.field(1, |e| e.bool(*b));
        }
        Value::Number(n) => {
            r.field(2, |e| e.str(&n.to_string()));
        }
        Value::String(s) => {
            r.field(3, |e| e.str(s));
        }
        Value::Array(items) => {
            r.field(4, |e| e.list(items, encode_json));
        }
        Value::Object(map) => {
            r.field(5, |e| e.map(map, |e, k| e.str(k), encode_json));
        }
    });
}
