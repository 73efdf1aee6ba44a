//! What one provider attaches to one run, and its opt-in resume identity.

use std::fmt;
use std::pin::Pin;

use compat_fingerprint::ShortDigest;

use crate::ServiceRef;

/// A provider assertion that the concrete services of one [`RunAttachment`] may be rebound
/// (new URL, port, token, env-var name) without starting a new provider session.
///
/// It is used **only** for Thread/session resume compatibility. It is **not** a service cache
/// key, a process-reuse key, an integrity digest or an authorization decision: the concrete
/// services are still delivered exactly, persistent processes are still recycled on any
/// concrete change, and endpoints are still validated by host policy on every invocation.
///
/// # The contract
/// - [`id`](Self::id) is a stable, globally namespaced identity for the logical attachment
///   role, for example `com.example.agent-ui`. **An id's meaning is immutable**: a different
///   logical role needs a new id.
/// - [`fingerprint`](Self::fingerprint) is an opaque, stable, secret-free digest of every
///   semantic property that can affect safe session continuation: logical service roles, MCP
///   keys, transport semantics, required flags, tool schemas and revisions, authorization
///   class and scope, protocol revision. **A behaviour change requires a new fingerprint.** It
///   must exclude the allocated address, port, run id, bearer value, process id, timestamps
///   and other allocation-only data. [`SemanticFingerprint`](crate::SemanticFingerprint)
///   builds one that cannot include those.
/// - Both parts are required, neither may contain a secret, and two attachments of one run may
///   not share an id.
///
/// The core copies the value when it attaches the run; later changes have no effect. It hashes
/// the tuple and never stores, logs or echoes the raw strings.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RunServiceCompatibility {
    /// Globally namespaced logical identity, for example `com.example.agent-ui`.
    pub id: String,
    /// Opaque semantic fingerprint; the core never parses it.
    pub fingerprint: String,
}

impl RunServiceCompatibility {
    /// A compatibility tuple. Validation happens when a run is attached.
    pub fn new(id: impl Into<String>, fingerprint: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            fingerprint: fingerprint.into(),
        }
    }
}

impl fmt::Debug for RunServiceCompatibility {
    /// Shows short digests only: the strings are provider-supplied and may hold mistakes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunServiceCompatibility")
            .field("id", &ShortDigest::of_str(&self.id))
            .field("fingerprint", &ShortDigest::of_str(&self.fingerprint))
            .finish()
    }
}

/// A non-secret event a run service reports while a run is in flight (for example "the UI
/// answered"). The agent forwards it into the run's event stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunServiceEvent {
    /// The id of the service that emitted it.
    pub service_id: String,
    /// Event name, for example `ui.answered`.
    pub name: String,
    /// Non-secret payload.
    pub data: serde_json::Value,
}

impl RunServiceEvent {
    /// An event.
    pub fn new(
        service_id: impl Into<String>,
        name: impl Into<String>,
        data: serde_json::Value,
    ) -> Self {
        Self {
            service_id: service_id.into(),
            name: name.into(),
            data,
        }
    }
}

/// A stream of [`RunServiceEvent`]s, ended by the provider when the run detaches.
pub struct RunEvents(Pin<Box<dyn futures_core::Stream<Item = RunServiceEvent> + Send>>);

impl RunEvents {
    /// Wraps any `Send` stream of events.
    pub fn new(stream: impl futures_core::Stream<Item = RunServiceEvent> + Send + 'static) -> Self {
        Self(Box::pin(stream))
    }

    /// The stream.
    pub fn into_inner(self) -> Pin<Box<dyn futures_core::Stream<Item = RunServiceEvent> + Send>> {
        self.0
    }
}

impl fmt::Debug for RunEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RunEvents(..)")
    }
}

/// Everything one provider contributes to one run.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RunAttachment {
    /// The concrete services, delivered exactly to the driver.
    pub services: Vec<ServiceRef>,
    /// Optional events the services report during the run.
    pub events: Option<RunEvents>,
    /// Opt-in semantic resume identity. `None` keeps exact concrete fingerprinting: any
    /// change of URL, port, env-var name or MCP declaration makes a stored Thread incompatible.
    pub resume_compatibility: Option<RunServiceCompatibility>,
}

impl RunAttachment {
    /// An attachment of these services, without events or compatibility.
    pub fn new(services: impl IntoIterator<Item = ServiceRef>) -> Self {
        Self {
            services: services.into_iter().collect(),
            events: None,
            resume_compatibility: None,
        }
    }

    /// Opts into semantic resume compatibility.
    pub fn with_resume_compatibility(mut self, compatibility: RunServiceCompatibility) -> Self {
        self.resume_compatibility = Some(compatibility);
        self
    }

    /// Adds an event stream.
    pub fn with_events(mut self, events: RunEvents) -> Self {
        self.events = Some(events);
        self
    }
}
