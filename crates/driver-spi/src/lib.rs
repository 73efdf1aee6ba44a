//! The driver service-provider interface: the contract between agent-runtime drivers and the
//! `agent` core.
//!
//! A *driver* turns one invocation [`Request`] into one run of an agent runtime (the Codex,
//! Claude Code, CodeBuddy, Cursor or Gemini CLI, or anything else), streams typed [`DriverEvent`]s into
//! an [`EventSink`] and returns a [`Response`]. Like `tower-service`, this crate holds the
//! contract only: traits and data types, a reference driver for tests and demos
//! ([`reference`](mod@reference)) and a conformance kit every driver runs (`conformance`, behind the
//! `conformance` feature).
//!
//! # The drivers
//! Every driver of this workspace implements this contract and runs its kit:
//!
//! | crate | runtime |
//! |---|---|
//! | `driver-spi` ([`reference`](mod@reference)) | the in-process reference driver, sessions in memory, for tests |
//! | `reference-runtime` | the same driver with its sessions as files in a credential namespace (agentctl's default) |
//! | `driver-codex` | the Codex CLI (`codex exec --json`) |
//! | `driver-claude-code` | the Claude Code CLI (stream-json) |
//! | `driver-codebuddy` | the CodeBuddy Code CLI (stream-json) |
//! | `driver-cursor` | the Cursor CLI (stream-json) |
//! | `driver-gemini` | the Gemini CLI (stream-json) |
//! | `driver-acp` | any Agent Client Protocol agent (`gemini --acp`, `codebuddy --acp`, or one registered by its command) |
//!
//! The CLI drivers are dialects of the one `CliDriver` of `driver-cli` (Claude Code and
//! CodeBuddy share the stream-json dialect of `driver-stream-json`), on the process layer of
//! `driver-process`; `runtimes` lists them.
//!
//! # The contract at a glance
//! | piece | what it is |
//! |---|---|
//! | [`Driver`] | object-safe async trait: [`Descriptor`], config validation, `run(request, sink)` |
//! | [`SessionCodec`] | optional: checkpoint state ⇄ stored [`SessionParams`], guard fingerprint |
//! | [`ConfigFingerprinter`] | optional: stable fingerprint of the construction config (secret env values left out) |
//! | [`ProcessLifecycle`] | optional: close every runtime process the driver owns |
//! | [`Driver::prewarm`] | optional: start a run's process and open its session before the run ([`Prewarmed`], [`PrewarmTicket`]) |
//! | [`Request`] | the concrete, current invocation: prompt, [`SessionContext`], [`RuntimePayload`] (services, secret env), effective MCP servers, [`ProfilePayload`], workspace, model, instructions, metadata |
//! | [`Response`] | output, [`ExitStatus`], [`Usage`], [`Checkpoint`], typed [`RunFailure`] |
//! | [`DriverError`] | typed: [`ResumeRejected`](DriverError::ResumeRejected), invalid config, unsupported, failed, cancelled |
//! | [`DriverEvent`] | run started, text deltas, tool-call start/arguments/result, approval requested/resolved, one terminal event |
//! | [`OutputSchema`] | the JSON Schema one run's final answer must match (per call, never fingerprinted), passed natively where the runtime can |
//! | [`PermissionPolicy`] | what the runtime may do without asking (write, commands, network, MCP): allow, ask or deny |
//! | [`Approvals`] | where a run's approval requests go: the host's [`ApprovalHandler`] gets an [`ApprovalTicket`], answered exactly once, denied on timeout |
//! | [`Steering`] | a run's follow-ups ([`steering`]): the host's [`Steerer`] sends one into the running turn, the driver delivers and acknowledges it or refuses it with a [`SteerError`] |
//! | [`ProcessSignature`] | private, keyed, in-memory signature of a persistent process's exact configuration |
//!
//! # Invariants
//! - **Four separate contracts.** Whether a stored session may *continue* is decided by the
//!   session guard, built from the profile's **session-compatibility** fingerprint
//!   ([`SessionGuard`]); what the provider *connects to* is the concrete request, applied on
//!   every turn; whether a service instance may be reused is the run-service reuse key; whether
//!   a provider *process* may be reused is its exact [`ProcessSignature`]. A rotated endpoint
//!   or token therefore resumes the same session, reaches the driver as the new value, and
//!   replaces a persistent process before the prompt is sent, which is delivered at most once.
//! - **Secrets are a type.** Secret values travel only as [`secrecy::SecretString`] inside
//!   [`run_service::EnvBinding`]s: redacted in `Debug`, written as names only by `Serialize`,
//!   left out of config fingerprints (names only), and keyed-hashed with a random per-process
//!   key in process signatures. No error message carries a secret value or free provider text.
//! - **Events are ordered** (see [`DriverEvent`], checked by [`check_sequence`]) and carry no
//!   sequence numbers or timestamps: the core assigns them.
//! - **Capabilities are truthful**: resume iff a codec and a config fingerprinter exist;
//!   persistent processes iff a lifecycle exists (see [`Capabilities`]).
//! - **Permissions fail closed.** A driver enforces the request's [`PermissionPolicy`] through
//!   its runtime or refuses it ([`Unsupported::Permission`]); an approval request nobody
//!   answers in time is denied, and an answer is taken once.
//!
//! # What this crate deliberately does not do
//! It spawns no process, stores nothing, performs no I/O and needs no async runtime (the
//! reference driver uses `tokio::sync` only; its sessions sit behind
//! [`reference::SessionTable`], which `reference-runtime` implements on disk). It does not decide Thread compatibility: the
//! core compares fingerprints before a driver runs; the driver's guard is the second gate.
//!
//! # Example
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use compat_fingerprint::{Fingerprint, Kind};
//! use driver_spi::reference::ReferenceDriver;
//! use driver_spi::{check_sequence, CollectingSink, Driver, ProfilePayload, Request, SessionContext};
//! use run_service::RunId;
//!
//! const PROFILE: Kind = Kind::new("example 2026-11-30 profile v1");
//! let profile = ProfilePayload::new(
//!     Fingerprint::of(PROFILE, |e| e.str("exact")),
//!     Fingerprint::of(PROFILE, |e| e.str("session")),
//! );
//! let driver: Arc<dyn Driver> = Arc::new(ReferenceDriver::new());
//! let sink = Arc::new(CollectingSink::new());
//!
//! let first = driver.run(Request::new(RunId::new("r1"), "hello", profile), sink.clone()).await.unwrap();
//! assert_eq!(check_sequence(&sink.take()), Ok(()));
//! let state = first.persistable_checkpoint().expect("a clean turn is resumable").clone();
//!
//! let next = Request::new(RunId::new("r2"), "again", profile)
//!     .with_session(SessionContext::continue_only(state));
//! let second = driver.run(next, sink.clone()).await.unwrap();
//! assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
//! # });
//! ```
//!
//! # Features
//! - `conformance`: the driver conformance kit, `driver_spi::conformance`: named clauses
//!   (DSC, CFG, CAP, SES, EVT, RSP, CUR, POL, APR, STR, PRC, PRW) run against any driver factory.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod approval;
mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
mod descriptor;
mod driver;
mod error;
mod event;
mod output;
mod permission;
mod prewarm;
mod process;
pub mod reference;
mod request;
mod response;
mod session;
mod steer;

pub use async_trait::async_trait;

pub use approval::{
    AnswerError, ApprovalDecision, ApprovalHandler, ApprovalOutcome, ApprovalQuery,
    ApprovalRequest, ApprovalTicket, Approvals,
};
pub use config::{ConfigFingerprintBuilder, ConfigFingerprinter};
pub use descriptor::{Capabilities, Descriptor, Unsupported};
pub use driver::Driver;
pub use error::{ConfigError, DriverError, ResumeRejectReason};
pub use event::{
    CollectingSink, DriverEvent, EventSink, PlanEntry, PlanPriority, PlanStatus, SequenceError,
    SequenceRule, check_sequence,
};
pub use output::{OutputSchema, SchemaDelivery, StrictSchemaError};
pub use permission::{Action, ParsePolicyError, Permission, PermissionPolicy};
pub use prewarm::{PrewarmTicket, Prewarmed};
pub use process::{ProcessAction, ProcessLifecycle, ProcessSignature, ProcessSignatureBuilder};
pub use request::{ProfilePayload, Redactor, Request, RuntimePayload};
pub use response::{
    Checkpoint, ExitStatus, FailureKind, ProgramProblem, ProgramUnavailable, Response, RunFailure,
    Usage,
};
pub use session::{
    CodecError, GuardedCodec, SessionCodec, SessionContext, SessionGuard, SessionMode,
    SessionParams, SessionState, guard_fingerprint,
};
pub use steer::{FollowUp, SteerError, SteerReceiver, Steerer, Steering, steering};
