//! The shape a run's final answer must have: [`OutputSchema`].

use serde_json::Value;

/// How the schema reaches the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SchemaDelivery {
    /// The runtime's own structured-output support (a CLI flag or protocol field); a driver
    /// without it refuses the request ([`Unsupported::StructuredOutput`](crate::Unsupported)).
    #[default]
    Native,
    /// The schema is put into the prompt and the answer is only validated: for runtimes
    /// without native support, by the host's explicit choice. The core does this; the driver
    /// sees an ordinary request.
    PromptOnly,
}

/// A JSON Schema the final answer of one run must match, and how it reaches the runtime.
///
/// Per call: it is part of the request, never of a Thread's compatibility fingerprint (a
/// Thread answers in prose on one turn and as data on the next). The core validates the final
/// answer against it for every driver, so a runtime that ignores its schema still cannot hand
/// the host malformed data.
///
/// ```
/// use driver_spi::{OutputSchema, SchemaDelivery};
///
/// let schema = OutputSchema::new(serde_json::json!({
///     "type": "object",
///     "properties": {"verdict": {"type": "string"}},
///     "required": ["verdict"],
///     "additionalProperties": false,
/// }));
/// assert_eq!(schema.delivery(), SchemaDelivery::Native);
/// assert_eq!(schema.clone().prompt_only().delivery(), SchemaDelivery::PromptOnly);
/// assert_eq!(schema.schema()["required"][0], "verdict");
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OutputSchema {
    schema: Value,
    delivery: SchemaDelivery,
}

impl OutputSchema {
    /// This schema, delivered natively.
    pub fn new(schema: Value) -> Self {
        Self {
            schema,
            delivery: SchemaDelivery::Native,
        }
    }

    /// Delivered in the prompt instead ([`SchemaDelivery::PromptOnly`]).
    pub fn prompt_only(mut self) -> Self {
        self.delivery = SchemaDelivery::PromptOnly;
        self
    }

    /// The JSON Schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// How it reaches the runtime.
    pub fn delivery(&self) -> SchemaDelivery {
        self.delivery
    }
}
