//! The semantic fingerprint builder: every semantic property counts, order does not.

use run_service::{SemanticFingerprint, TransportKind};
use serde_json::json;

fn base() -> SemanticFingerprint {
    SemanticFingerprint::new()
        .service_role("agent-ui")
        .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
        .tool(
            "ask",
            &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            "1",
        )
        .authorization("bearer", "tenant-a:ui.ask")
        .protocol_revision("2025-06-18")
}

#[test]
fn each_semantic_change_changes_the_fingerprint() {
    let reference = base().finish();
    let variants = [
        ("service set", base().service_role("extra").finish()),
        (
            "mcp key",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui-2", TransportKind::StreamableHttp, true)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                    "1",
                )
                .authorization("bearer", "tenant-a:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        (
            "transport",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui", TransportKind::Sse, true)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                    "1",
                )
                .authorization("bearer", "tenant-a:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        (
            "required flag",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui", TransportKind::StreamableHttp, false)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                    "1",
                )
                .authorization("bearer", "tenant-a:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        (
            "tool schema",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "integer"}}}),
                    "1",
                )
                .authorization("bearer", "tenant-a:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        (
            "tool revision",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                    "2",
                )
                .authorization("bearer", "tenant-a:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        (
            "auth scope",
            SemanticFingerprint::new()
                .service_role("agent-ui")
                .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
                .tool(
                    "ask",
                    &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
                    "1",
                )
                .authorization("bearer", "tenant-b:ui.ask")
                .protocol_revision("2025-06-18")
                .finish(),
        ),
        ("protocol", base().protocol_revision("2026-01-01").finish()),
    ];
    for (what, fp) in variants {
        assert_ne!(fp, reference, "{what} must change the fingerprint");
    }
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
