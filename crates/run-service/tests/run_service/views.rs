//! The concrete and session views: what each one reacts to.

use run_service::{McpServer, RunAttachment, build_views};

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
