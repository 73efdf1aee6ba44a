//! [`WireSecret`] and [`WireBinding`]: the one way a secret value crosses the worker's pipe.
//!
//! The workspace rule is that secrets are never `Serialize`d: `EnvBinding` and `SecretString`
//! do not implement it, and a request's `Serialize` writes secret *names* only. The worker
//! needs the values on the other side of a pipe, so they cross in a type made for it: it
//! implements `Deserialize` (the worker reads it) and has no `Serialize` at all; the host
//! writes it with an explicit [`to_wire`](WireBinding::to_wire), which no generic path
//! (`serde_json::to_string`, a log, an event) ever calls. `Debug` shows names only.

use run_service::EnvBinding;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

/// A secret value as the worker receives it: deserialized from a JSON string, redacted in
/// `Debug`, never `Serialize`d.
///
/// ```compile_fail
/// fn needs_serialize<T: serde::Serialize>() {}
/// needs_serialize::<worker_protocol::WireSecret>();
/// ```
#[derive(Clone)]
pub struct WireSecret(SecretString);

impl<'de> serde::Deserialize<'de> for WireSecret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Straight into a `SecretString`, which wipes its buffer when dropped.
        String::deserialize(deserializer).map(|value| Self(SecretString::from(value)))
    }
}

impl WireSecret {
    /// A secret to send.
    pub fn new(value: SecretString) -> Self {
        Self(value)
    }

    /// The value, as a `SecretString`.
    pub fn into_secret(self) -> SecretString {
        self.0
    }

    /// The value in clear, for the pipe only: the one place it is exposed on the host side.
    pub fn to_wire(&self) -> Value {
        Value::String(self.0.expose_secret().to_owned())
    }
}

impl std::fmt::Debug for WireSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WireSecret([REDACTED])")
    }
}

/// An [`EnvBinding`] on the wire: its name, and its value as a [`WireSecret`].
///
/// ```
/// use run_service::EnvBinding;
/// use worker_protocol::WireBinding;
///
/// let wire = WireBinding::from(&EnvBinding::new("API_KEY", "canary-secret"));
/// assert!(!format!("{wire:?}").contains("canary-secret"));
/// let sent = wire.to_wire();
/// assert_eq!(sent["value"], "canary-secret");
/// let back: WireBinding = serde_json::from_value(sent).unwrap();
/// assert_eq!(back.into_binding(), EnvBinding::new("API_KEY", "canary-secret"));
/// ```
#[derive(Clone, serde::Deserialize)]
pub struct WireBinding {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: WireSecret,
}

impl WireBinding {
    /// The message the host writes for it (the value in clear, for the pipe only).
    pub fn to_wire(&self) -> Value {
        json!({"name": self.name, "value": self.value.to_wire()})
    }

    /// The binding, on the worker's side.
    pub fn into_binding(self) -> EnvBinding {
        EnvBinding::new(self.name, self.value.into_secret())
    }

    /// Each binding's wire message, in order.
    pub fn list_to_wire(bindings: &[Self]) -> Value {
        Value::Array(bindings.iter().map(Self::to_wire).collect())
    }
}

impl From<&EnvBinding> for WireBinding {
    fn from(binding: &EnvBinding) -> Self {
        Self {
            name: binding.name().to_owned(),
            value: WireSecret::new(binding.value().clone()),
        }
    }
}

impl std::fmt::Debug for WireBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireBinding")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
