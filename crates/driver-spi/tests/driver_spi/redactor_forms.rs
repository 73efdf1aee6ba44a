//! `Redactor` catches known secrets in their percent-encoded and JSON-escaped forms, and
//! leaves no part of two overlapping secrets.

use driver_spi::Redactor;
use run_service::EnvBinding;

fn redactor(secrets: &[&str]) -> Redactor {
    let bindings: Vec<EnvBinding> = secrets
        .iter()
        .enumerate()
        .map(|(i, s)| EnvBinding::new(format!("S{i}"), *s))
        .collect();
    Redactor::from_iter(bindings.iter().map(|b| b.value().clone()))
}

#[test]
fn percent_encoded_and_json_escaped_forms_are_redacted() {
    let r = redactor(&["p@ss w/rd+é\"q\\x"]);
    for form in [
        "p%40ss%20w%2Frd%2B%C3%A9%22q%5Cx",
        "p%40ss%20w%2frd%2b%c3%a9%22q%5cx",
        "p%40ss+w%2Frd%2B%C3%A9%22q%5Cx",
        "p@ss w/rd+é\\\"q\\\\x",
        "p@ss w\\/rd+\\u00e9\\\"q\\\\x",
        "p@ss w/rd+\\u00E9\\u0022q\\u005cx",
    ] {
        assert_eq!(
            r.redact(&format!("before {form} after")),
            "before [REDACTED] after",
            "{form}"
        );
    }
    let r = redactor(&["key-😀-canary"]);
    assert_eq!(
        r.redact(r#"{"v":"key-\ud83d\ude00-canary"}"#),
        r#"{"v":"[REDACTED]"}"#
    );
}

#[test]
fn overlapping_secrets_leave_nothing_behind() {
    let r = redactor(&["abcd-1234", "1234-wxyz"]);
    assert_eq!(r.redact("x abcd-1234-wxyz y"), "x [REDACTED] y");
    let r = redactor(&["zzzabc", "abcdefgh"]);
    assert_eq!(r.redact("zzzabcdefgh"), "[REDACTED]");
    let r = redactor(&["secret-one", "secret-one-two", "one-two"]);
    for text in [
        "secret-one-two",
        "secret-one",
        "one-two-x",
        "secret-one-twone-two",
    ] {
        let out = r.redact(text);
        for part in ["secret", "one", "two"] {
            assert!(!out.contains(part), "{text} -> {out}");
        }
    }
    assert_eq!(r.redact("clean text"), "clean text");
}
