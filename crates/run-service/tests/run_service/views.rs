//! The concrete and session views: what each one reacts to.

use run_service::{EnvBinding, McpServer, RunAttachment, RunViews, ServiceRef, build_views};

use crate::support::{A, B, exact, opted_in, search};

#[test]
fn opted_in_allocation_change_keeps_session_and_changes_concrete() {
    // Only URL, port, bearer env-var name, reuse key, metadata and secret value differ.
    let before = build_views(&[opted_in(&A, "b3:sem-1")], &[]).unwrap();
    let after = build_views(&[opted_in(&B, "b3:sem-1")], &[]).unwrap();
    assert_eq!(before.session.digest(), after.session.digest());
    assert_eq!(before.session.services(), after.session.services());
    assert_eq!(before.session.mcp(), after.session.mcp());
    assert_eq!(before.session.components(), after.session.components());
    assert_ne!(before.concrete.digest(), after.concrete.digest());
    assert_ne!(before.concrete.services(), after.concrete.services());
    assert_ne!(before.concrete.mcp(), after.concrete.mcp());
}

#[test]
fn exact_attachment_allocation_change_changes_both_views() {
    let before = build_views(&[exact(&A)], &[]).unwrap();
    let after = build_views(&[exact(&B)], &[]).unwrap();
    assert_ne!(before.session.digest(), after.session.digest());
    assert_ne!(before.concrete.digest(), after.concrete.digest());
    let diff = before.session.components().diff(after.session.components());
    assert_eq!(diff.len(), 1);
    assert!(diff[0].name.as_str().starts_with("attachment.exact:"));
}

#[test]
fn secret_value_alone_never_changes_a_view() {
    let mut rotated = crate::support::A;
    rotated.token = "another-secret-value";
    let a = build_views(&[exact(&A)], &[]).unwrap();
    let b = build_views(&[exact(&rotated)], &[]).unwrap();
    assert_eq!(a.concrete.digest(), b.concrete.digest());
    assert_eq!(a.session.digest(), b.session.digest());
}

#[test]
fn changed_semantic_fingerprint_changes_session_view_and_names_the_attachment() {
    let before = build_views(&[opted_in(&A, "b3:sem-1")], &[]).unwrap();
    let after = build_views(&[opted_in(&A, "b3:sem-2")], &[]).unwrap();
    assert_ne!(before.session.digest(), after.session.digest());
    let diff = before.session.components().diff(after.session.components());
    assert_eq!(diff.len(), 1);
    let name = diff[0].name.as_str();
    assert!(name.starts_with("attachment.semantic:"), "{name}");
    assert!(
        !name.contains("example"),
        "component names carry digests, not provider strings"
    );
}

#[test]
fn one_semantic_plus_one_exact_attachment_still_rejects_exact_changes() {
    let before = build_views(&[opted_in(&A, "b3:sem"), search(5001)], &[]).unwrap();
    let rebound = build_views(&[opted_in(&B, "b3:sem"), search(5001)], &[]).unwrap();
    let exact_moved = build_views(&[opted_in(&A, "b3:sem"), search(5002)], &[]).unwrap();
    assert_eq!(before.session.digest(), rebound.session.digest());
    assert_ne!(before.session.digest(), exact_moved.session.digest());
    let diff = before
        .session
        .components()
        .diff(exact_moved.session.components());
    assert_eq!(diff.len(), 1);
    assert!(diff[0].name.as_str().starts_with("attachment.exact:"));
}

#[test]
fn provider_order_does_not_change_either_digest() {
    let ab = build_views(&[opted_in(&A, "b3:sem"), search(5001)], &[]).unwrap();
    let ba = build_views(&[search(5001), opted_in(&A, "b3:sem")], &[]).unwrap();
    assert_eq!(ab, ba);
}

#[test]
fn non_owned_host_mcp_server_is_never_normalized() {
    // A host server whose name and URL resemble the opted-in provider's still counts exactly.
    let host = |port: u16| {
        McpServer::streamable_http("agent-ui-host", format!("http://127.0.0.1:{port}/mcp"))
    };
    let before = build_views(&[opted_in(&A, "b3:sem")], &[host(4101)]).unwrap();
    let after = build_views(&[opted_in(&B, "b3:sem")], &[host(4202)]).unwrap();
    assert_ne!(before.session.digest(), after.session.digest());
    assert_ne!(before.session.mcp(), after.session.mcp());
    let diff = before.session.components().diff(after.session.components());
    assert_eq!(diff.len(), 1);
    assert!(diff[0].name.as_str().starts_with("mcp:"));
}

#[test]
fn opting_in_or_out_is_itself_a_change() {
    let exact_view = build_views(&[exact(&A)], &[]).unwrap();
    let semantic_view = build_views(&[opted_in(&A, "b3:sem")], &[]).unwrap();
    assert_ne!(exact_view.session.digest(), semantic_view.session.digest());
    assert_eq!(
        exact_view.concrete.digest(),
        semantic_view.concrete.digest()
    );
}

#[test]
fn views_are_domain_separated() {
    let v = build_views(&[exact(&A)], &[]).unwrap();
    // Same exact data in both views, yet different digests: different contexts.
    assert_ne!(v.concrete.digest(), v.session.digest());
    assert_ne!(v.concrete.services(), v.session.services());
    assert_ne!(v.concrete.services(), v.concrete.mcp());
}

#[test]
fn empty_run_has_stable_views() {
    let a = build_views(&[], &[]).unwrap();
    let b = build_views(&[RunAttachment::default()], &[]).unwrap();
    assert_eq!(
        a, b,
        "an attachment without services or tuple contributes nothing"
    );
    assert!(a.session.components().is_empty());
}

/// The views of a run with every transport and every header field but secret headers: a
/// plain header, a bearer variable, SSE, stdio, a provider's server and a host's.
fn every_transport() -> RunViews {
    let sse = McpServer::sse("events", "http://127.0.0.1:4300/sse")
        .with_header("X-Workspace", "acme")
        .with_bearer_token_env("EVENTS_TOKEN");
    let files = McpServer::stdio("files", "/usr/bin/files-mcp")
        .with_args(["--root", "/srv"])
        .with_env("MODE", "ro");
    let host = McpServer::streamable_http("docs", "http://127.0.0.1:4400/mcp")
        .with_header("X-Tenant", "t1")
        .with_bearer_token_env("DOCS_TOKEN");
    let events = RunAttachment::new([ServiceRef::new("events", "Events")
        .with_mcp(sse)
        .with_secret_env(EnvBinding::new("EVENTS_TOKEN", "secret-events"))]);
    let files = RunAttachment::new([ServiceRef::new("files", "Files").with_mcp(files)]);
    build_views(
        &[opted_in(&A, "b3:sem"), search(5001), events, files],
        &[host],
    )
    .unwrap()
}

#[test]
fn views_without_secret_headers_keep_their_digests() {
    // Pinned before secret headers existed: a new field of the MCP encoding is written only
    // when it is set, so every stored fingerprint of a run without one stays valid.
    let v = every_transport();
    let pinned = [
        (
            v.concrete.digest(),
            "b3:ad7c072eda268491623c0610c4b65a9e6c8ac27f1e871c1189f6e100b9a4e918",
        ),
        (
            v.concrete.mcp(),
            "b3:52a2efde2adda457d479d8fea5c3b0ca7493d702bd144e925a1a7f5454fc977c",
        ),
        (
            v.session.digest(),
            "b3:954992092d3db0d47ec4ae0b327c7c5a51cadd934266c2d830cd19d605140000",
        ),
        (
            v.session.mcp(),
            "b3:a13c86411f40086f7adf1f074ca19cafd4709bd4fced87435a89f3e5855905f1",
        ),
    ];
    let got: Vec<String> = pinned.iter().map(|(d, _)| d.to_string()).collect();
    let want: Vec<&str> = pinned.iter().map(|(_, p)| *p).collect();
    assert_eq!(got, want);
}
