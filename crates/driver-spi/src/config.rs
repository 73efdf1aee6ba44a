//! The config-fingerprinter capability and a builder that keeps secret env values out of
//! it.

use std::collections::BTreeMap;
use std::fmt;

use compat_fingerprint::{Encoder, Fingerprint, Kind};
use run_service::EnvBinding;

/// The config-fingerprinter capability: a stable fingerprint of the driver's construction
/// config, part of the Thread fingerprint (a changed driver config makes a stored Thread
/// incompatible).
///
/// # Contract (checked by the conformance kit)
/// - Stable: equal across calls, instances and processes for the same config (no random
///   keys, no timestamps, no pointer values, no `HashMap` order).
/// - Non-empty: never the all-zero fingerprint.
/// - Secret env *values* never enter it ([`ConfigFingerprintBuilder::env`] keeps the names
///   only), so a stored fingerprint cannot be used to test guessed secrets offline, and a
///   rotated key does not make stored Threads incompatible.
/// - It covers the construction config only. Per-invocation values (endpoints, run secrets)
///   reach the driver in the [`Request`](crate::Request) and stay out of it.
pub trait ConfigFingerprinter: Send + Sync {
    /// The fingerprint of the construction config.
    fn config_fingerprint(&self) -> Fingerprint;
}

const CONFIG: Kind = Kind::new("agent-sdk 2026-11-30 driver-spi driver-config v1");
const ENV_VALUE: Kind = Kind::new("agent-sdk 2026-11-30 driver-spi config-env-value v1");

/// Builds a [`ConfigFingerprinter`] result from named fields.
///
/// Field names are code constants; each may be set once (a repeated name replaces the
/// earlier value). Secret env bindings contribute their names only; plain env values are
/// reduced to a one-way digest. `Debug` shows field names only.
///
/// ```
/// use driver_spi::ConfigFingerprintBuilder;
/// use run_service::EnvBinding;
///
/// let fp = |key: &str| {
///     ConfigFingerprintBuilder::new("codex")
///         .str("command", "codex")
///         .list("extra_args", ["--full-auto"])
///         .env("env", &[EnvBinding::new("OPENAI_API_KEY", key.to_owned())])
///         .finish()
/// };
/// assert_eq!(fp("sk-1"), fp("sk-2")); // a secret's value never enters the fingerprint
/// assert!(!fp("sk-1").to_string().contains("sk-1"));
/// ```
#[derive(Clone)]
pub struct ConfigFingerprintBuilder {
    driver_type: String,
    fields: BTreeMap<&'static str, Encoder>,
}

impl ConfigFingerprintBuilder {
    /// A builder for a driver of this type.
    pub fn new(driver_type: impl Into<String>) -> Self {
        Self {
            driver_type: driver_type.into(),
            fields: BTreeMap::new(),
        }
    }

    fn field(mut self, name: &'static str, write: impl FnOnce(&mut Encoder)) -> Self {
        let mut enc = Encoder::new();
        write(&mut enc);
        self.fields.insert(name, enc);
        self
    }

    /// A string field.
    pub fn str(self, name: &'static str, value: &str) -> Self {
        self.field(name, |e| e.str(value))
    }

    /// An optional string field (`None` differs from `Some("")`).
    pub fn opt_str(self, name: &'static str, value: Option<&str>) -> Self {
        self.field(name, |e| e.option(value, |e, v| e.str(v)))
    }

    /// A boolean field.
    pub fn bool(self, name: &'static str, value: bool) -> Self {
        self.field(name, |e| e.bool(value))
    }

    /// An unsigned integer field.
    pub fn u64(self, name: &'static str, value: u64) -> Self {
        self.field(name, |e| e.u64(value))
    }

    /// An ordered list of strings (command arguments).
    pub fn list<I, S>(self, name: &'static str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.field(name, |e| e.list(values, |e, v| e.str(v.as_ref())))
    }

    /// An env map of secret bindings: the names are kept, the values are left out. A digest
    /// of a secret in a stored fingerprint, under a public context, could be tested against
    /// guessed values offline; and rotating a key must not make stored Threads incompatible.
    pub fn env<'a>(
        self,
        name: &'static str,
        env: impl IntoIterator<Item = &'a EnvBinding>,
    ) -> Self {
        let names: std::collections::BTreeSet<String> =
            env.into_iter().map(|b| b.name().to_owned()).collect();
        self.field(name, |e| e.set(&names, |e, n| e.str(n)))
    }

    /// An env map of plain values: names are kept, each value is replaced by its digest.
    pub fn plain_env<'a>(
        self,
        name: &'static str,
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let digests: BTreeMap<&str, Fingerprint> = env
            .into_iter()
            .map(|(k, v)| (k, env_value_digest(v)))
            .collect();
        self.field(name, |e| {
            e.map(&digests, |e, k| e.str(k), |e, d| e.bytes(d.as_bytes()))
        })
    }

    /// The fingerprint.
    pub fn finish(&self) -> Fingerprint {
        Fingerprint::of(CONFIG, |e| {
            e.record(|r| {
                r.field(1, |e| e.str(&self.driver_type));
                r.field(2, |e| {
                    e.map(&self.fields, |e, k| e.str(k), |e, v| e.encoded(v))
                });
            })
        })
    }
}

fn env_value_digest(value: &str) -> Fingerprint {
    Fingerprint::of(ENV_VALUE, |e| e.str(value))
}

impl fmt::Debug for ConfigFingerprintBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigFingerprintBuilder")
            .field("driver_type", &self.driver_type)
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .finish()
    }
}
