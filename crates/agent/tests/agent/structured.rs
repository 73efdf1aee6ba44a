//! Structured output through the agent (issue 28), on the reference driver: the final answer
//! checked against the run's output schema in the core; a valid answer is data
//! (`RunResult::structured`, `run_as::<T>`), anything else a typed error naming the schema
//! rule (its location in the schema and its keyword; never a key or a value of the answer)
//! with nothing persisted; prompt-only delivery; a driver without native support refuses; an
//! invalid schema is refused before anything runs; the schema is not part of the Thread's
//! fingerprint; a known secret in the answer is redacted (values and keys) before the answer
//! is checked, as in the output.

use std::sync::Arc;

use agent::{Agent, OutputError, SessionOutcome, ThreadError};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use driver_spi::{Driver, DriverEvent, OutputSchema, SchemaDelivery, Unsupported};
use run_service::EnvBinding;
use runtime_env::REDACTED;
use serde_json::json;
use test_support::host::Reshaped;
use thread_store::memory::MemoryStore;

fn verdict_schema() -> OutputSchema {
    OutputSchema::new(json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}, "score": {"type": "integer"}},
        "required": ["verdict", "score"],
        "additionalProperties": false,
    }))
}

fn agent(backend: &ReferenceBackend) -> Agent {
    Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_valid_answer_is_data_and_reaches_the_driver_as_a_native_schema() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::Answer(r#"{"verdict":"pass","score":7}"#.into()));
    let result = agent(&backend)
        .thread("t")
        .with_output_schema(verdict_schema())
        .run("judge")
        .await
        .unwrap();
    assert_eq!(
        result.structured,
        Some(json!({"verdict": "pass", "score": 7}))
    );
    assert!(result.record_id.is_some(), "a valid answer persists");
    let request = backend.last_request().unwrap();
    let sent = request.request().output_schema.clone().unwrap();
    assert_eq!(sent.delivery(), SchemaDelivery::Native);
    assert_eq!(sent.schema(), verdict_schema().schema());
    assert_eq!(
        request.request().prompt,
        "judge",
        "a native schema leaves the prompt alone"
    );
}

#[tokio::test]
async fn a_breaking_answer_is_a_typed_error_and_nothing_persists() {
    for (answer, want) in [
        (
            r#"{"verdict":"canary-9f3e","score":7}"#,
            OutputError::Mismatch {
                schema_path: "/properties/verdict/enum".into(),
                keyword: "enum".into(),
            },
        ),
        (
            r#"{"verdict":"pass"}"#,
            OutputError::Mismatch {
                schema_path: "/required".into(),
                keyword: "required".into(),
            },
        ),
        ("The verdict is pass.", OutputError::NotJson),
        (r#"{"verdict":"pass","sco"#, OutputError::NotJson),
    ] {
        let backend = ReferenceBackend::new();
        backend.push_behavior(Behavior::Answer(answer.into()));
        let agent = agent(&backend);
        let thread = agent.thread("t").with_output_schema(verdict_schema());
        let error = thread.run("judge").await.unwrap_err();
        assert!(
            matches!(&error, ThreadError::Output(e) if *e == want),
            "{answer:?}: {error:?}"
        );
        assert!(!error.to_string().contains("canary-9f3e"), "{error}");
        assert!(
            thread.checkpoint().await.unwrap().is_none(),
            "{answer:?}: nothing persisted"
        );
    }
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Review {
    pass: bool,
    findings: Vec<String>,
}

#[tokio::test]
async fn run_as_derives_the_schema_and_deserializes() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::Answer(
        r#"{"pass":false,"findings":["unchecked input"]}"#.into(),
    ));
    let (review, result) = agent(&backend)
        .thread("t")
        .run_as::<Review>("review")
        .await
        .unwrap();
    assert_eq!(
        review,
        Review {
            pass: false,
            findings: vec!["unchecked input".into()]
        }
    );
    assert!(result.structured.is_some());
    let sent = backend
        .last_request()
        .unwrap()
        .request()
        .output_schema
        .clone();
    assert_eq!(
        sent.unwrap().schema()["required"],
        json!(["pass", "findings"])
    );

    // A wrong type is refused by the schema before deserialization.
    backend.push_behavior(Behavior::Answer(r#"{"pass":"yes","findings":[]}"#.into()));
    let error = agent(&backend).thread("u").run_as::<Review>("review").await;
    assert!(
        matches!(
            error,
            Err(ThreadError::Output(OutputError::Mismatch { ref schema_path, ref keyword }))
                if schema_path == "/properties/pass/type" && keyword == "type"
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn prompt_only_puts_the_schema_in_the_prompt_and_validates_the_same() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::Answer(r#"{"verdict":"fail","score":0}"#.into()));
    let result = agent(&backend)
        .thread("t")
        .with_output_schema(verdict_schema().prompt_only())
        .run("judge")
        .await
        .unwrap();
    assert_eq!(result.structured.unwrap()["verdict"], "fail");
    let request = backend.last_request().unwrap();
    assert!(request.request().output_schema.is_none());
    assert!(request.request().prompt.starts_with("judge\n\n"));
    assert!(
        request
            .request()
            .prompt
            .contains(r#""additionalProperties":false"#)
    );

    backend.push_behavior(Behavior::Answer("fail, with a score of zero".into()));
    let error = agent(&backend)
        .thread("u")
        .with_output_schema(verdict_schema().prompt_only())
        .run("judge")
        .await;
    assert!(matches!(
        error,
        Err(ThreadError::Output(OutputError::NotJson))
    ));
}

#[tokio::test]
async fn without_native_support_a_native_schema_is_refused_before_the_driver_runs() {
    let backend = ReferenceBackend::new();
    let plain = Reshaped::new(&backend, |mut d| {
        d.capabilities.structured_output = false;
        d
    });
    let agent = Agent::builder(plain)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let refused = agent
        .thread("t")
        .with_output_schema(verdict_schema())
        .run("judge")
        .await;
    assert!(
        matches!(
            refused,
            Err(ThreadError::Unsupported(Unsupported::StructuredOutput))
        ),
        "{refused:?}"
    );
    assert_eq!(backend.request_count(), 0);
    // Prompt-only is the host's way around it.
    backend.push_behavior(Behavior::Answer(r#"{"verdict":"pass","score":1}"#.into()));
    let result = agent
        .thread("t")
        .with_output_schema(verdict_schema().prompt_only())
        .run("judge")
        .await
        .unwrap();
    assert!(result.structured.is_some());
}

#[tokio::test]
async fn an_invalid_schema_is_refused_before_anything_runs() {
    let backend = ReferenceBackend::new();
    let error = agent(&backend)
        .thread("t")
        .with_output_schema(OutputSchema::new(json!({"type": "no-such-type"})))
        .run("judge")
        .await;
    assert!(matches!(
        error,
        Err(ThreadError::Output(OutputError::InvalidSchema))
    ));
    assert_eq!(backend.request_count(), 0);
}

/// Per call: a Thread answers as data on one turn and in prose on the next, resuming.
#[tokio::test]
async fn the_schema_is_not_part_of_the_fingerprint() {
    let backend = ReferenceBackend::new();
    let agent = agent(&backend);
    backend.push_behavior(Behavior::Answer(r#"{"verdict":"pass","score":1}"#.into()));
    let first = agent
        .thread("t")
        .with_output_schema(verdict_schema())
        .run("judge")
        .await
        .unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    let second = agent
        .thread("t")
        .resume_only()
        .run("explain in prose")
        .await
        .unwrap();
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert!(second.structured.is_none());
}

/// Secret-looking keys and values of an answer: the model may echo what it read.
const EXTRA_KEY: &str = "hunter2-correct-horse-battery-staple";
const TYPED_KEY: &str = "x-correct-horse-canary-5be1";
const VALUES: [&str; 2] = ["extra-value-canary-81d2", "typed-value-canary-c4a0"];

/// A mismatch names the schema location and keyword, never a key or a value of the answer,
/// in its `Display` or its `Debug`.
#[tokio::test]
async fn a_mismatch_names_the_schema_location_never_a_key_or_value_of_the_answer() {
    let schema = OutputSchema::new(json!({
        "type": "object",
        "properties": {"score": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": false,
    }));
    let [extra, typed] = VALUES;
    for (answer, schema_path, keyword) in [
        (
            format!(r#"{{"score":1,"{TYPED_KEY}":["{typed}"]}}"#),
            Some("/patternProperties/^x-/type"),
            "type",
        ),
        (
            format!(r#"{{"score":1,"{EXTRA_KEY}":"{extra}"}}"#),
            Some("/additionalProperties"),
            "additionalProperties",
        ),
        (
            format!(r#"{{"score":"{typed}"}}"#),
            Some("/properties/score/type"),
            "type",
        ),
        // Both at once: whichever is reported first, neither key leaks.
        (
            format!(r#"{{"score":1,"{EXTRA_KEY}":"{extra}","{TYPED_KEY}":["{typed}"]}}"#),
            None,
            "",
        ),
    ] {
        let backend = ReferenceBackend::new();
        backend.push_behavior(Behavior::Answer(answer.clone()));
        let agent = agent(&backend);
        let error = agent
            .thread("t")
            .with_output_schema(schema.clone())
            .run("judge")
            .await
            .unwrap_err();
        let shown = format!("{error} {error:?}");
        for secret in [EXTRA_KEY, TYPED_KEY, extra, typed] {
            assert!(!shown.contains(secret), "{answer}: {shown}");
        }
        let ThreadError::Output(OutputError::Mismatch {
            schema_path: got_path,
            keyword: got_keyword,
        }) = &error
        else {
            panic!("{answer}: {shown}");
        };
        if let Some(schema_path) = schema_path {
            assert_eq!(
                (got_path.as_str(), got_keyword.as_str()),
                (schema_path, keyword)
            );
            assert!(shown.contains(schema_path), "{answer}: {shown}");
            assert!(shown.contains(&format!("`{keyword}`")), "{answer}: {shown}");
        }
    }
}

const SECRET: &str = "structured-canary-3f9a2c";

/// An agent on `driver` whose host binds `SECRET` (and `PIN`): the run's known secrets.
fn secret_agent(driver: Arc<dyn Driver>) -> Agent {
    Agent::builder(driver)
        .store(Arc::new(MemoryStore::new()))
        .secret_env(EnvBinding::new("HOST_TOKEN", SECRET))
        .secret_env(EnvBinding::new("HOST_PIN", PIN))
        .build()
        .unwrap()
}

fn notes_schema() -> OutputSchema {
    OutputSchema::new(json!({
        "type": "object",
        "properties": {
            "note": {"type": "string"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["note", "tags"],
    }))
}

/// The answer with `SECRET` as a value, inside a value, and as a key.
fn secret_answer() -> String {
    format!(r#"{{"note":"the token is {SECRET}","tags":{{"{SECRET}":"{SECRET}","ok":"plain"}}}}"#)
}

fn redacted_answer() -> serde_json::Value {
    json!({
        "note": format!("the token is {REDACTED}"),
        "tags": {REDACTED: REDACTED, "ok": "plain"},
    })
}

/// `text` answered by a runtime whose driver does not redact it (the reference driver's
/// `Answer` does): the core's redaction is the one that counts.
fn unredacted(text: String) -> Behavior {
    Behavior::Events(vec![
        DriverEvent::RunStarted,
        DriverEvent::text(text),
        DriverEvent::RunFinished,
    ])
}

/// The structured answer is redacted as the output is: every string leaf and every key.
#[tokio::test]
async fn a_known_secret_in_the_answer_is_redacted_in_leaves_and_keys_as_in_the_output() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(unredacted(secret_answer()));
    let agent = secret_agent(Arc::new(ReferenceDriver::with_backend(backend.clone())));
    let result = agent
        .thread("t")
        .with_output_schema(notes_schema())
        .run("note")
        .await
        .unwrap();
    let structured = result.structured.clone().unwrap();
    assert!(!structured.to_string().contains(SECRET), "{structured}");
    assert!(!format!("{result:?}").contains(SECRET));
    assert_eq!(structured, redacted_answer());
    let output: serde_json::Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(output, structured, "output and structured agree");

    // `run_as` deserializes the redacted answer.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Notes {
        note: String,
        tags: std::collections::BTreeMap<String, String>,
    }
    backend.push_behavior(unredacted(secret_answer()));
    let (notes, _) = agent.thread("u").run_as::<Notes>("note").await.unwrap();
    assert!(!format!("{notes:?}").contains(SECRET), "{notes:?}");
    assert_eq!(notes.note, format!("the token is {REDACTED}"));
    assert_eq!(notes.tags.get(REDACTED).map(String::as_str), Some(REDACTED));
}

/// A reference driver whose runtime reports `value` as its structured answer, apart from its
/// text (as Claude Code's `result.structured_output`).
#[derive(Debug)]
struct ReportsStructured {
    driver: ReferenceDriver,
    value: serde_json::Value,
}

#[driver_spi::async_trait]
impl Driver for ReportsStructured {
    fn descriptor(&self) -> driver_spi::Descriptor {
        self.driver.descriptor()
    }

    fn validate_config(&self) -> Result<(), driver_spi::ConfigError> {
        self.driver.validate_config()
    }

    async fn run(
        &self,
        request: driver_spi::Request,
        sink: Arc<dyn driver_spi::EventSink>,
    ) -> Result<driver_spi::Response, driver_spi::DriverError> {
        let response = self.driver.run(request, sink).await?;
        Ok(response.with_structured_output(self.value.clone()))
    }

    fn session_codec(&self) -> Option<&dyn driver_spi::SessionCodec> {
        self.driver.session_codec()
    }

    fn config_fingerprinter(&self) -> Option<&dyn driver_spi::ConfigFingerprinter> {
        self.driver.config_fingerprinter()
    }
}

#[tokio::test]
async fn a_known_secret_in_a_reported_structured_answer_is_redacted() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(Behavior::Answer("done".into()));
    let driver = ReportsStructured {
        driver: ReferenceDriver::with_backend(backend.clone()),
        value: serde_json::from_str(&secret_answer()).unwrap(),
    };
    let result = secret_agent(Arc::new(driver))
        .thread("t")
        .with_output_schema(notes_schema())
        .run("note")
        .await
        .unwrap();
    assert_eq!(result.structured, Some(redacted_answer()));
}

const PIN: &str = "pin-4821";

/// What is validated is what is returned: the redacted answer. A redaction can break the
/// schema (here `[REDACTED]` is longer than the pin may be); that is the usual mismatch.
#[tokio::test]
async fn the_redacted_answer_is_what_is_validated() {
    let backend = ReferenceBackend::new();
    backend.push_behavior(unredacted(format!(r#"{{"pin":"{PIN}"}}"#)));
    let schema = OutputSchema::new(json!({
        "type": "object",
        "properties": {"pin": {"type": "string", "maxLength": PIN.len()}},
    }));
    let agent = secret_agent(Arc::new(ReferenceDriver::with_backend(backend.clone())));
    let thread = agent.thread("t").with_output_schema(schema);
    let error = thread.run("pin").await;
    let shown = format!("{error:?}");
    assert!(!shown.contains(PIN), "{shown}");
    assert!(
        matches!(
            &error,
            Err(ThreadError::Output(OutputError::Mismatch { schema_path, keyword }))
                if schema_path == "/properties/pin/maxLength" && keyword == "maxLength"
        ),
        "{shown}"
    );
    assert!(thread.checkpoint().await.unwrap().is_none());
}
