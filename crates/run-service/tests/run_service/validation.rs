//! Every validation case has a typed error, and no message echoes the value.

use run_service::{
    EnvBinding, Field, Limits, McpServer, Reason, RunAttachment, RunServiceCompatibility,
    ServiceRef, ValidationError, validate_run,
};

use crate::support::{A, B, opted_in};

const CANARY: &str = "CANARY-7f3a";

fn tuple(id: &str, fingerprint: &str) -> RunAttachment {
    RunAttachment::new([ServiceRef::new("svc", "svc")])
        .with_resume_compatibility(RunServiceCompatibility::new(id, fingerprint))
}

fn err(attachments: &[RunAttachment], host: &[McpServer]) -> ValidationError {
    let e = validate_run(attachments, host).unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(!text.contains(CANARY), "error echoes a value: {text}");
    e
}

fn assert_case(e: &ValidationError, field: Field, reason: Reason) {
    assert_eq!((e.field(), e.reason()), (field, reason), "{e}");
}

#[test]
fn compatibility_parts_are_required() {
    let e = err(&[tuple("", &format!("b3:{CANARY}"))], &[]);
    assert_case(&e, Field::CompatibilityId, Reason::MissingPart);
    let e = err(&[tuple(&format!("com.example.{CANARY}"), "")], &[]);
    assert_case(&e, Field::CompatibilityFingerprint, Reason::MissingPart);
    assert_eq!(e.attachment(), Some(0));
}

#[test]
fn whitespace_only_parts_are_rejected() {
    assert_case(
        &err(&[tuple("   ", "fp")], &[]),
        Field::CompatibilityId,
        Reason::WhitespaceOnly,
    );
    assert_case(
        &err(&[tuple("id", "  ")], &[]),
        Field::CompatibilityFingerprint,
        Reason::WhitespaceOnly,
    );
}

#[test]
fn surrounding_whitespace_is_rejected() {
    assert_case(
        &err(&[tuple(" com.example.ui", "fp")], &[]),
        Field::CompatibilityId,
        Reason::SurroundingWhitespace,
    );
    assert_case(
        &err(&[tuple("com.example.ui", "fp ")], &[]),
        Field::CompatibilityFingerprint,
        Reason::SurroundingWhitespace,
    );
}

#[test]
fn oversized_parts_are_rejected_with_their_length() {
    let long_id = format!("{CANARY}{}", "x".repeat(Limits::COMPATIBILITY_ID));
    let e = err(&[tuple(&long_id, "fp")], &[]);
    assert_case(&e, Field::CompatibilityId, Reason::TooLong);
    assert_eq!(e.len(), long_id.len());
    let long_fp = "f".repeat(Limits::COMPATIBILITY_FINGERPRINT + 1);
    assert_case(
        &err(&[tuple("id", &long_fp)], &[]),
        Field::CompatibilityFingerprint,
        Reason::TooLong,
    );
    // Exactly at the limit is fine.
    validate_run(
        &[tuple(
            &"i".repeat(Limits::COMPATIBILITY_ID),
            &"f".repeat(Limits::COMPATIBILITY_FINGERPRINT),
        )],
        &[],
    )
    .unwrap();
}

#[test]
fn control_characters_are_rejected() {
    assert_case(
        &err(&[tuple("com.example\0ui", "fp")], &[]),
        Field::CompatibilityId,
        Reason::ControlCharacter,
    );
    assert_case(
        &err(&[tuple("id", "fp\n")], &[]),
        Field::CompatibilityFingerprint,
        Reason::ControlCharacter,
    );
    let svc = RunAttachment::new([
        ServiceRef::new("svc", "svc").with_url(format!("http://x/{CANARY}\r\n"))
    ]);
    assert_case(&err(&[svc], &[]), Field::Url, Reason::ControlCharacter);
}

#[test]
fn duplicate_compatibility_ids_in_one_run_are_rejected() {
    let first = opted_in(&A, "fp-1");
    let mut second = RunAttachment::new([ServiceRef::new("other", "other")]);
    second.resume_compatibility =
        Some(RunServiceCompatibility::new("com.example.agent-ui", "fp-2"));
    let e = err(&[first, second], &[]);
    assert_case(&e, Field::CompatibilityId, Reason::DuplicateCompatibilityId);
    assert_eq!(e.attachment(), Some(1));
}

#[test]
fn invalid_env_var_names_are_rejected() {
    for bad in ["", "1ABC", "A-B", "A B", "Ä", "A=B"] {
        let svc = ServiceRef::new("svc", "svc").with_secret_env(EnvBinding::new(bad, CANARY));
        assert_case(
            &err(&[RunAttachment::new([svc])], &[]),
            Field::SecretEnvName,
            Reason::InvalidEnvName,
        );
    }
    let bearer = ServiceRef::new("svc", "svc").with_mcp(
        McpServer::streamable_http("svc", "http://127.0.0.1:1/mcp")
            .with_bearer_token_env("BAD-NAME"),
    );
    assert_case(
        &err(&[RunAttachment::new([bearer])], &[]),
        Field::BearerTokenEnvVar,
        Reason::InvalidEnvName,
    );
    let stdio = McpServer::stdio("tool", "tool-bin").with_env("9X", "v");
    assert_case(&err(&[], &[stdio]), Field::McpEnv, Reason::InvalidEnvName);
}

#[test]
fn the_same_secret_env_name_bound_twice_is_rejected() {
    // Twice within one service, and across attachments.
    let svc = ServiceRef::new("svc", "svc")
        .with_secret_env(EnvBinding::new("TOKEN", CANARY))
        .with_secret_env(EnvBinding::new("TOKEN", CANARY));
    assert_case(
        &err(&[RunAttachment::new([svc])], &[]),
        Field::SecretEnvName,
        Reason::DuplicateSecretEnv,
    );
    let one = RunAttachment::new([
        ServiceRef::new("a", "a").with_secret_env(EnvBinding::new("TOKEN", "x"))
    ]);
    let two = RunAttachment::new([
        ServiceRef::new("b", "b").with_secret_env(EnvBinding::new("TOKEN", "y"))
    ]);
    assert_case(
        &err(&[one, two], &[]),
        Field::SecretEnvName,
        Reason::DuplicateSecretEnv,
    );
}

#[test]
fn mcp_key_collisions_are_rejected() {
    // Between two attachments.
    let one =
        RunAttachment::new([ServiceRef::new("a", "a").with_mcp(McpServer::stdio("tools", "x"))]);
    let two =
        RunAttachment::new([ServiceRef::new("b", "b").with_mcp(McpServer::stdio("tools", "y"))]);
    assert_case(
        &err(&[one, two], &[]),
        Field::McpKey,
        Reason::DuplicateMcpKey,
    );
    // Between an attachment and a host-declared server.
    let e = err(
        &[crate::support::exact(&B)],
        &[McpServer::stdio("agent-ui", "z")],
    );
    assert_case(&e, Field::McpKey, Reason::DuplicateMcpKey);
    assert_eq!(e.attachment(), None);
}

#[test]
fn service_ids_are_required_and_unique() {
    assert_case(
        &err(&[RunAttachment::new([ServiceRef::new("", "x")])], &[]),
        Field::ServiceId,
        Reason::Empty,
    );
    let dup = RunAttachment::new([ServiceRef::new("svc", "a"), ServiceRef::new("svc", "b")]);
    assert_case(
        &err(&[dup], &[]),
        Field::ServiceId,
        Reason::DuplicateServiceId,
    );
}

#[test]
fn inline_credential_headers_are_rejected_without_echo() {
    let server = McpServer::streamable_http("svc", "http://127.0.0.1:1/mcp")
        .with_header("Authorization", format!("Bearer {CANARY}"));
    let e = err(&[], &[server]);
    assert_case(&e, Field::McpHeader, Reason::CredentialInHeader);
    // No digest of a credential: it could be tested against guesses offline.
    assert_eq!(e.digest(), None);
    let guess = compat_fingerprint::ShortDigest::of_str(&format!("Bearer {CANARY}")).to_string();
    assert!(!e.to_string().contains(&guess), "{e}");
}

#[test]
fn messages_name_field_reason_length_and_digest() {
    let e = err(&[tuple("  ", "fp")], &[]);
    let msg = e.to_string();
    assert!(msg.contains("attachment 0"), "{msg}");
    assert!(msg.contains("compatibility id"), "{msg}");
    assert!(msg.contains("2 bytes"), "{msg}");
    assert!(msg.contains(&e.digest().unwrap().to_string()), "{msg}");
}

#[test]
fn valid_runs_pass() {
    validate_run(
        &[opted_in(&A, "fp"), crate::support::search(1)],
        &[McpServer::stdio("local", "bin")],
    )
    .unwrap();
}

/// Credentials in places that are shown and hashed (URLs, headers, arguments, plain env and
/// metadata) are refused with a typed reason, and the error shows neither them nor a digest.
#[test]
fn credential_shaped_values_are_refused_without_echo() {
    let url = |u: &str| McpServer::streamable_http("svc", u);
    let cases: Vec<(McpServer, Field, Reason)> = vec![
        (
            url(&format!("https://user:{CANARY}@tools.example/mcp")),
            Field::Url,
            Reason::CredentialInUrl,
        ),
        (
            url(&format!("postgresql://app:{CANARY}@db/x")),
            Field::Url,
            Reason::CredentialInUrl,
        ),
        (
            url(&format!("https://t.example/mcp?token={CANARY}")),
            Field::Url,
            Reason::CredentialInUrl,
        ),
        (
            url(&format!("https://t.example/mcp?a=1&access_token={CANARY}")),
            Field::Url,
            Reason::CredentialInUrl,
        ),
        (
            url(&format!("https://t.example/mcp?key={CANARY}#x")),
            Field::Url,
            Reason::CredentialInUrl,
        ),
        (
            url("https://t.example/mcp").with_header("api-key", CANARY),
            Field::McpHeader,
            Reason::CredentialInHeader,
        ),
        (
            url("https://t.example/mcp").with_header("X-Auth-Token", CANARY),
            Field::McpHeader,
            Reason::CredentialInHeader,
        ),
        (
            url("https://t.example/mcp").with_header("Private-Token", CANARY),
            Field::McpHeader,
            Reason::CredentialInHeader,
        ),
        (
            McpServer::stdio("s", "bin").with_args(["--token", CANARY]),
            Field::Command,
            Reason::CredentialInArgument,
        ),
        (
            McpServer::stdio("s", "bin").with_args([format!("--api-key={CANARY}")]),
            Field::Command,
            Reason::CredentialInArgument,
        ),
        (
            McpServer::stdio("s", "bin").with_env("GITHUB_TOKEN", CANARY),
            Field::McpEnv,
            Reason::CredentialInPlainValue,
        ),
        (
            McpServer::stdio("s", "bin").with_env("SERVICE_API_KEY", CANARY),
            Field::McpEnv,
            Reason::CredentialInPlainValue,
        ),
    ];
    for (server, field, reason) in cases {
        let e = err(&[], &[server]);
        assert_case(&e, field, reason);
        assert_eq!(e.digest(), None, "{e}");
        assert!(!e.to_string().contains(CANARY), "{e}");
        assert!(!format!("{e:?}").contains(CANARY), "{e:?}");
    }
    // Metadata named like a credential, on a service.
    let service = ServiceRef::new("svc", "Svc")
        .with_url("http://127.0.0.1:1/mcp")
        .with_metadata("upstream_token", CANARY);
    let e = validate_run(&[RunAttachment::new([service])], &[]).unwrap_err();
    assert_eq!(e.reason(), Reason::CredentialInPlainValue);
    assert!(!e.to_string().contains(CANARY));
    // Ordinary values still pass.
    validate_run(
        &[],
        &[
            url("https://t.example/mcp?page=2&q=key+points"),
            McpServer::stdio("s", "bin").with_args(["--token-file", "/run/secrets/t", "--verbose"]),
            McpServer::stdio("s2", "bin")
                .with_env("LOG_LEVEL", "debug")
                .with_args(["--token"]),
        ],
    )
    .unwrap();
}

/// An MCP server's bearer variable must be bound by its own attachment: otherwise it could
/// name the runtime's model key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …) and every CLI would
/// send that key to the server. A binding in another attachment does not count.
#[test]
fn a_bearer_variable_must_be_bound_by_its_own_attachment() {
    let server = |var: &str| {
        ServiceRef::new("ui", "UI").with_mcp(
            McpServer::streamable_http("ui", "http://127.0.0.1:4100/mcp")
                .with_bearer_token_env(var),
        )
    };
    for model_key in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "CODEX_API_KEY",
    ] {
        let e = err(&[RunAttachment::new([server(model_key)])], &[]);
        assert_case(&e, Field::BearerTokenEnvVar, Reason::UnboundBearerVar);
        assert_eq!(e.attachment(), Some(0));
    }
    // Bound by a sibling service of the same attachment: fine.
    let bound = RunAttachment::new([
        server("UI_TOKEN"),
        ServiceRef::new("auth", "Auth").with_secret_env(EnvBinding::new("UI_TOKEN", CANARY)),
    ]);
    assert!(validate_run(std::slice::from_ref(&bound), &[]).is_ok());
    // Bound only by another attachment: refused.
    let elsewhere = RunAttachment::new([
        ServiceRef::new("other", "Other").with_secret_env(EnvBinding::new("UI_TOKEN", CANARY))
    ]);
    let e = err(&[elsewhere, RunAttachment::new([server("UI_TOKEN")])], &[]);
    assert_case(&e, Field::BearerTokenEnvVar, Reason::UnboundBearerVar);
    assert_eq!(e.attachment(), Some(1));
    // A host server's bearer is checked against the host's own bindings.
    let host = McpServer::streamable_http("docs", "http://127.0.0.1:9/mcp")
        .with_bearer_token_env("OPENAI_API_KEY");
    let e =
        run_service::check_host_bearers(std::slice::from_ref(&host), &["DOCS_TOKEN"]).unwrap_err();
    assert_case(&e, Field::BearerTokenEnvVar, Reason::UnboundBearerVar);
    assert!(run_service::check_host_bearers(&[host], &["OPENAI_API_KEY"]).is_ok());
}

/// A token-shaped canary (alphanumeric, as key shapes require).
const SHAPED: &str = "CANARY7f3aQX";

/// Plain values are checked by shape as well as by name: `auth = <token>` in metadata, a
/// bearer credential or a key-shaped value under an innocent name are refused, and the error
/// carries no digest of them.
#[test]
fn metadata_and_plain_values_shaped_like_credentials_are_refused() {
    let with_metadata =
        |k: &str, v: &str| RunAttachment::new([ServiceRef::new("svc", "svc").with_metadata(k, v)]);
    for (key, value) in [
        ("auth", CANARY.to_owned()),
        ("Authorization", CANARY.to_owned()),
        ("upstream_auth", CANARY.to_owned()),
        ("credentials", CANARY.to_owned()),
        ("note", format!("Bearer {CANARY}abcdef")),
        ("note", format!("sk-proj-{SHAPED}0123456789abcdef")),
        ("note", format!("ghp_{SHAPED}0123456789abcdefghijklmnop")),
        ("endpoint", format!("https://u:{CANARY}@tools.example/")),
        ("note", format!("token={CANARY}")),
    ] {
        let e = err(&[with_metadata(key, &value)], &[]);
        assert!(!format!("{e} {e:?}").contains(SHAPED));
        assert_case(&e, Field::Metadata, Reason::CredentialInPlainValue);
        assert!(e.digest().is_none(), "{key}: a credential gets no digest");
    }
    let stdio = McpServer::stdio("s", "bin").with_env("MODE", format!("Bearer {CANARY}xyz"));
    assert_case(
        &err(&[], &[stdio]),
        Field::McpEnv,
        Reason::CredentialInPlainValue,
    );
    let header = McpServer::streamable_http("h", "https://t.example/mcp")
        .with_header("X-Note", format!("Bearer {CANARY}xyz"));
    assert_case(
        &err(&[], &[header]),
        Field::McpHeader,
        Reason::CredentialInPlainValue,
    );
    // Ordinary metadata passes.
    for (key, value) in [
        ("region", "eu-west-1"),
        ("auth_mode", "none"),
        ("url", "https://t.example/a"),
    ] {
        assert!(
            validate_run(&[with_metadata(key, value)], &[]).is_ok(),
            "{key}"
        );
    }
}
