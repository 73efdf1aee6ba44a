//! A canary secret never appears in Debug output, serialized DTOs, views or errors.

use run_service::{
    EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef, build_views,
};

const CANARY: &str = "sk-CANARY-do-not-leak-91c2";

fn attachment() -> RunAttachment {
    RunAttachment::new([ServiceRef::new("svc", "svc")
        .with_url("http://127.0.0.1:9/mcp")
        .with_mcp(
            McpServer::streamable_http("svc", "http://127.0.0.1:9/mcp")
                .with_bearer_token_env("SVC_TOKEN"),
        )
        .with_secret_env(EnvBinding::new("SVC_TOKEN", CANARY))])
    .with_resume_compatibility(RunServiceCompatibility::new("com.example.svc", "b3:sem"))
}

#[test]
fn debug_and_serde_never_show_the_secret() {
    let a = attachment();
    let debug = format!("{a:?} {:#?}", a.services[0].secret_env[0]);
    assert!(!debug.contains(CANARY), "{debug}");
    assert!(debug.contains("SVC_TOKEN"), "names stay visible: {debug}");
    let json = serde_json::to_string(&a.services).unwrap();
    assert!(!json.contains(CANARY), "{json}");
    assert!(json.contains("\"secret_env\":[\"SVC_TOKEN\"]"), "{json}");
    let views = build_views(&[a], &[]).unwrap();
    assert!(!format!("{views:?}").contains(CANARY));
    let components = serde_json::to_string(views.session.components()).unwrap();
    assert!(!components.contains(CANARY));
}

#[test]
fn compatibility_debug_shows_digests_not_strings() {
    let c = RunServiceCompatibility::new("com.example.svc", format!("fp-{CANARY}"));
    let debug = format!("{c:?}");
    assert!(
        !debug.contains(CANARY) && !debug.contains("com.example"),
        "{debug}"
    );
}

#[test]
fn the_value_is_reachable_only_through_expose_secret() {
    use run_service::ExposeSecret;
    let b = EnvBinding::new("T", CANARY);
    assert_eq!(b.value().expose_secret(), CANARY);
    // Equality compares names only, so no timing or logic depends on the secret.
    assert_eq!(b, EnvBinding::new("T", "other"));
}
