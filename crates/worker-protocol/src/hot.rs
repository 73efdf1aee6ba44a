//! The messages of hot Threads through a worker: a pre-warm ([`Prewarm`] → [`PrewarmAnswer`]),
//! a follow-up into a running task ([`Steer`] → [`SteerAnswer`]), and which conversations the
//! worker's resident processes hold ([`Holds`] → [`Held`], and the [`ProcessesChanged`]
//! notification).

use std::time::Duration;

use driver_spi::{DriverError, PrewarmTicket, Prewarmed, SteerError};
use serde_json::{Value, json};

use crate::{TaskError, WireRequest};

/// `runtime.prewarm` params: pre-warm the configured driver `driver` for `request` (what its
/// next `runtime.startTask` will send; the prompt is ignored). The request's secrets cross as
/// they do in [`StartTask`](crate::StartTask): [`to_wire`](Self::to_wire) only.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Prewarm {
    /// The configured driver.
    pub driver: u64,
    /// The session it continues, when it has one (informational, as in `StartTask`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The request.
    pub request: WireRequest,
}

impl Prewarm {
    /// The message the host writes.
    pub fn to_wire(&self) -> Value {
        json!({
            "driver": self.driver,
            "session_id": self.session_id,
            "request": self.request.to_wire(),
        })
    }
}

/// `runtime.prewarm` result: the driver's [`Prewarmed`], or the error it returned, in the
/// form a failed task's terminal event carries it (so the host sees the same `DriverError`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PrewarmAnswer {
    /// The process is ready.
    Ready {
        /// [`Prewarmed::ticket`].
        #[serde(default)]
        ticket: Option<PrewarmTicket>,
        /// [`Prewarmed::reused`].
        #[serde(default)]
        reused: bool,
        /// [`Prewarmed::expires_after`], in milliseconds.
        #[serde(default)]
        expires_after_ms: Option<u64>,
    },
    /// The driver refused or failed the pre-warm.
    Failed {
        /// Its error.
        error: TaskError,
    },
}

impl PrewarmAnswer {
    /// The wire form of a pre-warm's outcome.
    pub fn from_result(result: &Result<Prewarmed, DriverError>) -> Self {
        match result {
            Ok(ready) => Self::Ready {
                ticket: ready.ticket.clone(),
                reused: ready.reused,
                expires_after_ms: ready
                    .expires_after
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            },
            Err(error) => Self::Failed {
                error: TaskError::from_driver_error(error),
            },
        }
    }

    /// The outcome, on the host's side.
    ///
    /// # Errors
    /// The driver's error, mapped as a failed task's ([`TaskError::into_driver_error`]).
    pub fn into_result(self) -> Result<Prewarmed, DriverError> {
        match self {
            Self::Ready {
                ticket,
                reused,
                expires_after_ms,
            } => Ok(Prewarmed::new(ticket)
                .with_reused(reused)
                .with_expires_after(expires_after_ms.map(Duration::from_millis))),
            Self::Failed { error } => Err(error.into_driver_error()),
        }
    }
}

/// `runtime.steer` params: a follow-up for the running task `handle`. The text is the host's
/// words, carried like a prompt: the worker's driver redacts it in the events it emits, and
/// `Debug` shows its length only.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Steer {
    /// The task.
    pub handle: u64,
    /// The task's attempt ([`StartTask::attempt`](crate::StartTask::attempt)): a follow-up
    /// meant for another attempt is refused as [`WireSteerError::TurnEnded`].
    pub attempt: u32,
    /// The follow-up.
    pub text: String,
    /// The host's number for this follow-up within the task (from 1), which
    /// [`AbandonSteer`] names; 0 when the host will not abandon it.
    #[serde(default)]
    pub steer_id: u64,
}

impl std::fmt::Debug for Steer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steer")
            .field("handle", &self.handle)
            .field("attempt", &self.attempt)
            .field("steer_id", &self.steer_id)
            .field("chars", &self.text.chars().count())
            .finish()
    }
}

/// `runtime.abandonSteer` params: the host stopped waiting for follow-up `steer_id` of task
/// `handle` (its caller's bound passed): the worker abandons it, so a driver that has not
/// begun delivering it skips it, as in process. The pending `runtime.steer` is then answered
/// `refused` ([`WireSteerError::TimedOut`]), which nobody reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AbandonSteer {
    /// The task.
    pub handle: u64,
    /// [`Steer::steer_id`].
    pub steer_id: u64,
}

/// `runtime.abandonSteer` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Abandoned {
    /// Whether the follow-up was still pending (it was abandoned before its answer).
    pub abandoned: bool,
}

/// `runtime.steer` result: the worker's driver delivered the follow-up, or refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SteerAnswer {
    /// Delivered to the runtime; the task's `follow_up` event was sent before this answer.
    Acknowledged,
    /// Not delivered.
    Refused {
        /// Why.
        error: WireSteerError,
    },
}

impl SteerAnswer {
    /// The wire form of a follow-up's outcome.
    pub fn from_result(result: Result<(), SteerError>) -> Self {
        match result {
            Ok(()) => Self::Acknowledged,
            Err(error) => Self::Refused {
                error: error.into(),
            },
        }
    }

    /// The outcome, on the host's side.
    ///
    /// # Errors
    /// The refusal's [`SteerError`].
    pub fn into_result(self) -> Result<(), SteerError> {
        match self {
            Self::Acknowledged => Ok(()),
            Self::Refused { error } => Err(error.into()),
        }
    }
}

/// A [`SteerError`] on the wire: its class (none carries provider text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "each variant is the `SteerError` variant of the same name"
)]
pub enum WireSteerError {
    Unsupported,
    NoTurn,
    TurnEnded,
    Refused,
    TimedOut { after_ms: u64 },
    Empty,
}

impl From<SteerError> for WireSteerError {
    fn from(error: SteerError) -> Self {
        match error {
            SteerError::Unsupported => Self::Unsupported,
            SteerError::NoTurn => Self::NoTurn,
            SteerError::TurnEnded => Self::TurnEnded,
            SteerError::TimedOut { after } => Self::TimedOut {
                after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            },
            SteerError::Empty => Self::Empty,
            _ => Self::Refused,
        }
    }
}

impl From<WireSteerError> for SteerError {
    fn from(error: WireSteerError) -> Self {
        match error {
            WireSteerError::Unsupported => Self::Unsupported,
            WireSteerError::NoTurn => Self::NoTurn,
            WireSteerError::TurnEnded => Self::TurnEnded,
            WireSteerError::Refused => Self::Refused,
            WireSteerError::TimedOut { after_ms } => Self::TimedOut {
                after: Duration::from_millis(after_ms),
            },
            WireSteerError::Empty => Self::Empty,
        }
    }
}

/// `runtime.holds` params: whether a live process of the configured driver `driver` holds
/// the conversation `session_id` (`ProcessLifecycle::holds_conversation`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Holds {
    /// The configured driver.
    pub driver: u64,
    /// The conversation (a checkpoint's resume id).
    pub session_id: String,
}

/// `runtime.holds` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    /// The driver's answer (`false` for a driver that keeps no processes).
    pub held: bool,
}

/// `runtime.processesChanged` params (a notification from the worker): the configured driver
/// `driver`'s `ProcessLifecycle::changes` fired (a process it kept ended), so what
/// `runtime.holds` answers may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessesChanged {
    /// The configured driver.
    pub driver: u64,
    /// Its generation (`changes()`'s value).
    pub generation: u64,
}
