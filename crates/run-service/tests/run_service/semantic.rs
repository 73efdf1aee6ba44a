//! The semantic fingerprint builder: every semantic property counts, order does not.

use run_service::{SemanticFingerprint, TransportKind};
use serde_json::json;

/// The semantic properties of one provider; each test variant changes one of them.
#[derive(Clone)]
struct Props {
    mcp_key: &'static str,
    transport: TransportKind,
    required: bool,
    arg_type: &'static str,
    revision: &'static str,
    scope: &'static str,
}

const BASE: Props = Props {
    mcp_key: "agent-ui",
    transport: TransportKind::StreamableHttp,
    required: true,
    arg_type: "string",
    revision: "1",
    scope: "tenant-a:ui.ask",
};

fn builder(p: &Props) -> SemanticFingerprint {
    SemanticFingerprint::new()
        .service_role("agent-ui")
        .mcp_server(p.mcp_key, p.transport, p.required)
        .tool(
            "ask",
            &json!({"type": "object", "properties": {"q": {"type": p.arg_type}}}),
            p.revision,
        )
        .authorization("bearer", p.scope)
        .protocol_revision("2025-06-18")
}

fn base() -> SemanticFingerprint {
    builder(&BASE)
}

#[test]
fn each_semantic_change_changes_the_fingerprint() {
    let reference = base().finish();
    let with = |change: fn(&mut Props)| {
        let mut p = BASE.clone();
        change(&mut p);
        builder(&p).finish()
    };
    let variants = [
        ("service set", base().service_role("extra").finish()),
        ("mcp key", with(|p| p.mcp_key = "agent-ui-2")),
        ("transport", with(|p| p.transport = TransportKind::Sse)),
        ("required flag", with(|p| p.required = false)),
        ("tool schema", with(|p| p.arg_type = "integer")),
        ("tool revision", with(|p| p.revision = "2")),
        ("auth scope", with(|p| p.scope = "tenant-b:ui.ask")),
        ("protocol", base().protocol_revision("2026-01-01").finish()),
    ];
    for (what, fp) in variants {
        assert_ne!(fp, reference, "{what} must change the fingerprint");
    }
    // And nothing else does: the same properties give the same fingerprint.
    assert_eq!(builder(&BASE).finish(), reference);
}

#[test]
fn order_and_json_key_order_do_not_matter() {
    let a = SemanticFingerprint::new()
        .service_role("a")
        .service_role("b")
        .tool("t", &json!({"x": 1, "y": [1, 2]}), "1")
        .finish();
    let b = SemanticFingerprint::new()
        .tool(
            "t",
            &serde_json::from_str(r#"{"y": [1, 2], "x": 1}"#).unwrap(),
            "1",
        )
        .service_role("b")
        .service_role("a")
        .finish();
    assert_eq!(a, b);
    // But array order and JSON types do matter.
    let c = SemanticFingerprint::new()
        .service_role("a")
        .service_role("b")
        .tool("t", &json!({"x": 1, "y": [2, 1]}), "1")
        .finish();
    assert_ne!(a, c);
    let d = SemanticFingerprint::new()
        .service_role("a")
        .service_role("b")
        .tool("t", &json!({"x": "1", "y": [1, 2]}), "1")
        .finish();
    assert_ne!(a, d);
}

#[test]
fn output_is_a_fingerprint_string() {
    let fp = base().finish();
    assert!(
        fp.parse::<compat_fingerprint::Fingerprint>().is_ok(),
        "{fp}"
    );
}
