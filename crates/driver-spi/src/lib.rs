//! The driver service-provider interface.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod config;
#[cfg(feature = "conformance")]
pub mod conformance;
mod descriptor;
mod driver;
mod error;
mod event;
mod process;
pub mod reference;
mod request;
mod response;
mod session;

pub use async_trait::async_trait;

pub use config::{ConfigFingerprintBuilder, ConfigFingerprinter};
pub use descriptor::{Capabilities, Descriptor, Unsupported};
pub use driver::Driver;
pub use error::{ConfigError, DriverError, ResumeRejectReason};
pub use event::{
    CollectingSink, DriverEvent, EventSink, SequenceError, SequenceRule, check_sequence,
};
pub use process::{ProcessAction, ProcessLifecycle, ProcessSignature, ProcessSignatureBuilder};
pub use request::{ProfilePayload, Redactor, Request, RuntimePayload};
pub use response::{Checkpoint, ExitStatus, FailureKind, Response, RunFailure, Usage};
pub use session::{
    CodecError, SessionCodec, SessionContext, SessionGuard, SessionMode, SessionParams,
    SessionState, guard_fingerprint,
};
