//! Run-service attachments for provider authors.
//!
//! A *run-service provider* is host-trusted code that attaches services (often an MCP server
//! on a fresh loopback port with a fresh bearer token) to every run of an agent. This crate is
//! everything a provider author needs, and the only crate they depend on: the
//! [`RunServiceProvider`] trait, the [`RunAttachment`] and [`ServiceRef`] DTOs, MCP
//! declarations, secret [`EnvBinding`]s, validation, the two projections of a run
//! ([`build_views`]) and a [`SemanticFingerprint`] builder.
//!
//! # Four separate contracts
//! | question | answered by |
//! |---|---|
//! | may a stored Thread resume? | [`RunServiceCompatibility`] `{id, fingerprint}` (opt-in), else the exact services |
//! | what does this invocation connect to? | the concrete [`ServiceRef`]s, delivered exactly, every time |
//! | may a service instance be reused? | [`ServiceRef::reuse_key`] and [`Lifecycle`] |
//! | may a runtime process be reused? | an exact, private, in-memory signature (in `driver-spi`) |
//!
//! # Invariants
//! - Secret values exist only inside [`EnvBinding`] as [`secrecy::SecretString`]: redacted in
//!   `Debug`, never serialized, never hashed into a view.
//! - Validation errors name a field, a reason, a length and a short digest, never a value.
//! - Nothing is inferred from a reuse key, URL shape, loopback address, metadata or provider
//!   type: only an explicit [`RunServiceCompatibility`] changes the session view.
//!
//! # What this crate deliberately does not do
//! It starts no runtime (no tokio), stores nothing, and does not validate that an endpoint is
//! safe to call: host policy does that on every invocation.
//!
//! ```
//! use run_service::{build_views, EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef};
//!
//! fn attachment(port: u16, token: &str) -> RunAttachment {
//!     let url = format!("http://127.0.0.1:{port}/mcp");
//!     RunAttachment::new([ServiceRef::new("agent-ui", "Agent UI")
//!         .with_url(&url)
//!         .with_port(port)
//!         .with_mcp(McpServer::streamable_http("agent-ui", &url).with_bearer_token_env("UI_TOKEN"))
//!         .with_secret_env(EnvBinding::new("UI_TOKEN", token))])
//!     .with_resume_compatibility(RunServiceCompatibility::new("com.example.agent-ui", "b3:semantic-v1"))
//! }
//!
//! let before = build_views(&[attachment(4101, "token-a")], &[]).unwrap();
//! let after = build_views(&[attachment(4202, "token-b")], &[]).unwrap();
//! assert_eq!(before.session.digest(), after.session.digest()); // may resume
//! assert_ne!(before.concrete.digest(), after.concrete.digest()); // new endpoint delivered
//! ```
//!
//! Features: `conformance` enables [`conformance`], a kit provider authors run against
//! their own provider.
//!
//! Stability: pre-1.0, the API may change in any release; the meaning of a compatibility id is
//! a persisted contract and never changes.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod attachment;
#[cfg(feature = "conformance")]
pub mod conformance;
mod mcp;
mod provider;
mod semantic;
mod service;
mod validate;
mod views;

pub use async_trait::async_trait;
pub use secrecy::{ExposeSecret, SecretString};

pub use attachment::{RunAttachment, RunEvents, RunServiceCompatibility, RunServiceEvent};
pub use mcp::{McpServer, McpTransport, TransportKind};
#[allow(
    deprecated,
    reason = "the pre-issue-40 name, re-exported so hosts keep compiling"
)]
pub use provider::ProviderError;
pub use provider::{RunId, RunServiceError, RunServiceProvider};
pub use semantic::SemanticFingerprint;
pub use service::{EnvBinding, Lifecycle, ServiceRef};
pub use validate::{Field, Limits, Reason, ValidationError, check_host_bearers, validate_run};
pub use views::{RunViews, View, build_views};
