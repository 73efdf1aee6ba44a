//! Agents and durable Threads that resume safely across host restarts.
//!
//! An [`Agent`] is built from a driver (`Arc<dyn Driver>`), a thread store
//! (`Arc<dyn ThreadStore>`), run-service providers, host MCP servers, and model,
//! instructions, workspace and identity. A [`Thread`] (`agent.thread(key)`) is a durable
//! conversation: its runs resume the stored provider session only when the stored
//! compatibility fingerprint matches the current configuration.
//!
//! The fingerprint is computed from the run's **session view**: exact data for everything,
//! except that a run-service attachment which declared a
//! [`RunServiceCompatibility`](run_service::RunServiceCompatibility) contributes only its
//! `{id, fingerprint}` tuple. So a provider that allocates a fresh loopback port and token on
//! every restart still resumes, while the driver always receives the **concrete**, current
//! endpoint and credential, and any semantic change refuses before the driver runs.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use agent::{Agent, SessionOutcome, ThreadError};
//! use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
//! use thread_store::memory::MemoryStore;
//!
//! let backend = ReferenceBackend::new();
//! let store = Arc::new(MemoryStore::new());
//! let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
//!     .store(store.clone())
//!     .model("model-1")
//!     .build()?;
//! let first = agent.thread("support/42").run("hello").await?;
//! assert_eq!(first.session, SessionOutcome::Started);
//! agent.close().await;
//!
//! // A restarted host: a new agent over the same store resumes, or refuses.
//! let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend)))
//!     .store(store)
//!     .model("model-1")
//!     .build()?;
//! let again = agent.thread("support/42").resume_only().run("and again").await?;
//! assert_eq!(again.session, SessionOutcome::Resumed);
//! let missing = agent.thread("nothing").resume_only().run("?").await;
//! assert!(matches!(missing, Err(ThreadError::NotFound { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Invariants
//! - **One pipeline** runs every Thread turn: validate, attach providers in order, validate all
//!   attachments, build the concrete and session views, lease and resolve, decide (resume,
//!   start, fork or refuse) before the driver runs, drive with lease renewal, persist only a
//!   clean success with a valid checkpoint, tear down within a budget.
//! - A `None` compatibility keeps exact fingerprinting. Nothing is inferred from a reuse key,
//!   URL shape, loopback address, provider type or metadata; host MCP servers are always exact.
//! - A Thread belongs to the credential namespace whose agent created it (the driver's, or
//!   [`AgentBuilder::namespace`]): a run from another namespace is refused with
//!   [`ThreadError::Foreign`] before the driver runs, and never starts over or archives it. A
//!   record stored without an owner is only resumed by a namespaced agent, which then claims
//!   it ([`ThreadError::Unclaimed`] otherwise); see `docs/threads.md`, "Ownership".
//! - A resume-only Thread never starts over. Records written under another fingerprint scheme
//!   fail closed unless a [`SchemeMigration`] states both identities.
//! - No secret value reaches the thread store, an error, an event, a result, `Debug` output or
//!   `tracing` output; free text (driver output, provider messages) passes through the
//!   `runtime-env` redactor with the run's secret values, and so does every string and object
//!   key of JSON a run hands back (a service event's data, the structured answer).
//!
//! # What this crate deliberately does not do
//! It implements no driver and no store (it takes them as trait objects), spawns no runtime
//! process itself, and cannot prove a provider's compatibility claim truthful: providers are
//! host-trusted code (see `docs/security.md`).
//!
//! # One import path
//! A host that runs one runtime depends on this crate and that runtime's driver crate
//! (`driver-codex`, …, which exports the driver's options, process mode, pool and run limits
//! and the one-expression driver builder `RUNTIME.driver(env)…build()`), plus its async
//! runtime and `serde` for its own types. Everything else it names is re-exported here from
//! the crate that defines it:
//! - the permission policy and approvals: [`PermissionPolicy`], [`Action`], [`Permission`],
//!   [`Approvals`], [`ApprovalTicket`], [`ApprovalRequest`], [`ApprovalDecision`],
//!   [`ApprovalOutcome`], [`ApprovalHandler`] (from `driver-spi`);
//! - the driver trait and what runs report: [`Driver`], [`Usage`], [`ExitStatus`],
//!   [`FailureKind`], [`OutputSchema`], [`Unsupported`], [`ConfigError`] (from `driver-spi`);
//! - the runtime environment: [`RuntimeEnv`], [`RuntimeEnvBuilder`], [`HostEnv`],
//!   [`CredentialNamespace`], [`REDACTED`] (from `runtime-env`);
//! - secrets and host MCP servers: [`SecretString`], [`EnvBinding`], [`McpServer`] (from
//!   `run-service`);
//! - the stores: [`store`] is `thread-store`, with its SQLite adapter (`store::sqlite`, the
//!   default `sqlite` feature) and PostgreSQL adapter (`store::postgres`, feature
//!   `postgres`);
//! - typed answers: [`JsonSchema`] and [`schemars`], so `run_as::<T>` needs no `schemars`
//!   dependency. Its derive names the crate `schemars`, so bring that name into scope once
//!   per module (`use agent::schemars;`), or say `#[schemars(crate = "agent::schemars")]` on
//!   the type:
//!
//! ```
//! use agent::{JsonSchema, schemars};
//!
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct Answer {
//!     files: Vec<String>,
//! }
//! # let _ = schemars::schema_for!(Answer);
//! ```
//!
//! There is no prelude: the names above are one `use agent::{…}` away. In the guide's host
//! (`docs/getting-started.md`, 53 lines) a glob would replace three lines of imports with two
//! and hide which crate each name comes from; the one name a derive needs unwritten,
//! `schemars`, is better imported where it is used.
//!
//! Features: `tools` (default) adds [`tools`] and `AgentBuilder::tool`: host-defined tools on
//! a loopback MCP server (axum, rmcp); `sqlite` (default) and `postgres` add the store
//! adapters under [`store`]. `default-features = false` compiles neither adapter nor tools.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod compat;
mod endpoint;
mod error;
mod events;
mod explain;
mod json_redact;
mod output;
mod pipeline;
mod prewarm;
mod result;
mod steer;
mod sticky;
mod stream_redact;
mod thread;
#[cfg(feature = "tools")]
pub mod tools;

pub use agent::{Agent, AgentBuilder, DEFAULT_LEASE_TTL, DEFAULT_TEARDOWN_BUDGET};
pub use compat::{SCHEME_VERSION, SchemeMigration};
pub use endpoint::EndpointPolicy;
pub use error::{BuildError, Incompatibility, ThreadError};
pub use events::{RunStream, ThreadEvent, ThreadEventKind};
pub use explain::{Explanation, Verdict};
pub use output::{MAX_ANSWER_BYTES, OutputError};
pub use pipeline::THREAD_LEASE_PREFIX;
pub use prewarm::Prewarm;
pub use result::{NotPersisted, RunResult, SessionOutcome};
pub use steer::DEFAULT_STEER_TIMEOUT;
pub use thread::{Thread, ThreadCheckpoint};

// One import path (see the crate docs): what a host names, from the crate that defines it.
pub use driver_spi::{
    Action, AnswerError, ApprovalDecision, ApprovalHandler, ApprovalOutcome, ApprovalQuery,
    ApprovalRequest, ApprovalTicket, Approvals, ParsePolicyError, Permission, PermissionPolicy,
};
pub use driver_spi::{
    ConfigError, Driver, ExitStatus, FailureKind, OutputSchema, PlanEntry, PlanPriority,
    PlanStatus, ResumeRejectReason, SchemaDelivery, SteerError, Unsupported, Usage,
};
pub use run_service::{EnvBinding, McpServer, RunId, SecretString};
pub use runtime_env::{CredentialNamespace, HostEnv, REDACTED, RuntimeEnv, RuntimeEnvBuilder};
pub use schemars::{self, JsonSchema};
pub use thread_store as store;
