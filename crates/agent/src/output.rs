//! Structured output: the run's [`OutputSchema`] checked against the final answer, in the
//! core, for every driver.

use driver_spi::{OutputSchema, Response, SchemaDelivery};
use serde_json::Value;

/// Why a run's final answer is not the data its output schema asks for. Names where and which
/// rule failed, never a value of the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output schema itself is not a valid JSON Schema (nothing ran).
    #[error("the output schema is not a valid JSON Schema")]
    InvalidSchema,
    /// The final answer is not one JSON value (prose, truncated, or empty).
    #[error("the final answer is not JSON")]
    NotJson,
    /// The final answer is JSON that breaks the schema: the first failing location in the
    /// answer (a JSON pointer; empty for the root) and the schema keyword it broke.
    #[error("the final answer breaks the output schema at `{path}` (`{keyword}`)")]
    Mismatch {
        /// Where in the answer (a JSON pointer).
        path: String,
        /// The schema keyword (`type`, `required`, `enum`, …).
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
    /// checked against the schema.
    pub(crate) fn check(&self, response: &Response) -> Result<Value, OutputError> {
        let value = match &response.structured_output {
            Some(value) => value.clone(),
            None => parse(&response.output)?,
        };
        self.validate(&value)?;
        Ok(value)
    }

    fn validate(&self, value: &Value) -> Result<(), OutputError> {
        match self.validator.iter_errors(value).next() {
            None => Ok(()),
            Some(error) => Err(OutputError::Mismatch {
                path: error.instance_path().as_str().to_owned(),
                keyword: error.kind().keyword().to_owned(),
            }),
        }
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

    #[test]
    fn a_matching_answer_is_data() {
        let value = checker()
            .check(&answer(r#"{"verdict":"pass","score":3}"#))
            .unwrap();
        assert_eq!(value["score"], 3);
        let fenced = "```json\n{\"verdict\":\"fail\",\"score\":0}\n```";
        assert_eq!(checker().check(&answer(fenced)).unwrap()["verdict"], "fail");
        let structured = Response::new("ignored prose")
            .with_structured_output(json!({"verdict":"pass","score":1}));
        assert_eq!(checker().check(&structured).unwrap()["score"], 1);
    }

    #[test]
    fn a_breaking_answer_names_path_and_keyword_never_the_value() {
        let err = checker()
            .check(&answer(r#"{"verdict":"secret-canary-42","score":3}"#))
            .unwrap_err();
        assert_eq!(
            err,
            OutputError::Mismatch {
                path: "/verdict".into(),
                keyword: "enum".into()
            }
        );
        assert!(!err.to_string().contains("secret-canary-42"));
        let missing = checker()
            .check(&answer(r#"{"verdict":"pass"}"#))
            .unwrap_err();
        assert_eq!(
            missing,
            OutputError::Mismatch {
                path: String::new(),
                keyword: "required".into()
            }
        );
    }

    #[test]
    fn prose_truncated_empty_and_huge_answers_are_not_json() {
        for text in ["The verdict is pass.", r#"{"verdict":"pass","#, "", "   "] {
            assert_eq!(
                checker().check(&answer(text)),
                Err(OutputError::NotJson),
                "{text:?}"
            );
        }
        let huge = format!("\"{}\"", "x".repeat(MAX_ANSWER_BYTES));
        assert_eq!(checker().check(&answer(&huge)), Err(OutputError::NotJson));
    }

    proptest::proptest! {
        /// Any text is judged without a panic, and only a valid answer is data.
        #[test]
        fn any_text_is_judged_and_only_valid_answers_pass(text in ".{0,200}") {
            if let Ok(value) = checker().check(&answer(&text)) {
                proptest::prop_assert!(checker().validate(&value).is_ok());
            }
        }

        /// A valid answer is data, and every truncation of it is not.
        #[test]
        fn truncated_answers_never_pass(pass in proptest::bool::ANY, score in proptest::num::i64::ANY) {
            let verdict = if pass { "pass" } else { "fail" };
            let text = json!({"verdict": verdict, "score": score}).to_string();
            proptest::prop_assert!(checker().check(&answer(&text)).is_ok());
            for end in 0..text.len() {
                proptest::prop_assert!(checker().check(&answer(&text[..end])).is_err());
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
