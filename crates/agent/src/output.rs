//! Structured output: the run's [`OutputSchema`] checked against the final answer, in the
//! core, for every driver.

use driver_spi::{OutputSchema, Response, SchemaDelivery};
use jsonschema::error::ValidationErrorKind;
use redaction::Redactor;
use serde_json::Value;

use crate::json_redact::redact_value;

/// Why a run's final answer is not the data its output schema asks for. Names which rule of
/// the schema failed, never a key or a value of the answer (a model may echo a secret it read,
/// as a value or as a key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output schema itself is not a valid JSON Schema (nothing ran).
    #[error("the output schema is not a valid JSON Schema")]
    InvalidSchema,
    /// The final answer is not one JSON value (prose, truncated, or empty).
    #[error("the final answer is not JSON")]
    NotJson,
    /// The final answer is JSON that breaks the schema: the first rule it breaks, by its
    /// location in the schema and its keyword. Where in the answer is left out on purpose: a
    /// location in the answer is made of the answer's own keys.
    #[error("the final answer breaks the output schema's rule at `{schema_path}` (`{keyword}`)")]
    Mismatch {
        /// Where in the schema (a JSON pointer into the schema, the rule's JSON Schema
        /// "keywordLocation" without `$ref` hops: `/properties/score/type`,
        /// `/additionalProperties`, `/$defs/Item/required`).
        schema_path: String,
        /// The schema keyword (`type`, `required`, `enum`, `additionalProperties`, …).
        keyword: String,
    },
    /// The answer matches the schema but not the Rust type asked for
    /// ([`Thread::run_as`](crate::Thread::run_as)).
    #[error("the final answer does not deserialize into the requested type")]
    Type,
}

/// The largest final answer read as JSON (bytes): a bigger one is not an answer the host asked
/// for, and parsing it would cost memory for nothing.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// A compiled output schema.
pub(crate) struct Checker {
    validator: jsonschema::Validator,
}

impl Checker {
    /// Compiles `schema` (before anything runs).
    pub(crate) fn new(schema: &OutputSchema) -> Result<Self, OutputError> {
        let validator =
            jsonschema::validator_for(schema.schema()).map_err(|_| OutputError::InvalidSchema)?;
        Ok(Self { validator })
    }

    /// The answer as data: the driver's structured answer, else its text read as JSON;
    /// redacted by `redactor` (the run's, which redacts the output text), then checked
    /// against the schema. What is checked is what is returned, so a redaction that breaks
    /// the schema is a mismatch, never unchecked data.
    pub(crate) fn check(
        &self,
        response: &Response,
        redactor: &Redactor,
    ) -> Result<Value, OutputError> {
        let value = match &response.structured_output {
            Some(value) => value.clone(),
            None => parse(&response.output)?,
        };
        let value = redact_value(redactor, value);
        self.validate(&value)?;
        Ok(value)
    }

    fn validate(&self, value: &Value) -> Result<(), OutputError> {
        let Some(error) = self.validator.iter_errors(value).next() else {
            return Ok(());
        };
        // Only the schema side of the error: its instance path, its instance and its
        // message (which quotes unexpected property names) all come from the answer. The
        // schema path is built from the schema when it is compiled, never from the answer.
        let schema_path = error.schema_path().as_str();
        Err(OutputError::Mismatch {
            keyword: keyword(error.kind(), schema_path).to_owned(),
            schema_path: schema_path.to_owned(),
        })
    }
}

/// The keyword a failed rule is named by: the validator's, except for a `false` subschema,
/// where `jsonschema` says `falseSchema` and the keyword that holds the `false`
/// (`additionalProperties: false`) is the useful name.
fn keyword<'a>(kind: &'a ValidationErrorKind, schema_path: &'a str) -> &'a str {
    const HOLDS_ONE_SCHEMA: [&str; 9] = [
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "propertyNames",
        "contains",
        "then",
        "else",
    ];
    match kind {
        ValidationErrorKind::FalseSchema => schema_path
            .rsplit('/')
            .next()
            .filter(|last| HOLDS_ONE_SCHEMA.contains(last))
            .unwrap_or(kind.keyword()),
        _ => kind.keyword(),
    }
}

/// One JSON value from an answer's text: the whole text, or the body of one fenced code block
/// (models like to fence JSON even when asked not to).
fn parse(text: &str) -> Result<Value, OutputError> {
    if text.len() > MAX_ANSWER_BYTES {
        return Err(OutputError::NotJson);
    }
    let text = text.trim();
    let body = text
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|fenced| fenced.trim_start_matches("json").trim())
        .unwrap_or(text);
    serde_json::from_str(body).map_err(|_| OutputError::NotJson)
}

/// The prompt of a prompt-only run: the host's prompt, then the schema and the rule to answer
/// with one JSON value matching it.
pub(crate) fn prompt_only(prompt: &str, schema: &OutputSchema) -> String {
    format!(
        "{prompt}\n\nAnswer with one JSON value and nothing else (no prose, no code fence) that \
         matches this JSON Schema:\n{}",
        schema.schema()
    )
}

/// The schema the driver receives: none for a prompt-only run (the prompt carries it).
pub(crate) fn for_driver(schema: &OutputSchema) -> Option<OutputSchema> {
    (schema.delivery() == SchemaDelivery::Native).then(|| schema.clone())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn checker() -> Checker {
        Checker::new(&OutputSchema::new(json!({
            "type": "object",
            "properties": {"verdict": {"enum": ["pass", "fail"]}, "score": {"type": "integer"}},
            "required": ["verdict", "score"],
            "additionalProperties": false,
        })))
        .unwrap()
    }

    fn answer(text: &str) -> Response {
        Response::new(text)
    }

    /// A redactor without known secrets (the patterns only).
    fn plain() -> Redactor {
        Redactor::new()
    }

    #[test]
    fn a_matching_answer_is_data() {
        let value = checker()
            .check(&answer(r#"{"verdict":"pass","score":3}"#), &plain())
            .unwrap();
        assert_eq!(value["score"], 3);
        let fenced = "```json\n{\"verdict\":\"fail\",\"score\":0}\n```";
        assert_eq!(
            checker().check(&answer(fenced), &plain()).unwrap()["verdict"],
            "fail"
        );
        let structured = Response::new("ignored prose")
            .with_structured_output(json!({"verdict":"pass","score":1}));
        assert_eq!(checker().check(&structured, &plain()).unwrap()["score"], 1);
    }

    fn mismatch(schema_path: &str, keyword: &str) -> OutputError {
        OutputError::Mismatch {
            schema_path: schema_path.into(),
            keyword: keyword.into(),
        }
    }

    #[test]
    fn a_breaking_answer_names_the_schema_rule_never_the_value() {
        let err = checker()
            .check(
                &answer(r#"{"verdict":"secret-canary-42","score":3}"#),
                &plain(),
            )
            .unwrap_err();
        assert_eq!(err, mismatch("/properties/verdict/enum", "enum"));
        assert!(!err.to_string().contains("secret-canary-42"));
        let missing = checker()
            .check(&answer(r#"{"verdict":"pass"}"#), &plain())
            .unwrap_err();
        assert_eq!(missing, mismatch("/required", "required"));
        let extra = checker()
            .check(
                &answer(r#"{"verdict":"pass","score":1,"key-canary-42":0}"#),
                &plain(),
            )
            .unwrap_err();
        assert_eq!(
            extra,
            mismatch("/additionalProperties", "additionalProperties")
        );
        assert!(!format!("{extra} {extra:?}").contains("key-canary-42"));
    }

    /// The schema path is the schema's, whatever the answer's keys: pinned for every keyword
    /// that reaches into an object's members or an array's items, so a `jsonschema` upgrade
    /// that builds it from the answer fails here.
    #[test]
    fn the_schema_path_never_holds_a_key_of_the_answer() {
        const KEY: &str = "key-canary-5be1";
        let member = |v: Value| json!({ KEY: v });
        let cases = [
            (
                json!({"additionalProperties": false}),
                member(json!(1)),
                "/additionalProperties",
                "additionalProperties",
            ),
            (
                json!({"additionalProperties": {"type": "string"}}),
                member(json!(1)),
                "/additionalProperties/type",
                "type",
            ),
            (
                json!({"patternProperties": {"^k": {"type": "string"}}}),
                member(json!(1)),
                "/patternProperties/^k/type",
                "type",
            ),
            (
                json!({"propertyNames": {"maxLength": 3}}),
                member(json!(1)),
                "/propertyNames/maxLength",
                "propertyNames",
            ),
            (
                json!({"unevaluatedProperties": false}),
                member(json!(1)),
                "/unevaluatedProperties",
                "unevaluatedProperties",
            ),
            (
                json!({"dependentSchemas": {"a": {"required": ["b"]}}}),
                json!({"a": 1, KEY: 1}),
                "/dependentSchemas/a/required",
                "required",
            ),
            (
                json!({"items": {"type": "string"}}),
                json!([1]),
                "/items/type",
                "type",
            ),
            (
                json!({"prefixItems": [true], "items": false}),
                json!([1, 2]),
                "/items",
                "items",
            ),
            (
                json!({"$defs": {"X": {"type": "string"}}, "additionalProperties": {"$ref": "#/$defs/X"}}),
                member(json!(1)),
                "/$defs/X/type",
                "type",
            ),
            (
                json!({"additionalProperties": {"oneOf": [{"type": "string"}, {"type": "boolean"}]}}),
                member(json!(1)),
                "/additionalProperties/oneOf",
                "oneOf",
            ),
            (
                json!({"additionalProperties": {"if": {"type": "integer"}, "then": {"minimum": 5}}}),
                member(json!(1)),
                "/additionalProperties/then/minimum",
                "minimum",
            ),
            (
                json!({"additionalProperties": {"const": "a"}}),
                member(json!(KEY)),
                "/additionalProperties/const",
                "const",
            ),
            (
                json!({"properties": {"a": false}}),
                json!({"a": KEY}),
                "/properties/a",
                "falseSchema",
            ),
        ];
        for (schema, instance, schema_path, keyword) in cases {
            let error = Checker::new(&OutputSchema::new(schema.clone()))
                .unwrap()
                .validate(&instance)
                .unwrap_err();
            assert_eq!(error, mismatch(schema_path, keyword), "{schema}");
            assert!(!format!("{error} {error:?}").contains(KEY), "{schema}");
        }
    }

    /// The answer is redacted before it is checked: what is checked is what is returned.
    #[test]
    fn the_redacted_answer_is_checked_and_returned() {
        let knows = |secret: &str| Redactor::with_secrets([secrecy::SecretString::from(secret)]);
        let text = r#"{"verdict":"pass","score":3,"note":"canary-0d1e"}"#;
        let lenient = Checker::new(&OutputSchema::new(json!({"type": "object"}))).unwrap();
        assert_eq!(
            lenient.check(&answer(text), &knows("canary-0d1e")).unwrap()["note"],
            redaction::REDACTED
        );
        // Here the secret is one of the enum's values: redacted, the answer breaks the enum.
        assert_eq!(
            checker().check(&answer(r#"{"verdict":"pass","score":3}"#), &knows("pass")),
            Err(mismatch("/properties/verdict/enum", "enum"))
        );
    }

    #[test]
    fn prose_truncated_empty_and_huge_answers_are_not_json() {
        for text in ["The verdict is pass.", r#"{"verdict":"pass","#, "", "   "] {
            assert_eq!(
                checker().check(&answer(text), &plain()),
                Err(OutputError::NotJson),
                "{text:?}"
            );
        }
        let huge = format!("\"{}\"", "x".repeat(MAX_ANSWER_BYTES));
        assert_eq!(
            checker().check(&answer(&huge), &plain()),
            Err(OutputError::NotJson)
        );
    }

    proptest::proptest! {
        /// Any text is judged without a panic, and only a valid answer is data.
        #[test]
        fn any_text_is_judged_and_only_valid_answers_pass(text in ".{0,200}") {
            if let Ok(value) = checker().check(&answer(&text), &plain()) {
                proptest::prop_assert!(checker().validate(&value).is_ok());
            }
        }

        /// A valid answer is data, and every truncation of it is not.
        #[test]
        fn truncated_answers_never_pass(pass in proptest::bool::ANY, score in proptest::num::i64::ANY) {
            let verdict = if pass { "pass" } else { "fail" };
            let text = json!({"verdict": verdict, "score": score}).to_string();
            proptest::prop_assert!(checker().check(&answer(&text), &plain()).is_ok());
            for end in 0..text.len() {
                proptest::prop_assert!(checker().check(&answer(&text[..end]), &plain()).is_err());
            }
        }
    }

    #[test]
    fn an_invalid_schema_is_refused() {
        let bad = OutputSchema::new(json!({"type": "no-such-type"}));
        assert!(matches!(
            Checker::new(&bad),
            Err(OutputError::InvalidSchema)
        ));
    }
}
