//! Each redaction pattern is caught on inputs seeded with each token form; ordinary text is
//! left alone; arbitrary input never panics and redaction is idempotent.

use std::borrow::Cow;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use redaction::{Redactor, redact};
use secrecy::SecretString;

/// (input, expected output) for every token form.
const SEEDED: &[(&str, &str)] = &[
    // Authorization schemes.
    (
        "Authorization: Bearer eyJhbGciOi.canaryPayload.sig_-~+/=",
        "Authorization: Bearer [REDACTED]",
    ),
    (
        "authorization: bearer\tcanary123",
        "authorization: bearer\t[REDACTED]",
    ),
    (
        "curl -H 'Authorization: BEARER canaryX' url",
        "curl -H 'Authorization: BEARER [REDACTED]' url",
    ),
    (
        "Authorization: Basic Y2FuYXJ5OnB3",
        "Authorization: Basic [REDACTED]",
    ),
    // sk- keys (OpenAI project keys, Anthropic keys).
    (
        "key sk-proj-canary0123456789abcdef end",
        "key [REDACTED] end",
    ),
    (
        "OPENAI_API_KEY=sk-canaryABCDEFGHIJ",
        "OPENAI_API_KEY=[REDACTED]",
    ),
    ("(sk-ant-api03-canary_0123456789-xyz)", "([REDACTED])"),
    // GitHub and Google keys.
    ("token ghp_canary0123456789ABCDEFGHIJ", "token [REDACTED]"),
    ("gho_canaryAAAAAAAAAAAAAAAAAAAA,", "[REDACTED],"),
    ("github_pat_11canary_0123456789abcdefghij", "[REDACTED]"),
    (
        "key=AIzaSyCanary0123456789abcdefghijklmno",
        "key=[REDACTED]",
    ),
    // JSON fields.
    (
        r#"{"access_token": "canary-at", "x": 1}"#,
        r#"{"access_token": "[REDACTED]", "x": 1}"#,
    ),
    (
        r#"{"refresh_token":"canary-rt"}"#,
        r#"{"refresh_token":"[REDACTED]"}"#,
    ),
    (
        r#"{"id_token" : "canary.id.tok"}"#,
        r#"{"id_token" : "[REDACTED]"}"#,
    ),
    (
        r#"{"claudeAiOauth":{"accessToken":"canary-a","refreshToken":"canary-r"}}"#,
        r#"{"claudeAiOauth":{"accessToken":"[REDACTED]","refreshToken":"[REDACTED]"}}"#,
    ),
    (
        r#"{"tokens":{"ID_TOKEN":"canary\"quoted\"value"}}"#,
        r#"{"tokens":{"ID_TOKEN":"[REDACTED]"}}"#,
    ),
    (
        r#"{"x-api-key": "canary-xk"}"#,
        r#"{"x-api-key": "[REDACTED]"}"#,
    ),
    (
        r#"{"api_key":"canary-ak","client_secret":"canary-cs"}"#,
        r#"{"api_key":"[REDACTED]","client_secret":"[REDACTED]"}"#,
    ),
    // key=value forms.
    (
        "https://h/cb?code=1&access_token=canary-q&refresh_token=canary-r2&state=s",
        "https://h/cb?code=1&access_token=[REDACTED]&refresh_token=[REDACTED]&state=s",
    ),
    (
        "id_token=canary.jwt.sig; Path=/",
        "id_token=[REDACTED]; Path=/",
    ),
    (
        "oauth_access_token = canary-spaced",
        "oauth_access_token = [REDACTED]",
    ),
    (
        "{'refresh_token': 'canary-single'}",
        "{'refresh_token': '[REDACTED]'}",
    ),
    // Header forms.
    (
        "x-api-key: canary-header-key\r\nHost: h",
        "x-api-key: [REDACTED]\r\nHost: h",
    ),
    ("X-Api-Key:canary", "X-Api-Key:[REDACTED]"),
    ("API-KEY: canary-ak2", "API-KEY: [REDACTED]"),
];

#[test]
fn every_token_form_is_redacted() {
    for (input, expected) in SEEDED {
        let out = redact(input);
        assert_eq!(out, *expected, "input: {input}");
        assert!(!out.contains("canary") && !out.contains("Canary"), "{out}");
        assert!(matches!(out, Cow::Owned(_)));
    }
}

#[test]
fn ordinary_text_is_left_alone() {
    for text in [
        "the task-list is sk-short",
        "a basic, bearer: none",
        "Bearer",
        "access tokens are described in RFC 6749",
        "id_token_hint=abc is a parameter name, not a token",
        "tokenizer_parallelism=false",
        r#"{"access_token": null, "token_type": "Bearer"}"#,
        "mask-1234567890abc ghp_short AIzaShort",
        "ünïcödé text with no secrets ✓",
        "",
    ] {
        assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
    }
}

/// The scheme rule is deliberately conservative: any word after "bearer" goes.
#[test]
fn scheme_rule_prefers_over_redaction() {
    assert_eq!(redact("a bearer of news"), "a bearer [REDACTED] news");
}

#[test]
fn known_secret_values_are_redacted_anywhere() {
    let r = Redactor::with_secrets([
        SecretString::from("canary-opaque-value"),
        SecretString::from("hunter2!"),
    ]);
    let out = r.redact("log: user typed hunter2! and the server said canary-opaque-value.");
    assert_eq!(
        out,
        "log: user typed [REDACTED] and the server said [REDACTED]."
    );
    // Patterns still apply.
    assert_eq!(r.redact("Bearer abc"), "Bearer [REDACTED]");
    assert!(matches!(r.redact("clean"), Cow::Borrowed(_)));
    assert!(!format!("{r:?}").contains("canary"));
}

fn token_forms() -> impl Strategy<Value = (String, &'static str)> {
    // (text containing the secret "CANARYSECRET" in some token form, the secret)
    prop_oneof![
        Just(("Bearer CANARYSECRET.x".to_owned(), "CANARYSECRET")),
        Just(("sk-CANARYSECRET12".to_owned(), "CANARYSECRET")),
        Just((
            r#""access_token":"CANARYSECRET""#.to_owned(),
            "CANARYSECRET"
        )),
        Just(("refresh_token=CANARYSECRET".to_owned(), "CANARYSECRET")),
        Just(("x-api-key: CANARYSECRET".to_owned(), "CANARYSECRET")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        rng_seed: RngSeed::Fixed(0x5eed_0004),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Arbitrary text never panics the scanner, and redaction is idempotent.
    #[test]
    fn arbitrary_text_is_safe_and_idempotent(s in "\\PC{0,200}|[ \"':=&a-zA-Z_\\\\-]{0,60}") {
        let once = redact(&s).into_owned();
        let twice = redact(&once).into_owned();
        prop_assert_eq!(once, twice);
    }

    /// A token embedded in arbitrary surrounding text is always redacted.
    #[test]
    fn embedded_tokens_are_redacted(
        prefix in "\\PC{0,40}",
        (token, secret) in token_forms(),
        suffix in "\\PC{0,40}",
    ) {
        let text = format!("{prefix} {token} {suffix}");
        prop_assume!(!prefix.contains(secret) && !suffix.contains(secret));
        let out = redact(&text);
        prop_assert!(!out.contains(secret), "{}", out);
    }
}
