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

    /// The schema in the form OpenAI's strict structured output accepts (what Codex asks
    /// for: `strict: true`), for a driver whose runtime sends it there: every object closed
    /// (`additionalProperties: false`) with every property `required`, `oneOf` as `anyOf`,
    /// and string `format`s strict mode does not know left out.
    ///
    /// The result accepts no answer the original refuses, except where a `oneOf` alternative
    /// or a `format` was loosened; the core still checks the answer against the original, so
    /// a host gets the data its schema asks for. A property that was optional becomes
    /// required with its own type: an `Option<T>` field (whose schema admits `null`) is
    /// answered `null`, any other optional field is always given.
    ///
    /// # Errors
    /// [`StrictSchemaError`] for a schema strict mode cannot express: its root is not an
    /// object, or an object takes any property name (a map).
    ///
    /// ```
    /// use driver_spi::{OutputSchema, StrictSchemaError};
    /// use serde_json::json;
    ///
    /// let plain = OutputSchema::new(json!({
    ///     "type": "object",
    ///     "properties": {"verdict": {"type": "string"}, "note": {"type": ["string", "null"]}},
    ///     "required": ["verdict"],
    /// }));
    /// assert_eq!(
    ///     plain.strict(),
    ///     Ok(json!({
    ///         "type": "object",
    ///         "properties": {"verdict": {"type": "string"}, "note": {"type": ["string", "null"]}},
    ///         "required": ["verdict", "note"],
    ///         "additionalProperties": false,
    ///     }))
    /// );
    /// let list = OutputSchema::new(json!({"type": "array", "items": {"type": "string"}}));
    /// assert_eq!(list.strict(), Err(StrictSchemaError::RootNotObject));
    /// ```
    pub fn strict(&self) -> Result<Value, StrictSchemaError> {
        let mut schema = self.schema.clone();
        let root = schema.as_object().ok_or(StrictSchemaError::RootNotObject)?;
        let object = root.get("type").and_then(Value::as_str) == Some("object")
            || (root.get("type").is_none() && root.contains_key("properties"));
        if !object {
            return Err(StrictSchemaError::RootNotObject);
        }
        strict_in_place(&mut schema)?;
        Ok(schema)
    }
}

/// Why a schema has no form OpenAI's strict structured output accepts
/// ([`OutputSchema::strict`]); each says how to change the answer's type.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, thiserror::Error,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StrictSchemaError {
    /// The root is not an object (a list, a string, an enum).
    #[error(
        "the answer's schema must be an object at its root for strict structured output: \
         make the answer a struct (wrap a list or an enum in a struct field)"
    )]
    RootNotObject,
    /// An object takes any property name (`additionalProperties` is a schema: a map).
    #[error(
        "an object of the answer's schema takes any property name (a map such as HashMap or \
         BTreeMap), which strict structured output cannot express: use a struct with named \
         fields, or a Vec of key-value structs"
    )]
    OpenMap,
}

/// String formats OpenAI's strict mode supports; others are left out of the strict form.
const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords whose value is one subschema, a list of them, or a map of them by name.
const ONE_SCHEMA: [&str; 10] = [
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
];
const SCHEMA_LISTS: [&str; 4] = ["anyOf", "allOf", "oneOf", "prefixItems"];
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// [`OutputSchema::strict`] on one subschema and every subschema below it.
fn strict_in_place(schema: &mut Value) -> Result<(), StrictSchemaError> {
    let Value::Object(map) = schema else {
        return Ok(());
    };
    if let Some(one_of) = map.remove("oneOf") {
        map.entry("anyOf").or_insert(one_of);
    }
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !STRICT_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    let object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    };
    if object {
        if !matches!(map.get("additionalProperties"), None | Some(Value::Bool(_)))
            || map.contains_key("patternProperties")
        {
            return Err(StrictSchemaError::OpenMap);
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        let names: Vec<String> = properties
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        // The schema's own order first (an already strict schema is sent as it is), then the
        // properties it left optional.
        let mut required: Vec<Value> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)))
            .cloned()
            .collect();
        for name in names {
            if !required.iter().any(|r| r == name.as_str()) {
                required.push(Value::String(name));
            }
        }
        map.insert("required".into(), Value::Array(required));
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if ONE_SCHEMA.contains(&key) || key == "additionalProperties" {
            strict_in_place(value)?;
        } else if SCHEMA_LISTS.contains(&key) {
            if let Value::Array(items) = value {
                items.iter_mut().try_for_each(strict_in_place)?;
            }
        } else if SCHEMA_MAPS.contains(&key)
            && let Value::Object(by_name) = value
        {
            by_name.values_mut().try_for_each(strict_in_place)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    /// Issue 40: the schema `schemars` derives for a plain struct (optional field, nested
    /// struct, integer format, enum with data) in OpenAI's strict form, nested objects and
    /// definitions included; a property named like a keyword stays a property.
    #[test]
    fn a_derived_schema_is_made_strict_everywhere() {
        let derived = OutputSchema::new(json!({
            "title": "Review",
            "type": "object",
            "properties": {
                "verdict": {"type": "string"},
                "score": {"type": "integer", "format": "uint32", "minimum": 0},
                "note": {"type": ["string", "null"]},
                "type": {"$ref": "#/$defs/Kind"},
                "properties": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            },
            "required": ["verdict", "score", "type", "properties"],
            "$defs": {
                "Item": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}},
                "Kind": {"oneOf": [
                    {"type": "string", "enum": ["a"]},
                    {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
                ]},
            },
        }));
        let strict = derived.strict().unwrap();
        assert_eq!(strict["additionalProperties"], false);
        assert_eq!(
            strict["required"],
            json!(["verdict", "score", "type", "properties", "note"])
        );
        assert_eq!(
            strict["properties"]["score"],
            json!({"type": "integer", "minimum": 0})
        );
        let item = &strict["$defs"]["Item"];
        assert_eq!(item["additionalProperties"], false);
        assert_eq!(item["required"], json!(["at"]));
        assert_eq!(item["properties"]["at"]["format"], "date-time");
        let kind = &strict["$defs"]["Kind"];
        assert!(kind.get("oneOf").is_none());
        assert_eq!(kind["anyOf"][1]["additionalProperties"], false);
        assert_eq!(kind["anyOf"][0], json!({"type": "string", "enum": ["a"]}));
        // Already strict: unchanged, its order of `required` too.
        let closed = json!({
            "type": "object",
            "properties": {"v": {"type": "string"}, "a": {"type": "string"}},
            "required": ["v", "a"],
            "additionalProperties": false,
        });
        assert_eq!(OutputSchema::new(closed.clone()).strict(), Ok(closed));
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_its_fix() {
        let map = OutputSchema::new(json!({
            "type": "object",
            "properties": {"scores": {"type": "object", "additionalProperties": {"type": "integer"}}},
        }));
        assert_eq!(map.strict(), Err(StrictSchemaError::OpenMap));
        assert!(StrictSchemaError::OpenMap.to_string().contains("struct"));
        for root in [
            json!({"type": "string"}),
            json!(true),
            json!({"enum": ["a"]}),
        ] {
            assert_eq!(
                OutputSchema::new(root).strict(),
                Err(StrictSchemaError::RootNotObject)
            );
        }
    }
}
