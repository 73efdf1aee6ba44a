//! POL and APR: the permission policy and tool approvals.
//!
//! Each clause runs one stateless turn in which the factory's provider uses one tool
//! ([`Factory::script_tool_use`]) under a policy that allows, denies or asks about that
//! tool's action, and judges the events, the host's tickets and whether the tool ran
//! ([`Factory::tools_run`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::{CatchUnwind, Clause, Endpoint, Kit, NEW, Panicked, Turn};
use crate::{
    Action, AnswerError, ApprovalOutcome, ApprovalTicket, Approvals, CollectingSink, DriverError,
    DriverEvent, PermissionPolicy, ProfilePayload, Request, Response, SessionContext, Unsupported,
};

/// The reason the kit's handler denies with.
const DENY_REASON: &str = "kit: the host denies this";
/// The text the kit's handler answers with.
const ANSWER: &str = "kit: the host answers instead";
/// How long APR-04 lets a request wait.
const SHORT_TIMEOUT: Duration = Duration::from_millis(300);

/// What the host does with each ticket.
#[derive(Clone, Copy)]
enum Host {
    Approve,
    Deny,
    Answer,
    ApproveTwice,
    Hold,
}

/// The tickets a kit handler received, and a waker to call when one arrives.
#[derive(Default)]
struct Tickets {
    seen: Vec<ApprovalTicket>,
    answers: Vec<Result<(), AnswerError>>,
    waker: Option<Waker>,
}

type Shared = Arc<Mutex<Tickets>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Tickets> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn handler(host: Host, shared: Shared) -> Approvals {
    Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        let mut t = lock(&shared);
        match host {
            Host::Approve => t.answers.push(ticket.approve()),
            Host::Deny => t.answers.push(ticket.deny(DENY_REASON)),
            Host::Answer => {
                let answered = ticket.answer(ANSWER);
                if answered == Err(AnswerError::NotAnswerable) {
                    t.answers.push(ticket.deny(DENY_REASON));
                }
                t.answers.push(answered);
            }
            Host::ApproveTwice => {
                t.answers.push(ticket.approve());
                t.answers.push(ticket.approve());
            }
            Host::Hold => {}
        }
        t.seen.push(ticket);
        if let Some(waker) = t.waker.take() {
            waker.wake();
        }
    }))
}

/// Polls a run until it finishes (`Some`) or a ticket has arrived (`None`, the run dropped:
/// a cancellation while the request is pending).
struct UntilTicket<F> {
    run: Option<Pin<Box<F>>>,
    shared: Shared,
}

impl<F: Future> Future for UntilTicket<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(output) = run.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        let mut t = lock(&self.shared);
        if t.seen.is_empty() {
            t.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        drop(t);
        self.run = None;
        Poll::Ready(None)
    }
}

/// One policy turn: its events, result, tickets and whether the tool ran.
struct PolicyTurn {
    turn: Turn,
    tickets: Tickets,
    ran: Option<bool>,
}

impl PolicyTurn {
    fn requested(&self) -> usize {
        self.turn
            .events
            .iter()
            .filter(|e| matches!(e, DriverEvent::ApprovalRequested { .. }))
            .count()
    }

    fn outcomes(&self) -> Vec<ApprovalOutcome> {
        self.turn
            .events
            .iter()
            .filter_map(|e| match e {
                DriverEvent::ApprovalResolved { outcome, .. } => Some(*outcome),
                _ => None,
            })
            .collect()
    }

    fn finished(&self) -> Result<&Response, String> {
        match self.turn.response() {
            Some(r) => Ok(r),
            None => Err(format!("the turn ended with {}", self.turn.outcome())),
        }
    }

    /// The tool ran (`want`), or the factory cannot tell.
    fn ran(&self, want: bool) -> Result<(), String> {
        match self.ran {
            Some(ran) if ran != want => Err(if want {
                "the tool did not run".into()
            } else {
                "the tool ran".into()
            }),
            _ => Ok(()),
        }
    }

    /// One request, resolved with `outcome`.
    fn one(&self, outcome: ApprovalOutcome) -> Result<(), String> {
        match (
            self.requested(),
            self.outcomes().as_slice(),
            self.tickets.seen.len(),
        ) {
            (1, [o], 1) if *o == outcome => Ok(()),
            (requested, outcomes, tickets) => Err(format!(
                "expected one request resolved {outcome:?}; saw {requested} request event(s), \
                 {tickets} ticket(s), outcomes {outcomes:?}"
            )),
        }
    }
}

impl Kit<'_> {
    /// Scripts a tool use, then runs [`policy_turn`](Self::policy_turn) with a handler that
    /// answers as `host` (within `timeout`, when given).
    async fn scripted_turn(
        &mut self,
        label: &'static str,
        permissions: PermissionPolicy,
        host: Host,
        timeout: Option<Duration>,
        cancel: bool,
    ) -> PolicyTurn {
        self.factory.script_tool_use(&arguments(&NEW));
        let shared = Shared::default();
        let mut approvals = handler(host, shared.clone());
        if let Some(timeout) = timeout {
            approvals = approvals.with_timeout(timeout);
        }
        self.policy_turn(label, permissions, approvals, shared, cancel)
            .await
    }

    /// One stateless turn in which the provider uses a tool under `policy`; `cancel` drops the
    /// run once a ticket arrives.
    async fn policy_turn(
        &mut self,
        label: &'static str,
        permissions: PermissionPolicy,
        approvals: Approvals,
        shared: Shared,
        cancel: bool,
    ) -> PolicyTurn {
        self.runs += 1;
        let before = self.factory.tools_run();
        let request: Request = self
            .factory
            .prepare(self.request(SessionContext::stateless(), &NEW, kit_profile()))
            .with_permissions(permissions)
            .with_approvals(approvals);
        let sink = Arc::new(CollectingSink::new());
        let run = CatchUnwind(Box::pin(self.driver.run(request, sink.clone())));
        let result = if cancel {
            UntilTicket {
                run: Some(Box::pin(run)),
                shared: shared.clone(),
            }
            .await
            .unwrap_or(Ok(Err(DriverError::Cancelled)))
        } else {
            run.await
        };
        let turn = Turn {
            label,
            events: sink.events(),
            result,
        };
        if !cancel {
            self.check_events(&turn);
        }
        let after = self.factory.tools_run();
        let tickets = std::mem::take(&mut *lock(&shared));
        PolicyTurn {
            turn,
            tickets,
            ran: before.zip(after).map(|(b, a)| a > b),
        }
    }

    pub(super) async fn check_policy(&mut self, approvals_declared: bool) {
        let secret = NEW.secret;
        if !approvals_declared {
            // POL-03: a policy that asks is refused before anything runs (no tool needed).
            let shared = Shared::default();
            let turn = self
                .policy_turn(
                    "policy ask without approvals",
                    PermissionPolicy::default().ask(Action::Write),
                    handler(Host::Approve, shared.clone()),
                    shared,
                    false,
                )
                .await;
            self.r.check(
                Clause::Pol03,
                match &turn.turn.result {
                    Ok(Err(DriverError::Unsupported(Unsupported::Approvals))) => {
                        if turn.turn.events.is_empty() {
                            Ok(())
                        } else {
                            Err("events were emitted before the refusal".into())
                        }
                    }
                    _ => Err(format!(
                        "expected Unsupported(Approvals), got {}",
                        turn.turn.outcome()
                    )),
                },
            );
        }
        let Some(action) = self.factory.script_tool_use(&arguments(&NEW)) else {
            let skipped = [Clause::Pol01, Clause::Pol02].into_iter();
            let skipped = skipped.chain(approvals_declared.then_some(Clause::Pol03));
            for clause in skipped.chain(APPROVAL_CLAUSES) {
                self.r.skip(
                    clause,
                    "the factory cannot script a tool use (script_tool_use)",
                );
            }
            return;
        };
        let base = PermissionPolicy::default().allow(Action::Mcp);

        // POL-01: allowed → no request, the tool runs.
        let shared = Shared::default();
        let turn = self
            .policy_turn(
                "policy allow",
                base.allow(action),
                handler(Host::Deny, shared.clone()),
                shared,
                false,
            )
            .await;
        self.r.check(
            Clause::Pol01,
            turn.finished().and_then(|_| match turn.requested() {
                0 => turn.ran(true),
                n => Err(format!(
                    "{n} approval request(s) under a policy that allows"
                )),
            }),
        );

        // POL-02: denied → no request, the tool does not run.
        let turn = self
            .scripted_turn("policy deny", base.deny(action), Host::Approve, None, false)
            .await;
        self.r.check(
            Clause::Pol02,
            turn.finished().and_then(|_| match turn.requested() {
                0 => turn.ran(false),
                n => Err(format!(
                    "{n} approval request(s) under a policy that denies"
                )),
            }),
        );

        if !approvals_declared {
            for clause in APPROVAL_CLAUSES {
                self.r.skip(clause, "approvals are not declared");
            }
            return;
        }
        let ask = base.ask(action);

        // APR-01: approved → resolved Approved, the tool runs; the request carries no secret.
        let turn = self
            .scripted_turn("approve", ask, Host::Approve, None, false)
            .await;
        self.r.check(
            Clause::Apr01,
            turn.finished()
                .and_then(|_| turn.one(ApprovalOutcome::Approved))
                .and_then(|()| answers_ok(&turn.tickets.answers))
                .and_then(|()| turn.ran(true)),
        );
        self.r.check(
            Clause::Pol03,
            match turn.requested() {
                0 => Err(format!(
                    "approvals are declared, yet a policy that asks gave no request ({})",
                    turn.turn.outcome()
                )),
                _ => Ok(()),
            },
        );
        let in_request =
            turn.tickets.seen.iter().any(|t| {
                t.request().arguments.contains(secret) || t.request().tool.contains(secret)
            });
        let in_event = turn
            .turn
            .events
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .find(|v| v.to_string().contains(secret));
        self.r.check(
            Clause::Apr07,
            if turn.tickets.seen.is_empty() {
                Err("no ticket to inspect".into())
            } else if in_request {
                Err("a secret value reached an approval request in clear".into())
            } else if let Some(event) = in_event {
                let kind = event.get("type").and_then(|t| t.as_str()).unwrap_or("?");
                Err(format!("a secret value reached a `{kind}` event in clear"))
            } else {
                Ok(())
            },
        );

        // APR-02: denied → resolved Denied, the tool does not run.
        let turn = self
            .scripted_turn("deny", ask, Host::Deny, None, false)
            .await;
        self.r.check(
            Clause::Apr02,
            turn.finished()
                .and_then(|_| turn.one(ApprovalOutcome::Denied))
                .and_then(|()| answers_ok(&turn.tickets.answers))
                .and_then(|()| turn.ran(false)),
        );

        // APR-03: answered in place of the tool, where the request is answerable.
        let turn = self
            .scripted_turn("answer", ask, Host::Answer, None, false)
            .await;
        let answerable = turn.tickets.seen.first().map(|t| t.request().answerable);
        match answerable {
            Some(false) => {
                let refused = turn.tickets.answers.last() == Some(&Err(AnswerError::NotAnswerable));
                self.r.check(
                    Clause::Apr03,
                    if refused {
                        turn.finished()
                            .and_then(|_| turn.one(ApprovalOutcome::Denied))
                            .and_then(|()| turn.ran(false))
                    } else {
                        Err("an answer to a request that is not answerable was not refused".into())
                    },
                );
            }
            _ => self.r.check(
                Clause::Apr03,
                turn.finished()
                    .and_then(|_| turn.one(ApprovalOutcome::Answered))
                    .and_then(|()| answers_ok(&turn.tickets.answers))
                    .and_then(|()| turn.ran(false)),
            ),
        }

        // APR-04: no answer before the timeout → denied; a late answer is refused as closed.
        let turn = self
            .scripted_turn("timeout", ask, Host::Hold, Some(SHORT_TIMEOUT), false)
            .await;
        let late = turn.tickets.seen.first().map(ApprovalTicket::approve);
        self.r.check(
            Clause::Apr04,
            turn.finished()
                .and_then(|_| turn.one(ApprovalOutcome::TimedOut))
                .and_then(|()| match late {
                    Some(Err(AnswerError::Closed)) => Ok(()),
                    other => Err(format!("a late answer gave {other:?}, not Closed")),
                })
                .and_then(|()| turn.ran(false)),
        );

        // APR-05: a second answer is refused; the first stands.
        let turn = self
            .scripted_turn("duplicate", ask, Host::ApproveTwice, None, false)
            .await;
        self.r.check(
            Clause::Apr05,
            turn.finished()
                .and_then(|_| turn.one(ApprovalOutcome::Approved))
                .and_then(|()| match turn.tickets.answers.as_slice() {
                    [Ok(()), Err(AnswerError::AlreadyAnswered)] => Ok(()),
                    other => Err(format!("answers gave {other:?}")),
                })
                .and_then(|()| turn.ran(true)),
        );

        // APR-06: the run is cancelled while a request is pending: a later answer is refused
        // as closed and the tool does not run.
        let turn = self
            .scripted_turn("cancel", ask, Host::Hold, None, true)
            .await;
        let late = turn.tickets.seen.first().map(ApprovalTicket::approve);
        self.r.check(
            Clause::Apr06,
            match (&turn.turn.result, late) {
                (Ok(Err(DriverError::Cancelled)), Some(Err(AnswerError::Closed))) => {
                    turn.ran(false)
                }
                (Ok(Err(DriverError::Cancelled)), other) => Err(format!(
                    "an answer after cancellation gave {other:?}, not Closed"
                )),
                (Err(Panicked), _) => Err("the run panicked".into()),
                _ => Err(format!(
                    "the run ended ({}) before any approval request arrived",
                    turn.turn.outcome()
                )),
            },
        );
    }
}

const APPROVAL_CLAUSES: [Clause; 7] = [
    Clause::Apr01,
    Clause::Apr02,
    Clause::Apr03,
    Clause::Apr04,
    Clause::Apr05,
    Clause::Apr06,
    Clause::Apr07,
];

/// Every answer the handler gave was taken.
fn answers_ok(answers: &[Result<(), AnswerError>]) -> Result<(), String> {
    match answers.iter().find(|a| a.is_err()) {
        Some(err) => Err(format!("the host's answer was refused: {err:?}")),
        None => Ok(()),
    }
}

/// The arguments of every tool use the kit scripts ([`Factory::script_tool_use`]): a JSON
/// object that carries the secret of the kit's current endpoint, which must never reach an
/// approval request or event in clear. A scripted fake CLI may embed this text verbatim.
///
/// [`Factory::script_tool_use`]: super::Factory::script_tool_use
pub const TOOL_ARGUMENTS: &str =
    r#"{"file_path":"kit-approval.txt","token":"kit-canary-secret-new-a93e27"}"#;

/// [`TOOL_ARGUMENTS`], which carries the endpoint's secret.
fn arguments(endpoint: &Endpoint) -> String {
    debug_assert!(TOOL_ARGUMENTS.contains(endpoint.secret));
    TOOL_ARGUMENTS.to_owned()
}

fn kit_profile() -> ProfilePayload {
    ProfilePayload::new(
        super::kit_fingerprint("exact-policy"),
        super::kit_fingerprint("session-policy"),
    )
}
