//! Private process signatures: exact, secret-sensitive, never shown.

use driver_spi::{ProcessAction, ProcessSignature, ProcessSignatureBuilder, SessionContext};
use run_service::{EnvBinding, McpServer};

use crate::{FIRST, SECOND, profile, request};

fn base() -> ProcessSignatureBuilder {
    ProcessSignature::builder()
        .command("codex", ["app-server", "--listen", "stdio://"])
        .cwd("/work/space")
        .env("HOME", "/home/agent")
        .secret_env([&EnvBinding::new("UI_TOKEN", "secret-1")])
        .mcp([
            &McpServer::streamable_http("ui", "http://127.0.0.1:4101/mcp")
                .with_bearer_token_env("UI_TOKEN"),
        ])
        .model(Some("gpt-test"))
        .flag("--full-auto")
        .component("sandbox", "workspace-write")
}

#[test]
fn equal_configurations_have_equal_signatures() {
    assert_eq!(base().finish(), base().finish());
    // Env maps ignore insertion order.
    let a = ProcessSignature::builder()
        .env("A", "1")
        .env("B", "2")
        .secret_env([&EnvBinding::new("X", "x"), &EnvBinding::new("Y", "y")])
        .finish();
    let b = ProcessSignature::builder()
        .env("B", "2")
        .env("A", "1")
        .secret_env([&EnvBinding::new("Y", "y"), &EnvBinding::new("X", "x")])
        .finish();
    assert_eq!(a, b);
}

#[test]
fn every_part_of_the_configuration_changes_the_signature() {
    let base_sig = base().finish();
    let variants: Vec<(&str, ProcessSignature)> = vec![
        (
            "command",
            base()
                .command("claude", ["app-server", "--listen", "stdio://"])
                .finish(),
        ),
        ("args", base().command("codex", ["app-server"]).finish()),
        ("cwd", base().cwd("/elsewhere").finish()),
        ("env value", base().env("HOME", "/root").finish()),
        ("env name", base().env("EXTRA", "1").finish()),
        (
            "secret value",
            base()
                .secret_env([&EnvBinding::new("UI_TOKEN", "secret-2")])
                .finish(),
        ),
        (
            "secret name",
            base()
                .secret_env([&EnvBinding::new("UI_TOKEN_2", "secret-1")])
                .finish(),
        ),
        (
            "mcp url",
            ProcessSignature::builder()
                .command("codex", ["app-server", "--listen", "stdio://"])
                .cwd("/work/space")
                .env("HOME", "/home/agent")
                .secret_env([&EnvBinding::new("UI_TOKEN", "secret-1")])
                .mcp([
                    &McpServer::streamable_http("ui", "http://127.0.0.1:4202/mcp")
                        .with_bearer_token_env("UI_TOKEN"),
                ])
                .model(Some("gpt-test"))
                .flag("--full-auto")
                .component("sandbox", "workspace-write")
                .finish(),
        ),
        ("model", base().model(Some("other")).finish()),
        ("no model", base().model(None).finish()),
        ("flag", base().flag("--verbose").finish()),
        (
            "component",
            base().component("sandbox", "read-only").finish(),
        ),
        ("service", base().services([&FIRST.service()]).finish()),
    ];
    for (what, sig) in variants {
        assert_ne!(sig, base_sig, "{what} must change the signature");
    }
}

#[test]
fn a_rotated_request_needs_a_new_process() {
    let first = request("r1", &FIRST, SessionContext::start(), profile("e1", "s"));
    let same = request("r2", &FIRST, SessionContext::start(), profile("e1", "s"));
    let rotated = request("r3", &SECOND, SessionContext::start(), profile("e2", "s"));
    fn sig(r: &driver_spi::Request) -> ProcessSignature {
        ProcessSignature::builder()
            .command("agent", ["--serve"])
            .request(r)
            .finish()
    }
    let live = sig(&first);
    assert_eq!(ProcessSignature::decide(None, &live), ProcessAction::Spawn);
    assert_eq!(
        ProcessSignature::decide(Some(&live), &sig(&same)),
        ProcessAction::Reuse
    );
    assert_eq!(
        ProcessSignature::decide(Some(&live), &sig(&rotated)),
        ProcessAction::Replace
    );

    // Only the token rotates: still a new process.
    let mut token_only = first.clone();
    token_only.runtime.secret_env = vec![EnvBinding::new(FIRST.env_name, "rotated-token")];
    assert_ne!(sig(&token_only), live);
    // Instructions and the exact profile fingerprint count as well.
    assert_ne!(sig(&first.clone().with_instructions("be brief")), live);
    assert_ne!(sig(&first.clone().with_profile(profile("e9", "s"))), live);
    // The run id and prompt do not: they are per turn.
    let mut next_turn = first.clone();
    next_turn.prompt = "another prompt".to_owned();
    assert_eq!(sig(&next_turn), live);
}

#[test]
fn signatures_and_builders_show_nothing_secret() {
    let sig = base().finish();
    assert_eq!(format!("{sig:?}"), "ProcessSignature(..)");
    assert_eq!(format!("{sig:#?}"), "ProcessSignature(..)");
    let builder = format!("{:?}", base());
    assert!(!builder.contains("secret-1"), "{builder}");
    assert!(builder.contains("UI_TOKEN"));
}

/// A pool's recycle reason: the signature names what changed (component and variable names,
/// never a value), in name order, and nothing when it is equal.
#[test]
fn changed_components_name_what_changed_and_no_value() {
    let base = || {
        ProcessSignature::builder()
            .command("codex", ["app-server"])
            .cwd("/work")
            .env("RUST_LOG", "warn")
            .secret_env([&EnvBinding::new("UI_TOKEN", "token-a-canary")])
            .model(Some("m1"))
            .component("sandbox", "read-only")
    };
    let live = base().finish();
    assert!(live.changed_components(&base().finish()).is_empty());
    let rotated = base()
        .secret_env([&EnvBinding::new("UI_TOKEN", "token-b-canary")])
        .finish();
    assert_eq!(live.changed_components(&rotated), ["secret_env:UI_TOKEN"]);
    let several = base()
        .model(Some("m2"))
        .env("EXTRA", "1")
        .component("sandbox", "workspace-write")
        .finish();
    assert_eq!(
        several.changed_components(&live),
        ["env:EXTRA", "model", "sandbox"]
    );
    assert_eq!(
        live.changed_components(&several),
        ["env:EXTRA", "model", "sandbox"]
    );
    let moved = base().cwd("/elsewhere").finish();
    assert_eq!(moved.changed_components(&live), ["cwd"]);
    for name in live.changed_components(&rotated) {
        assert!(!name.contains("canary"), "{name}");
    }
}
