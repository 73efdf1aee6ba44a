//! What a dialect's resident mode says, as values: [`ResidentProtocol`], the [`Call`]s it
//! sends and the [`Rejection`]s it judges.

use driver_spi::{ApprovalDecision, ApprovalQuery, FailureKind, Request};
use run_service::SecretString;
use secrecy::ExposeSecret as _;
use serde_json::Value;

#[cfg(doc)]
use crate::dialect::Invocation;
use crate::dialect::{MalformedEvent, Turn};
use driver_process::peer::{Framing, JsonRpc};
#[cfg(doc)]
use driver_spi::DriverError;

/// One message of a resident protocol: a request whose answer the driver awaits, or a
/// notification.
///
/// A call may carry secret values ([`with_secret`](Self::with_secret): an MCP server's bearer
/// header in ACP's `session/new`): they are kept apart from the params and written into them
/// only when the line is written, so `Debug`, logs and errors never show them.
///
/// ```
/// use driver_cli::Call;
/// use run_service::SecretString;
/// use serde_json::json;
///
/// let call = Call::request("session/new", json!({"mcpServers": [{"headers": [{"name": "Authorization"}]}]}))
///     .with_secret("/mcpServers/0/headers/0/value", SecretString::from("Bearer hunter2-canary"));
/// assert!(!format!("{call:?}").contains("hunter2"));
/// assert_eq!(call.params()["mcpServers"][0]["headers"][0].get("value"), None);
/// ```
#[derive(Debug, Clone)]
pub struct Call {
    pub(super) method: &'static str,
    pub(super) params: Value,
    pub(super) notification: bool,
    /// Secret values and the JSON pointers (into the params) they are written at.
    secrets: Vec<(String, SecretString)>,
}

/// Calls are equal by method, kind and params, and by where their secrets go (never by the
/// secret values, which a test compares through what was written).
impl PartialEq for Call {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method
            && self.params == other.params
            && self.notification == other.notification
            && self
                .secrets
                .iter()
                .map(|(p, _)| p)
                .eq(other.secrets.iter().map(|(p, _)| p))
    }
}

impl Call {
    /// A request: the driver waits for its answer (at most the idle timeout).
    pub fn request(method: &'static str, params: Value) -> Self {
        Self {
            method,
            params,
            notification: false,
            secrets: Vec::new(),
        }
    }

    /// A notification: sent, never answered. A framing may write it as its params alone (the
    /// stream-json control protocol does: the method only names it, which is how a `user`
    /// message is sent).
    pub fn notification(method: &'static str, params: Value) -> Self {
        Self {
            method,
            params,
            notification: true,
            secrets: Vec::new(),
        }
    }

    /// Writes `value` at `pointer` (a JSON pointer into the params, whose parent must exist as
    /// an object or array) when the call is sent; until then the params do not hold it.
    pub fn with_secret(mut self, pointer: impl Into<String>, value: SecretString) -> Self {
        self.secrets.push((pointer.into(), value));
        self
    }

    /// The params as written: with the secret values in place. A pointer whose parent does
    /// not exist leaves its value out (the peer then refuses the call, as it would a missing
    /// field); a secret is never written anywhere else.
    pub(crate) fn wire_params(&self) -> Value {
        if self.secrets.is_empty() {
            return self.params.clone();
        }
        let mut params = self.params.clone();
        for (pointer, value) in &self.secrets {
            let Some((parent, last)) = pointer.rsplit_once('/') else {
                continue;
            };
            let last = last.replace("~1", "/").replace("~0", "~");
            let secret = Value::from(value.expose_secret());
            match params.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.insert(last, secret);
                }
                Some(Value::Array(items)) => {
                    if let Some(slot) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                        *slot = secret;
                    }
                }
                _ => {}
            }
        }
        params
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
/// reads; the protocol only says what to send and what the answers mean. The transport is one
/// JSON object per line on the process's stdio, framed as the protocol's
/// [`framing`](Self::framing): JSON-RPC (Codex's app-server; ACP and a worker speak the same)
/// or the stream-json control protocol (Claude Code, CodeBuddy, framed in `driver-stream-json`). Messages the process starts reach the dialect's
/// [`Translator`](crate::Translator) with their method (or `type`) as the event's kind; the
/// translator's [`turn_ended`](crate::Translator::turn_ended) ends the turn.
///
/// The process itself is launched with the dialect's
/// [`invocation`](crate::Dialect::invocation) for the turn (in resident mode, the dialect
/// returns its resident argv there: its stdin stays open and [`Invocation::stdin`] is
/// ignored); everything in it is part of the process signature, a per-run config file by its
/// contents, so a turn whose invocation differs gets a new process. The protocol itself holds
/// no options, so one static value can serve every dialect that speaks it.
///
/// Like a [`Dialect`](crate::Dialect), a protocol names variables, never their values.
pub trait ResidentProtocol: Send + Sync {
    /// How messages are framed. The default: JSON-RPC ([`JsonRpc`]).
    fn framing(&self) -> &'static dyn Framing {
        &JsonRpc
    }

    /// Arguments naming the turn's session, appended to the invocation's when a new
    /// process starts for it (`--session-id`, `--resume`): not part of the signature, since a
    /// process serves one conversation. The default: none (the protocol opens sessions).
    fn launch_session(&self, turn: &Turn<'_>) -> Vec<String> {
        let _ = turn;
        Vec::new()
    }

    /// What a new process is sent first, in order (requests are awaited).
    fn handshake(&self) -> Vec<Call>;

    /// The call that opens the turn's session on a process that has `loaded` loaded (`None`
    /// for a new process); `None` when `loaded` is already the turn's session, or when the
    /// session was named at launch ([`launch_session`](Self::launch_session)): the plan's id
    /// then, or the id the events report. The default: none.
    ///
    /// Whatever it derives from the request must be covered by the process signature (the
    /// launch invocation, the workspace as cwd, the permission policy): a reused process that
    /// has the session loaded is not sent this call again.
    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call> {
        let _ = (turn, loaded);
        None
    }

    /// What a pre-warmed process is sent once its session is open, awaited, so that the
    /// runtime has finished starting when the run comes
    /// ([`Driver::prewarm`](driver_spi::Driver::prewarm)): for a CLI that starts lazily (the
    /// stream-json CLIs print nothing and answer nothing before their first message, but
    /// answer `initialize` once started). Its answer is dropped. The default: none (the
    /// handshake and the session's opening were answered, so the process is ready).
    fn warm_up(&self) -> Option<Call> {
        None
    }

    /// How long to wait before sending the call of `method` that opens `turn`'s session: for
    /// an agent that must not open a session too soon after it was last opened (Gemini's ACP
    /// mode loses a session loaded in the minute its recording was opened). The default: no
    /// wait.
    fn wait_before_open(&self, turn: &Turn<'_>, method: &str) -> Option<std::time::Duration> {
        let _ = (turn, method);
        None
    }

    /// How the replay of a session opened by `method` is read, for a protocol whose agents
    /// replay a session's history as notifications (ACP's `session/load`). `None` (the
    /// default): what the process sends while the session opens is dropped unread.
    fn replay(&self, method: &str) -> Option<Replay> {
        let _ = method;
        None
    }

    /// Whether a message the process sent while a session opened (by `method` and `params`)
    /// is a piece of the session's history (a replayed user or agent message), for
    /// [`Replay::empty_is_unknown`]. The default: no.
    fn is_history(&self, method: &str, params: &Value) -> bool {
        let _ = (method, params);
        false
    }

    /// The session the answer to [`open`](Self::open)'s call for `turn` opened: the id in
    /// the answer, or, for a protocol whose answer to a load names none (ACP's
    /// `session/load`), the plan's.
    ///
    /// # Errors
    /// [`MalformedEvent`] when the answer has none.
    fn opened(&self, turn: &Turn<'_>, answer: &Value) -> Result<String, MalformedEvent> {
        let _ = (turn, answer);
        Err(MalformedEvent)
    }

    /// The call that sends the turn's prompt to `session` (`None` while the events have not
    /// named it yet: a fork, a session the CLI names). The answer to a prompt sent as a
    /// request reaches the translator as one more message, of the prompt's method, after
    /// every message the process sent before it: a protocol whose turn ends with that answer
    /// (ACP's `session/prompt` answers with the stop reason) ends the turn there.
    fn prompt(&self, turn: &Turn<'_>, session: Option<&str>) -> Call;

    /// The turn's id in the answer to the prompt's call, when the protocol has one (for
    /// [`interrupt`](Self::interrupt)). The default: none.
    fn prompt_accepted(&self, answer: &Value) -> Option<String> {
        let _ = answer;
        None
    }

    /// The turn a message of the peer (a notification or a request, by `method` and `params`)
    /// belongs to, when the protocol names turns (Codex's `turnId`, or `turn.id`). Once the
    /// prompt's answer gave the turn's id ([`prompt_accepted`](Self::prompt_accepted)), a
    /// message of another turn is dropped (a request is refused): a process's leftovers
    /// never answer the next turn. The default: none (every message is the turn's).
    fn turn_of(&self, method: &str, params: &Value) -> Option<String> {
        let _ = (method, params);
        None
    }

    /// The call that interrupts the running turn (of `session`, whose id is `turn_id` when
    /// [`prompt_accepted`](Self::prompt_accepted) gave one), sent when a turn is cancelled.
    fn interrupt(&self, session: Option<&str>, turn_id: Option<&str>) -> Option<Call>;

    /// Whether a running turn takes follow-up messages ([`steer`](Self::steer)); a driver in
    /// resident mode declares [`steer`](driver_spi::Capabilities::steer) then. The default: no.
    fn steers(&self) -> bool {
        false
    }

    /// The call that delivers the follow-up `text` into the running turn (of `session`, whose
    /// id is `turn_id` when [`prompt_accepted`](Self::prompt_accepted) gave one), sent once
    /// the prompt's call was answered (a notification prompt: at once). A request is
    /// delivered when answered (an error answer refuses it), a notification when written.
    /// `None` (the default) refuses it as unsupported, typed: a follow-up is never dropped.
    fn steer(&self, session: Option<&str>, turn_id: Option<&str>, text: &str) -> Option<Call> {
        let _ = (session, turn_id, text);
        None
    }

    /// Whether the CLI also runs a turn without this protocol (its per-turn mode, one process
    /// per turn reading the prompt and printing events). An agent that speaks only this
    /// protocol (an ACP agent) says no: in [`ProcessMode::PerTurn`](crate::ProcessMode) each of
    /// its turns runs on a one-turn process speaking it, closed after the turn. The default:
    /// yes.
    fn per_turn_cli(&self) -> bool {
        true
    }

    /// What the peer's error answer (`code`, and its message, which is never shown) to
    /// `method` means.
    fn rejection(&self, method: &str, code: i64, message: &str) -> Rejection;

    /// The result to answer a request of the peer with (an elicitation, anything that is not
    /// an [`approval`](Self::approval)), or `None` to answer that the method is not supported.
    fn answer(&self, method: &str, params: &Value) -> Option<Value>;

    /// Whether the protocol turns the runtime's permission requests into
    /// [`approval`](Self::approval)s, so a run's policy may ask the host. The default: no.
    fn approvals(&self) -> bool {
        false
    }

    /// What a notification of the turn (by `method` and `params`) tells a later permission
    /// request of the turn that the request itself does not carry: the key the request will
    /// name and the value to keep for it, handed to [`approval`](Self::approval) in its
    /// [`TurnNotes`] (Codex's file-change approval names the `fileChange` item, started
    /// before it, whose changes hold the paths). The default: nothing.
    fn note(&self, method: &str, params: &Value) -> Option<(String, Value)> {
        let _ = (method, params);
        None
    }

    /// What a request of the peer during a turn of `request` asks permission for, when it is
    /// a permission request: the driver decides it by the run's policy (allowed, denied, or
    /// asked of the host) and answers with [`approval_answer`](Self::approval_answer).
    /// `notes` holds what the turn's notifications told it ([`note`](Self::note)). The
    /// default: none.
    fn approval(
        &self,
        request: &Request,
        method: &str,
        params: &Value,
        notes: &TurnNotes,
    ) -> Option<ApprovalQuery> {
        let _ = (request, method, params, notes);
        None
    }

    /// The answer that carries `decision` to a permission request of the peer, in a turn of
    /// `request` (whose policy says whether a standing approval, ACP's `allow_always`, may be
    /// given on the host's behalf).
    fn approval_answer(
        &self,
        request: &Request,
        method: &str,
        params: &Value,
        decision: &ApprovalDecision,
    ) -> Value {
        let _ = (request, method, params, decision);
        Value::Null
    }

    /// The answer to a request of the peer (by `method` and `params`) that is still pending
    /// when its turn is cancelled, sent right after the [`interrupt`](Self::interrupt): ACP
    /// requires every pending `session/request_permission` to be answered `cancelled`. `None`
    /// (the default) leaves it unanswered: the process is ended anyway.
    fn cancelled_answer(&self, method: &str, params: &Value) -> Option<Value> {
        let _ = (method, params);
        None
    }
}

/// How a session's replay is read while it opens ([`ResidentProtocol::replay`]): every message
/// the process sends meanwhile is read and dropped, never the turn's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Replay {
    /// After the answer, the replay continues until the process has been quiet this long
    /// (Gemini's ACP mode answers `session/load` after the first replayed message and sends
    /// the rest after the answer); at most the idle timeout in all. `None`: the replay ends
    /// with the answer.
    pub settle: Option<std::time::Duration>,
    /// An answer with no [history](ResidentProtocol::is_history) replayed before it (or
    /// within the settle time) means the session is unknown: the turn is
    /// [`ResumeRejected`](driver_spi::DriverError::ResumeRejected) (CodeBuddy's ACP mode
    /// "loads" an unknown session id as an empty one). Only for sessions that always hold
    /// history once stored, which a driver's checkpoint guarantees: it is written after a
    /// turn.
    pub empty_is_unknown: bool,
}

impl Replay {
    /// A replay read until the answer, whose emptiness means nothing.
    pub const fn new() -> Self {
        Self {
            settle: None,
            empty_is_unknown: false,
        }
    }

    /// Read until the process has been quiet for `settle` after the answer.
    pub const fn settling(mut self, settle: std::time::Duration) -> Self {
        self.settle = Some(settle);
        self
    }

    /// An empty replay means an unknown session.
    pub const fn empty_is_unknown(mut self) -> Self {
        self.empty_is_unknown = true;
        self
    }
}

/// What the notifications of one turn told its later permission requests
/// ([`ResidentProtocol::note`]), by key. A turn keeps at most [`MAX`](Self::MAX) notes; a
/// later key is dropped (a key already kept is replaced).
///
/// ```
/// use driver_cli::TurnNotes;
/// use serde_json::json;
///
/// let mut notes = TurnNotes::default();
/// notes.insert("call_0", json!({"changes": []}));
/// assert_eq!(notes.get("call_0"), Some(&json!({"changes": []})));
/// assert_eq!(notes.get("call_1"), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnNotes {
    notes: std::collections::BTreeMap<String, Value>,
}

impl TurnNotes {
    /// The most notes one turn keeps.
    pub const MAX: usize = 256;

    /// Keeps `value` under `key` (dropped when the turn holds [`MAX`](Self::MAX) others).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        if self.notes.len() < Self::MAX || self.notes.contains_key(&key) {
            self.notes.insert(key, value);
        }
    }

    /// The value kept under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.notes.get(key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secret_is_written_only_into_the_wire_params() {
        let call = Call::request(
            "session/new",
            json!({"mcpServers": [{"name": "tools", "headers": [{"name": "Authorization"}]}],
                   "args": ["a", "b"]}),
        )
        .with_secret(
            "/mcpServers/0/headers/0/value",
            SecretString::from("Bearer call-canary-91xq"),
        )
        .with_secret("/args/1", SecretString::from("array-canary-7yt2"))
        .with_secret(
            "/missing/parent/value",
            SecretString::from("lost-canary-0pz"),
        );
        for shown in [format!("{call:?}"), call.params().to_string()] {
            assert!(!shown.contains("canary"), "{shown}");
        }
        let wire = call.wire_params();
        assert_eq!(
            wire.pointer("/mcpServers/0/headers/0/value"),
            Some(&json!("Bearer call-canary-91xq"))
        );
        assert_eq!(wire["args"], json!(["a", "array-canary-7yt2"]));
        assert!(
            !wire.to_string().contains("lost-canary"),
            "no parent: not written"
        );
        // Equal calls differ in no visible way; their secrets are compared by place only.
        assert_eq!(call.clone(), call);
    }

    #[test]
    fn a_turn_keeps_a_bounded_number_of_notes() {
        let mut notes = TurnNotes::default();
        for i in 0..TurnNotes::MAX + 10 {
            notes.insert(format!("k{i}"), json!(i));
        }
        assert_eq!(notes.get("k0"), Some(&json!(0)));
        assert_eq!(notes.get(&format!("k{}", TurnNotes::MAX)), None, "dropped");
        notes.insert("k0", json!("again"));
        assert_eq!(notes.get("k0"), Some(&json!("again")), "replaced");
    }
}
