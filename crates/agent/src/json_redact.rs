//! JSON values redacted for the host: every string leaf and every object key, by the run's
//! [`Redactor`], the one the output text and the events pass. The one path for data a run
//! hands back as JSON: a run service's event data and the structured answer.

use redaction::Redactor;
use serde_json::Value;

/// `value` with every string leaf and object key redacted. Each is redacted as it is, not in
/// its JSON-escaped form, where a secret with `"`, `\` or a control character would not
/// match. Two keys that redact alike merge (the later one wins): what is returned never holds
/// the secret, at the cost of a member.
pub(crate) fn redact_value(redactor: &Redactor, value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(redactor, s)),
        Value::Array(items) => items
            .into_iter()
            .map(|v| redact_value(redactor, v))
            .collect(),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (redact(redactor, k), redact_value(redactor, v)))
                .collect(),
        ),
        other => other,
    }
}

/// `text` redacted, reusing its allocation when nothing matched.
fn redact(redactor: &Redactor, text: String) -> String {
    match redactor.redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;
    use serde_json::json;

    #[test]
    fn leaves_and_keys_are_redacted_at_every_depth() {
        let redactor = Redactor::with_secrets([SecretString::from("canary-71f0")]);
        let value = json!({
            "canary-71f0": ["x canary-71f0 y", {"deep": "canary-71f0"}, 7, null, true],
            "plain": "text",
        });
        assert_eq!(
            redact_value(&redactor, value),
            json!({
                "[REDACTED]": ["x [REDACTED] y", {"deep": "[REDACTED]"}, 7, null, true],
                "plain": "text",
            })
        );
    }

    #[test]
    fn keys_that_redact_alike_merge_and_keep_no_secret() {
        let redactor = Redactor::with_secrets([
            SecretString::from("first-secret"),
            SecretString::from("second-secret"),
        ]);
        let merged = redact_value(&redactor, json!({"first-secret": 1, "second-secret": 2}));
        assert_eq!(merged, json!({"[REDACTED]": 2}));
    }
}
