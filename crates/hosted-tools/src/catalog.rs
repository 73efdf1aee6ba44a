//! The validated tool catalog and its semantic fingerprint.

use std::collections::BTreeMap;
use std::sync::Arc;

use run_service::{SemanticFingerprint, TransportKind};

use crate::{COMPATIBILITY_ID, HostedTool, SERVICE_ID};

/// The longest tool name MCP clients accept.
pub const MAX_NAME_LEN: usize = 128;
/// The longest revision string.
pub const MAX_REVISION_LEN: usize = 128;

/// Revision of this crate's server behaviour (auth scheme, content mapping, error mapping).
/// Part of the fingerprint: bump it when a change would make a stored conversation unsafe to
/// continue against the new server.
const SERVER_BEHAVIOUR: &str = "hosted-tools server behaviour v1";

/// Why a set of tools is not a valid catalog. Callers branch on the variant; tool names are
/// host-chosen and shown (escaped) except where a name itself is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// A tool has no revision, or a blank one.
    #[error("tool {tool:?} has no revision; set one with HostedTool::with_revision")]
    MissingRevision {
        /// The tool name.
        tool: String,
    },
    /// A tool's revision is too long or has control characters.
    #[error(
        "tool {tool:?} has an invalid revision (at most {MAX_REVISION_LEN} bytes, no control characters)"
    )]
    InvalidRevision {
        /// The tool name.
        tool: String,
    },
    /// Two tools share a name.
    #[error("two tools are named {tool:?}")]
    DuplicateName {
        /// The shared name.
        tool: String,
    },
    /// A tool name is empty, longer than [`MAX_NAME_LEN`] bytes, or uses a character other
    /// than ASCII letters, digits, `_`, `-` and `.`.
    #[error("tool name of {len} bytes is invalid: {reason}")]
    InvalidName {
        /// Length of the name in bytes.
        len: usize,
        /// Why.
        reason: &'static str,
    },
    /// A schema is not a JSON object schema (`{"type": "object", ...}`).
    #[error("tool {tool:?}: the {which} schema must be a JSON object with \"type\": \"object\"")]
    InvalidSchema {
        /// The tool name.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
    },
}

/// A validated set of [`HostedTool`]s: unique valid names, revisions, object schemas.
///
/// Order does not matter: the catalog is kept sorted by name, and its
/// [`fingerprint`](Self::fingerprint) is order-insensitive.
#[derive(Debug, Clone)]
pub struct ToolSet {
    tools: Arc<BTreeMap<String, HostedTool>>,
    fingerprint: String,
}

impl ToolSet {
    /// Validates the tools.
    ///
    /// ```
    /// use hosted_tools::{CatalogError, HostedTool, ToolOutput, ToolSet};
    /// use serde_json::json;
    ///
    /// let echo = |revision: Option<&str>| {
    ///     let tool = HostedTool::new("echo", "Echoes.", json!({"type": "object"}), |_| async {
    ///         Ok(ToolOutput::text("echo"))
    ///     });
    ///     match revision { Some(r) => tool.with_revision(r), None => tool }
    /// };
    /// assert!(ToolSet::new([echo(Some("1"))]).is_ok());
    /// assert!(matches!(ToolSet::new([echo(None)]), Err(CatalogError::MissingRevision { .. })));
    /// assert!(matches!(
    ///     ToolSet::new([echo(Some("1")), echo(Some("2"))]),
    ///     Err(CatalogError::DuplicateName { .. })
    /// ));
    /// ```
    pub fn new(tools: impl IntoIterator<Item = HostedTool>) -> Result<Self, CatalogError> {
        let mut map = BTreeMap::new();
        for tool in tools {
            validate(&tool)?;
            if map.contains_key(&tool.name) {
                return Err(CatalogError::DuplicateName { tool: tool.name });
            }
            map.insert(tool.name.clone(), tool);
        }
        let fingerprint = fingerprint(&map);
        Ok(Self {
            tools: Arc::new(map),
            fingerprint,
        })
    }

    /// The semantic fingerprint (`b3:<hex>`) of the catalog: every tool's name, description,
    /// input and output schemas and revision, plus the service role, MCP key, transport,
    /// required flag, authorization class and server behaviour revision. Nothing
    /// allocation-specific (port, URL, token, env-var name, run) enters it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&HostedTool> {
        self.tools.get(name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &HostedTool> {
        self.tools.values()
    }
}

fn validate(tool: &HostedTool) -> Result<(), CatalogError> {
    let name = &tool.name;
    let invalid = |reason| CatalogError::InvalidName {
        len: name.len(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid("longer than 128 bytes"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(invalid(
            "only ASCII letters, digits, `_`, `-` and `.` are allowed",
        ));
    }
    match tool.revision.as_deref() {
        None => {
            return Err(CatalogError::MissingRevision { tool: name.clone() });
        }
        Some(r) if r.trim().is_empty() => {
            return Err(CatalogError::MissingRevision { tool: name.clone() });
        }
        Some(r) if r.len() > MAX_REVISION_LEN || r.chars().any(char::is_control) => {
            return Err(CatalogError::InvalidRevision { tool: name.clone() });
        }
        Some(_) => {}
    }
    let object_schema = |schema: &serde_json::Value| {
        schema.as_object().is_some_and(|o| {
            o.get("type")
                .is_some_and(|t| t == &serde_json::Value::from("object"))
        })
    };
    if !object_schema(&tool.input_schema) {
        return Err(CatalogError::InvalidSchema {
            tool: name.clone(),
            which: "input",
        });
    }
    if tool
        .output_schema
        .as_ref()
        .is_some_and(|s| !object_schema(s))
    {
        return Err(CatalogError::InvalidSchema {
            tool: name.clone(),
            which: "output",
        });
    }
    Ok(())
}

fn fingerprint(tools: &BTreeMap<String, HostedTool>) -> String {
    let mut fp = SemanticFingerprint::new()
        .service_role(SERVICE_ID)
        .mcp_server(SERVICE_ID, TransportKind::StreamableHttp, true)
        // A fresh random bearer token per agent, granting every tool in this catalog.
        .authorization("bearer", "per-agent-token:whole-catalog")
        .protocol_revision(SERVER_BEHAVIOUR)
        .protocol_revision(COMPATIBILITY_ID);
    for tool in tools.values() {
        // The description and both schemas are semantic: fold them into the tool's schema
        // slot as one canonical JSON value.
        let declaration = serde_json::json!({
            "description": tool.description,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
        });
        fp = fp.tool(
            &tool.name,
            &declaration,
            tool.revision.as_deref().unwrap_or_default(),
        );
    }
    fp.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;
    use crate::ToolOutput;

    fn tool(name: &str, schema: serde_json::Value, revision: &str) -> HostedTool {
        HostedTool::new(name, "d", schema, |_| async { Ok(ToolOutput::text("x")) })
            .with_revision(revision)
    }

    fn obj() -> serde_json::Value {
        json!({"type": "object"})
    }

    #[test]
    fn fingerprint_is_order_insensitive_and_covers_every_declared_property() {
        let a = ToolSet::new([tool("a", obj(), "1"), tool("b", obj(), "1")]).unwrap();
        let b = ToolSet::new([tool("b", obj(), "1"), tool("a", obj(), "1")]).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert!(a.fingerprint().starts_with("b3:"));

        let base = ToolSet::new([tool("a", obj(), "1")]).unwrap();
        let variants = [
            ToolSet::new([tool("a", obj(), "2")]).unwrap(),
            ToolSet::new([tool("a2", obj(), "1")]).unwrap(),
            ToolSet::new([tool("a", json!({"type": "object", "required": ["x"]}), "1")]).unwrap(),
            ToolSet::new([HostedTool::new("a", "other", obj(), |_| async {
                Ok(ToolOutput::text("x"))
            })
            .with_revision("1")])
            .unwrap(),
            ToolSet::new([tool("a", obj(), "1").with_output_schema(obj())]).unwrap(),
            ToolSet::new([tool("a", obj(), "1"), tool("b", obj(), "1")]).unwrap(),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(base.fingerprint(), v.fingerprint(), "variant {i}");
        }
    }

    #[test]
    fn schema_key_order_does_not_matter() {
        let a = ToolSet::new([tool("a", json!({"type": "object", "title": "t"}), "1")]).unwrap();
        let b = ToolSet::new([tool("a", json!({"title": "t", "type": "object"}), "1")]).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
    }

    #[test]
    fn invalid_declarations_are_typed_errors() {
        let long = "x".repeat(129);
        let cases = [
            (tool("", obj(), "1"), "InvalidName"),
            (tool(&long, obj(), "1"), "InvalidName"),
            (tool("has space", obj(), "1"), "InvalidName"),
            (tool("a", obj(), "  "), "MissingRevision"),
            (tool("a", obj(), "bad\nrev"), "InvalidRevision"),
            (tool("a", json!({"type": "string"}), "1"), "InvalidSchema"),
            (tool("a", json!([]), "1"), "InvalidSchema"),
            (
                tool("a", obj(), "1").with_output_schema(json!(true)),
                "InvalidSchema",
            ),
        ];
        for (t, expected) in cases {
            let err = ToolSet::new([t]).unwrap_err();
            assert!(format!("{err:?}").starts_with(expected), "{err:?}");
        }
    }

    #[test]
    fn invalid_name_errors_do_not_echo_the_name() {
        let err = ToolSet::new([tool("secret value", obj(), "1")]).unwrap_err();
        assert!(!err.to_string().contains("secret value"), "{err}");
    }
}
