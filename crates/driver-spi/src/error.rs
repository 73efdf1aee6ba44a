//! Typed driver errors. No message here ever contains a secret value, free provider text or
//! a provider-supplied identity string: every field is a code constant, a number or an enum.

use std::fmt;

use crate::{CodecError, RunFailure, Unsupported};

/// Why a run did not produce a [`Response`](crate::Response).
///
/// Callers branch on it: [`ResumeRejected`](Self::ResumeRejected) in
/// [`ContinueOrStart`](crate::SessionMode::ContinueOrStart) makes the core retry once with a
/// fresh session; in [`ContinueOnly`](crate::SessionMode::ContinueOnly) it is surfaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The stored session cannot be continued.
    #[error("resume rejected: {reason}")]
    ResumeRejected {
        /// Why.
        reason: ResumeRejectReason,
    },
    /// The driver's construction config is invalid.
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// The request needs a capability the driver does not have.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// The session state handed to the driver could not be decoded. `Display` shows the
    /// codec's reason, which is then not the error's `source` (printed once in a chain).
    #[error("invalid session state: {0}")]
    Session(CodecError),
    /// The run started (or tried to start its runtime) and failed; `Display` shows the
    /// failure kind, and the program that could not be started when there is one (see
    /// [`RunFailure`]), never provider detail.
    #[error("run failed: {0}")]
    Failed(RunFailure),
    /// The run was interrupted before it finished.
    #[error("run cancelled")]
    Cancelled,
}

impl DriverError {
    /// A [`DriverError::ResumeRejected`].
    pub fn resume_rejected(reason: ResumeRejectReason) -> Self {
        Self::ResumeRejected { reason }
    }

    /// Whether this is a [`DriverError::ResumeRejected`].
    pub fn is_resume_rejected(&self) -> bool {
        matches!(self, Self::ResumeRejected { .. })
    }
}

impl From<CodecError> for DriverError {
    fn from(error: CodecError) -> Self {
        Self::Session(error)
    }
}

impl From<ResumeRejectReason> for DriverError {
    fn from(reason: ResumeRejectReason) -> Self {
        Self::ResumeRejected { reason }
    }
}

/// Why a stored session was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResumeRejectReason {
    /// The runtime does not know the session.
    UnknownSession,
    /// The runtime knew the session but it expired.
    Expired,
    /// The stored guard does not match the current request (see
    /// [`SessionGuard`](crate::SessionGuard)).
    GuardMismatch,
    /// The mode needs a stored state and the request has none.
    MissingState,
    /// The stored state is malformed.
    InvalidState,
}

impl fmt::Display for ResumeRejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownSession => "the runtime does not know the session",
            Self::Expired => "the session expired",
            Self::GuardMismatch => "the session guard does not match the current request",
            Self::MissingState => "no stored session state",
            Self::InvalidState => "the stored session state is malformed",
        })
    }
}

/// An invalid driver construction config.
///
/// Opaque: it names a field and a reason, both code constants, and never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid driver configuration: `{field}` {kind}")]
pub struct ConfigError {
    field: &'static str,
    kind: ConfigErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
enum ConfigErrorKind {
    Missing,
    Invalid(&'static str),
}

impl fmt::Display for ConfigErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("is missing"),
            Self::Invalid(reason) => write!(f, "is invalid: {reason}"),
        }
    }
}

impl ConfigError {
    /// A required field is missing or empty.
    pub fn missing(field: &'static str) -> Self {
        Self {
            field,
            kind: ConfigErrorKind::Missing,
        }
    }

    /// A field is invalid; `reason` is a fixed explanation such as `"must be absolute"`.
    pub fn invalid(field: &'static str, reason: &'static str) -> Self {
        Self {
            field,
            kind: ConfigErrorKind::Invalid(reason),
        }
    }

    /// The field.
    pub fn field(&self) -> &'static str {
        self.field
    }
}
