//! Agents and durable Threads that resume safely across host restarts.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod compat;
mod error;
mod events;
mod pipeline;
mod result;
mod thread;
pub mod tools;

pub use agent::{Agent, AgentBuilder, DEFAULT_LEASE_TTL, DEFAULT_TEARDOWN_BUDGET};
pub use compat::{SCHEME_VERSION, SchemeMigration};
pub use error::{BuildError, Incompatibility, ThreadError};
pub use events::{RunStream, ThreadEvent, ThreadEventKind};
pub use result::{RunResult, SessionOutcome};
pub use thread::{Thread, ThreadCheckpoint};
