//! What a dialect's resident mode says, as values: [`ResidentProtocol`], the [`Call`]s it
//! sends and the [`Rejection`]s it judges.

use driver_spi::{DriverError, FailureKind};
use serde_json::Value;

use crate::dialect::{Invocation, MalformedEvent, Turn};

/// One message of a resident protocol: a request whose answer the driver awaits, or a
/// notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub(super) method: &'static str,
    pub(super) params: Value,
    pub(super) notification: bool,
}

impl Call {
    /// A request: the driver waits for its answer (at most the idle timeout).
    pub fn request(method: &'static str, params: Value) -> Self {
        Self {
            method,
            params,
            notification: false,
        }
    }

    /// A notification: sent, never answered.
    pub fn notification(method: &'static str, params: Value) -> Self {
        Self {
            method,
            params,
            notification: true,
        }
    }

    /// The method.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The params.
    pub fn params(&self) -> &Value {
        &self.params
    }
}

/// What a peer's error answer means, in the dialect's judgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// The session to resume or fork is unknown: the turn is
    /// [`ResumeRejected`](DriverError::ResumeRejected).
    UnknownSession,
    /// Any other refusal, classified.
    Failed(FailureKind),
}

/// The protocol of a dialect's resident mode, as values: the driver spawns, sends, waits and
/// reads; the protocol only says what to send and what the answers mean. The transport is
/// newline-delimited JSON-RPC on the process's stdio (Codex's app-server; ACP and a worker
/// speak the same framing). Notifications reach the dialect's [`Translator`](crate::Translator)
/// with the method as the event's kind and the params as its value; the translator's
/// [`turn_ended`](crate::Translator::turn_ended) ends the turn.
///
/// Like a [`Dialect`](crate::Dialect), a protocol names variables, never their values.
pub trait ResidentProtocol: Send + Sync {
    /// The resident process's argv and variables for this turn's configuration (its stdin
    /// stays open; [`Invocation::stdin`] is ignored). Everything in it is part of the
    /// process signature: a turn whose invocation differs gets a new process.
    ///
    /// # Errors
    /// The [`DriverError`] to report; nothing has been spawned.
    fn launch(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError>;

    /// What a new process is sent first, in order (requests are awaited).
    fn handshake(&self) -> Vec<Call>;

    /// The call that opens the turn's session on a process that has `loaded` loaded (`None`
    /// for a new process); `None` when `loaded` is already the turn's session.
    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call>;

    /// The session id in the answer to [`open`](Self::open)'s call.
    ///
    /// # Errors
    /// [`MalformedEvent`] when the answer has none.
    fn opened(&self, answer: &Value) -> Result<String, MalformedEvent>;

    /// The call that sends the turn's prompt to `session`.
    fn prompt(&self, turn: &Turn<'_>, session: &str) -> Call;

    /// The turn's id in the answer to the prompt's call, when the protocol has one (for
    /// [`interrupt`](Self::interrupt)).
    fn prompt_accepted(&self, answer: &Value) -> Option<String>;

    /// The call that interrupts turn `turn_id` of `session`, sent when a turn is cancelled.
    fn interrupt(&self, session: &str, turn_id: &str) -> Option<Call>;

    /// What the peer's error answer (`code`, and its message, which is never shown) to
    /// `method` means.
    fn rejection(&self, method: &str, code: i64, message: &str) -> Rejection;

    /// The result to answer a request of the peer with (an approval, an elicitation), or
    /// `None` to answer that the method is not supported.
    fn answer(&self, method: &str, params: &Value) -> Option<Value>;
}
