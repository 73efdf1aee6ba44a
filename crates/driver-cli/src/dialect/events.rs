//! What every JSONL event translator and turn judge of a CLI driver does the same way:
//! emitting `RunStarted` once, the tool-call lifecycle, undoing a malformed event, and building
//! the turn's terminal event and [`Response`].
//!
//! Parsing each CLI's events and deciding *whether* a turn succeeded (and why it failed)
//! stay in the driver crates: those rules differ per CLI.

use std::collections::BTreeSet;

use driver_spi::{
    Checkpoint, DriverError, DriverEvent, EventSink, ExitStatus, GuardedCodec, Request, Response,
    RunFailure, SessionCodec, SessionGuard, SessionState, Usage,
};
use serde_json::Value;

use crate::dialect::CliEvent;
use crate::dialect::MalformedEvent;
use crate::dialect::Translator;

/// The tool-result text of a call that was still open when a clean turn ended.
const NOT_COMPLETED: &str = "the tool call did not complete";

/// One translator's event bookkeeping: whether `RunStarted` was emitted, which tool calls are
/// open or closed, and the session id an event carried. Translators record into it; the
/// driver ([`Tracked`]) owns it and reads it.
///
/// It guarantees the lifecycle a host may rely on: `RunStarted` at most once, per call id one
/// `ToolCallStarted` (and its arguments) before at most one `ToolCallResult`, and never a
/// result for a call that did not start. The driver marks it before each event and undoes
/// what a malformed event changed, whose events the translator drops, so such an event
/// changes nothing either.
///
/// ```
/// use driver_cli::TurnEvents;
/// use driver_spi::DriverEvent;
///
/// let mut turn = TurnEvents::default();
/// let mut out = Vec::new();
/// turn.start(&mut out);
/// turn.start(&mut out); // once only
/// assert!(turn.open_call("c1", "shell", "ls", &mut out));
/// assert!(!turn.open_call("c1", "shell", "ls", &mut out)); // already open: nothing
/// assert!(!turn.close_call("c2", String::new(), false, &mut out)); // never opened
/// assert!(turn.close_call("c1", "a.txt".to_owned(), false, &mut out));
/// assert_eq!(
///     out,
///     [
///         DriverEvent::RunStarted,
///         DriverEvent::tool_call_started("c1", "shell"),
///         DriverEvent::tool_call_arguments("c1", "ls"),
///         DriverEvent::tool_call_result("c1", "a.txt", false),
///     ]
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct TurnEvents {
    started: bool,
    /// Tool calls started and not yet closed, by id.
    open: BTreeSet<String>,
    /// Tool calls already closed (a call completes once).
    closed: BTreeSet<String>,
    session_id: Option<String>,
    /// The call changes since the last mark, newest last; cleared by each mark, so it holds
    /// one event's changes only.
    journal: Vec<Change>,
}

/// A call change, recorded so that [`TurnEvents::undo`] can revert it.
#[derive(Debug, Clone)]
enum Change {
    Opened(String),
    Closed(String),
}

/// The state of a [`TurnEvents`] before one event, taken by [`TurnEvents::mark`].
#[derive(Debug)]
#[must_use = "a mark is only useful to undo an event"]
pub(crate) struct Mark {
    started: bool,
}

impl TurnEvents {
    /// Whether `RunStarted` was emitted.
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// The session id noted by [`note_session`](Self::note_session).
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Notes `event`'s `session_id` unless one was noted already or it is empty: the first
    /// id a CLI reports names the session. It is not undone with a malformed event, which
    /// still came from that session.
    pub fn note_session(&mut self, event: &Value) {
        if self.session_id.is_none()
            && let Some(id) = event.get("session_id").and_then(Value::as_str)
            && !id.is_empty()
        {
            self.session_id = Some(id.to_owned());
        }
    }

    /// Notes `id` as the session, unless one was noted already: the session a resident
    /// protocol opened, for a protocol whose events do not name it.
    pub(crate) fn note_session_id(&mut self, id: &str) {
        if self.session_id.is_none() && !id.is_empty() {
            self.session_id = Some(id.to_owned());
        }
    }

    /// Pushes `RunStarted` to `out` unless it was emitted already.
    pub fn start(&mut self, out: &mut Vec<DriverEvent>) {
        if !self.started {
            self.started = true;
            out.push(DriverEvent::RunStarted);
        }
    }

    /// Opens call `id`: pushes `ToolCallStarted` and, when `arguments` is not empty,
    /// `ToolCallArguments`. An empty id, or one already opened or closed, pushes nothing
    /// (CLIs repeat a call's start in progress updates). Returns whether the call was opened.
    pub fn open_call(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
        out: &mut Vec<DriverEvent>,
    ) -> bool {
        if id.is_empty() || self.open.contains(id) || self.closed.contains(id) {
            return false;
        }
        self.open.insert(id.to_owned());
        self.journal.push(Change::Opened(id.to_owned()));
        out.push(DriverEvent::tool_call_started(id, name));
        if !arguments.is_empty() {
            out.push(DriverEvent::tool_call_arguments(id, arguments));
        }
        true
    }

    /// Closes open call `id`: pushes its `ToolCallResult`. A call that is not open (never
    /// started, or closed already) pushes nothing. Returns whether the call was closed.
    pub fn close_call(
        &mut self,
        id: &str,
        output: String,
        is_error: bool,
        out: &mut Vec<DriverEvent>,
    ) -> bool {
        if !self.open.remove(id) {
            return false;
        }
        self.closed.insert(id.to_owned());
        self.journal.push(Change::Closed(id.to_owned()));
        out.push(DriverEvent::tool_call_result(id, output, is_error));
        true
    }

    /// Closes every call still open as an error result, in id order: a clean run must not
    /// finish with one open.
    pub(crate) fn close_open_calls(&mut self) -> Vec<DriverEvent> {
        let ids: Vec<String> = self.open.iter().cloned().collect();
        let mut out = Vec::new();
        for id in ids {
            self.close_call(&id, NOT_COMPLETED.to_owned(), true, &mut out);
        }
        out
    }

    /// Marks the state before one event, for [`undo`](Self::undo).
    pub(crate) fn mark(&mut self) -> Mark {
        self.journal.clear();
        Mark {
            started: self.started,
        }
    }

    /// Reverts every change since `mark`, which must be the latest mark: the translator
    /// dropped the event's output, so the run must not count as started, nor its calls as
    /// opened or closed.
    pub(crate) fn undo(&mut self, mark: Mark) {
        self.started = mark.started;
        while let Some(change) = self.journal.pop() {
            match change {
                Change::Opened(id) => {
                    self.open.remove(&id);
                }
                Change::Closed(id) => {
                    self.closed.remove(&id);
                    self.open.insert(id);
                }
            }
        }
    }
}

/// A [`Translator`] with the bookkeeping the driver keeps for it: what the one event loop
/// drives. A malformed event is dropped whole: its events are not emitted and its changes to
/// the [`TurnEvents`] are undone; the translator itself changes nothing before it knows an
/// event is well formed. The translator's own answers (output, verdict, usage) are reached
/// through `Deref`.
#[derive(Debug)]
pub struct Tracked<T> {
    turn: TurnEvents,
    translator: T,
}

impl<T: Translator> Tracked<T> {
    /// `translator`, before any event.
    pub fn new(translator: T) -> Self {
        Self {
            turn: TurnEvents::default(),
            translator,
        }
    }

    /// Translates one event; a malformed one emits nothing and changes nothing.
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event whose shape is broken.
    pub fn translate(&mut self, event: &Value) -> Result<Vec<DriverEvent>, MalformedEvent> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .ok_or(MalformedEvent)?;
        self.translate_kind(kind, event)
    }

    /// Translates one event whose kind the transport names (a JSON-RPC notification's
    /// `method`, with its `params` as the event); a malformed one emits nothing and changes
    /// nothing.
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event whose shape is broken.
    pub fn translate_kind(
        &mut self,
        kind: &str,
        event: &Value,
    ) -> Result<Vec<DriverEvent>, MalformedEvent> {
        let mark = self.turn.mark();
        let mut out = Vec::new();
        let event = CliEvent {
            kind,
            value: event,
            turn: &mut self.turn,
            out: &mut out,
        };
        match self.translator.translate(event) {
            Ok(()) => Ok(out),
            Err(err) => {
                self.turn.undo(mark);
                Err(err)
            }
        }
    }

    /// Whether `RunStarted` was produced.
    pub fn started(&self) -> bool {
        self.turn.started()
    }

    /// Hands the translator what the previous turn on its resident process carried
    /// ([`Translator::continue_from`]).
    pub fn continue_from(&mut self, carried: Option<&Value>) {
        self.translator.continue_from(carried);
    }

    /// Tells the translator a follow-up was delivered into the turn ([`Translator::steered`]).
    pub fn steered(&mut self) {
        self.translator.steered();
    }

    /// Notes the session a resident protocol opened for the turn: the session id when
    /// neither the translator nor an event names another.
    pub(crate) fn opened_session(&mut self, id: &str) {
        self.turn.note_session_id(id);
    }

    /// The session id the CLI reported: the translator's own, else the first `session_id`
    /// an event carried (or the session a resident protocol opened).
    pub fn session_id(&self) -> Option<&str> {
        self.translator
            .session_id()
            .or_else(|| self.turn.session_id())
    }

    /// Closes every tool call still open, as error results: a clean turn must not end with
    /// one open.
    pub fn close_open_calls(&mut self) -> Vec<DriverEvent> {
        self.turn.close_open_calls()
    }
}

impl<T> std::ops::Deref for Tracked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.translator
    }
}

/// A tool call's JSON arguments (or output) as text: a string as it is, other JSON
/// serialized, and nothing for a missing or null value (no `ToolCallArguments` then).
///
/// ```
/// use serde_json::json;
///
/// assert_eq!(driver_cli::json_text(Some(&json!({"n": 1}))), r#"{"n":1}"#);
/// assert_eq!(driver_cli::json_text(Some(&json!("ls -a"))), "ls -a");
/// assert_eq!(driver_cli::json_text(Some(&json!(null))), "");
/// assert_eq!(driver_cli::json_text(None), "");
/// ```
pub fn json_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Ends a turn the driver judged failed with `failure`.
///
/// Before `RunStarted` (`started` false) nothing is emitted and the failure is the error.
/// After it, `RunFailed` is emitted and the response carries the partial `output`, `usage`,
/// the failure, and the exit `status` (a successful exit is reported as code 1, since the
/// turn failed).
///
/// # Errors
/// [`DriverError::Failed`] with `failure` when the run had not started.
pub(crate) fn fail_turn(
    sink: &dyn EventSink,
    started: bool,
    failure: RunFailure,
    status: ExitStatus,
    output: &str,
    usage: Option<Usage>,
) -> Result<Response, DriverError> {
    if !started {
        return Err(DriverError::Failed(failure));
    }
    sink.emit(DriverEvent::RunFailed { kind: failure.kind });
    let exit = if status.is_success() {
        ExitStatus::Code(1)
    } else {
        status
    };
    let mut response = Response::new(output).with_exit(exit).with_failure(failure);
    if let Some(usage) = usage {
        response = response.with_usage(usage);
    }
    Ok(response)
}

/// Ends a turn the driver judged clean: emits `closing` (the translator's
/// [`close_open_calls`](TurnEvents::close_open_calls)) and `RunFinished`, and returns the
/// response with `output`, `usage` and `checkpoint`.
pub(crate) fn finish_turn(
    sink: &dyn EventSink,
    closing: Vec<DriverEvent>,
    output: &str,
    usage: Option<Usage>,
    checkpoint: Option<Checkpoint>,
) -> Response {
    for event in closing {
        sink.emit(event);
    }
    sink.emit(DriverEvent::RunFinished);
    let mut response = Response::new(output);
    if let Some(usage) = usage {
        response = response.with_usage(usage);
    }
    if let Some(checkpoint) = checkpoint {
        response = response.with_checkpoint(checkpoint);
    }
    response
}

/// The checkpoint of `state` (a session id plus driver data) for `request`: the request's
/// [`SessionGuard`] is written into it, and it is valid only if `codec` accepts the result.
pub(crate) fn checkpoint(
    request: &Request,
    mut state: SessionState,
    codec: &GuardedCodec,
) -> Checkpoint {
    SessionGuard::for_request(request).write_to(&mut state);
    if codec.to_params(Some(&state)).is_ok() {
        Checkpoint::valid(state)
    } else {
        Checkpoint::invalid(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_open_once_close_once_and_results_need_a_start() {
        let mut turn = TurnEvents::default();
        let mut out = Vec::new();
        assert!(turn.open_call("a", "x", "", &mut out));
        assert!(!turn.open_call("a", "x", "", &mut out));
        assert!(!turn.open_call("", "x", "", &mut out));
        assert!(!turn.close_call("zz", String::new(), false, &mut out));
        assert!(turn.close_call("a", "ok".to_owned(), false, &mut out));
        assert!(!turn.close_call("a", "again".to_owned(), false, &mut out));
        assert!(!turn.open_call("a", "x", "", &mut out));
        assert_eq!(
            out,
            [
                DriverEvent::tool_call_started("a", "x"),
                DriverEvent::tool_call_result("a", "ok", false),
            ]
        );
        assert!(!turn.started());
    }

    #[test]
    fn undo_reverts_only_the_changes_since_the_latest_mark() {
        let mut turn = TurnEvents::default();
        let mut out = Vec::new();
        let _ = turn.mark();
        turn.open_call("kept", "x", "", &mut out);
        turn.open_call("closed", "x", "", &mut out);

        let mark = turn.mark();
        turn.start(&mut out);
        turn.open_call("new", "x", "", &mut out);
        turn.close_call("closed", String::new(), false, &mut out);
        turn.undo(mark);

        assert!(!turn.started());
        let mut out = Vec::new();
        // `new` was never opened, so it opens now; `closed` is open again.
        assert!(turn.open_call("new", "x", "", &mut out));
        assert!(turn.close_call("closed", String::new(), false, &mut out));
        let closing = turn.close_open_calls();
        assert_eq!(
            closing,
            [
                DriverEvent::tool_call_result("kept", NOT_COMPLETED, true),
                DriverEvent::tool_call_result("new", NOT_COMPLETED, true),
            ]
        );
        assert!(turn.close_open_calls().is_empty());
    }

    #[test]
    fn the_first_non_empty_session_id_is_kept_through_undo() {
        let mut turn = TurnEvents::default();
        turn.note_session(&serde_json::json!({"session_id": ""}));
        turn.note_session(&serde_json::json!({"other": "x"}));
        assert_eq!(turn.session_id(), None);
        let mark = turn.mark();
        turn.note_session(&serde_json::json!({"session_id": "s1"}));
        turn.undo(mark);
        turn.note_session(&serde_json::json!({"session_id": "s2"}));
        assert_eq!(turn.session_id(), Some("s1"));
    }
}
