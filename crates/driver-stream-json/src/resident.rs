//! [`Resident`]: the resident mode Claude Code and CodeBuddy share, as a
//! [`ResidentProtocol`]: a process started with `--input-format stream-json` takes one `user`
//! message per turn on stdin and ends each turn with a `result`; its session is named at
//! launch (`--session-id`, `--resume`, `--resume … --fork-session`); a running turn is
//! interrupted with the `interrupt` control request. What the pinned CLIs do with these is in
//! `docs/stream-json-resident.md`.

use driver_cli::{Call, Rejection, ResidentProtocol, Turn, TurnNotes};
use driver_process::peer::Framing;
use driver_spi::{ApprovalDecision, ApprovalQuery, FailureKind, Request};
use serde_json::{Value, json};

use crate::control::ControlProtocol;

/// The flag that makes a resident CLI echo each `user` message when it takes it (Claude
/// Code: `isReplay: true`), which a steering dialect's resident argv carries.
pub(crate) const REPLAY_FLAG: &str = "--replay-user-messages";

/// The stream-json resident protocol, one constant per dialect
/// ([`StreamJsonDialect`](crate::StreamJsonDialect)'s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resident {
    no_persistence: Option<&'static str>,
    steers: bool,
}

impl Resident {
    /// The protocol of a CLI whose stateless flag is `no_persistence` (Claude Code's
    /// `--no-session-persistence`; `None` for none).
    pub(crate) const fn new(no_persistence: Option<&'static str>) -> Self {
        Self {
            no_persistence,
            steers: false,
        }
    }

    /// Takes follow-ups into a running turn (see [`StreamJsonCli::STEERS`](crate::StreamJsonCli::STEERS)).
    pub(crate) const fn with_steer(mut self, steers: bool) -> Self {
        self.steers = steers;
        self
    }
}

/// A `user` message line of `text`: a turn's prompt, or a follow-up into a running turn.
fn user_message(text: &str) -> Call {
    Call::notification(
        "user",
        json!({"type": "user", "message": {"role": "user", "content": text}}),
    )
}

impl ResidentProtocol for Resident {
    fn framing(&self) -> &'static dyn Framing {
        &ControlProtocol
    }

    fn launch_session(&self, turn: &Turn<'_>) -> Vec<String> {
        turn.plan.session_id_flags(self.no_persistence)
    }

    /// Nothing: `initialize` is optional in both CLIs.
    fn handshake(&self) -> Vec<Call> {
        Vec::new()
    }

    /// Sessions are named at launch; a reused process has its session loaded.
    fn open(&self, turn: &Turn<'_>, loaded: Option<&str>) -> Option<Call> {
        let _ = (turn, loaded);
        None
    }

    /// `initialize`: both CLIs print nothing before their first message, and answer it once
    /// they have started (Claude Code in about 0.9 s, CodeBuddy in about 3 s; see
    /// `docs/stream-json-resident.md` §6), without opening a turn.
    fn warm_up(&self) -> Option<Call> {
        Some(Call::request("initialize", json!({})))
    }

    fn prompt(&self, turn: &Turn<'_>, _session: Option<&str>) -> Call {
        user_message(&turn.request.prompt)
    }

    fn steers(&self) -> bool {
        self.steers
    }

    /// Another `user` line: Claude Code adds it to the running turn's next model request
    /// after a tool call ("The user sent a new message while you were working"), and runs one
    /// that comes after the model's last tool call as a turn of its own, which the
    /// translator then waits for ([`Translator::steered`](driver_cli::Translator::steered)).
    fn steer(&self, _session: Option<&str>, _turn_id: Option<&str>, text: &str) -> Option<Call> {
        self.steers.then(|| user_message(text))
    }

    fn interrupt(&self, _session: Option<&str>, _turn_id: Option<&str>) -> Option<Call> {
        Some(Call::request("interrupt", json!({})))
    }

    fn rejection(&self, _method: &str, _code: i64, _message: &str) -> Rejection {
        Rejection::Failed(FailureKind::Protocol)
    }

    /// A `can_use_tool` request that is no [`approval`](Self::approval) is for a tool that only
    /// reads: allowed.
    fn answer(&self, method: &str, params: &Value) -> Option<Value> {
        (method == "can_use_tool")
            .then(|| crate::permissions::answer(params, &ApprovalDecision::Approve))
    }

    /// Both CLIs ask `can_use_tool` on a stream-json stdin (Claude Code with
    /// `--permission-prompt-tool stdio`).
    fn approvals(&self) -> bool {
        true
    }

    fn approval(
        &self,
        _request: &Request,
        method: &str,
        params: &Value,
        _notes: &TurnNotes,
    ) -> Option<ApprovalQuery> {
        crate::permissions::approval(method, params)
    }

    fn approval_answer(
        &self,
        _request: &Request,
        _method: &str,
        params: &Value,
        decision: &ApprovalDecision,
    ) -> Value {
        crate::permissions::answer(params, decision)
    }
}

#[cfg(test)]
mod protocol_tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn it_speaks_stream_json_and_interrupts_with_a_control_request() {
        let resident = Resident::new(None);
        let interrupt = resident.framing().request(1, "interrupt", json!({}));
        assert_eq!(interrupt["type"], "control_request");
        assert_eq!(
            resident.interrupt(None, None).unwrap().method(),
            "interrupt"
        );
    }

    #[test]
    fn a_follow_up_is_another_user_line_where_the_cli_steers() {
        assert_eq!(Resident::new(None).steer(None, None, "and tests"), None);
        let steering = Resident::new(None).with_steer(true);
        let call = steering.steer(None, None, "and tests").unwrap();
        let line = steering
            .framing()
            .notification(call.method(), call.params().clone());
        assert_eq!(
            line,
            json!({"type": "user", "message": {"role": "user", "content": "and tests"}})
        );
    }
}
