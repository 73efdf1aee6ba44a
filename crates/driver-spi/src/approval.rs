//! Tool approvals: a runtime asks, the host answers, exactly once.
//!
//! A driver whose runtime wants to take an action the run's
//! [`PermissionPolicy`](crate::PermissionPolicy) says to [`Ask`](crate::Permission::Ask) about
//! calls [`Approvals::ask`] with an [`ApprovalQuery`]. That redacts the arguments, emits
//! [`DriverEvent::ApprovalRequested`], hands an [`ApprovalTicket`] to the host's
//! [`ApprovalHandler`], waits for the first answer (or the timeout, or the run being
//! dropped), emits [`DriverEvent::ApprovalResolved`] and returns the decision for the
//! driver to pass to its runtime.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use run_service::RunId;
use tokio::sync::oneshot;

use crate::{Action, DriverEvent, EventSink, Request};

/// What the host decides about one [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// The runtime may take the action.
    Approve,
    /// The runtime may not; the reason is passed to the runtime (the model sees it).
    Deny {
        /// Why, in words for the model. Secret values the run knows are redacted.
        reason: String,
    },
    /// The action is not taken; this text stands in for its result. Only where the request
    /// is [`answerable`](ApprovalRequest::answerable).
    Answer {
        /// The result text the model sees.
        output: String,
    },
}

impl ApprovalDecision {
    /// A denial with this reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// An answer in place of the tool's result.
    pub fn answer(output: impl Into<String>) -> Self {
        Self::Answer {
            output: output.into(),
        }
    }
}

/// How an approval request ended, as events report it (no free text, so no secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalOutcome {
    /// The host approved.
    Approved,
    /// The host denied.
    Denied,
    /// The host answered in place of the tool.
    Answered,
    /// No answer came before the timeout: denied.
    TimedOut,
    /// No handler was set, or every ticket was dropped unanswered: denied.
    Unanswered,
}

/// One action a runtime asks the host to approve.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// Unique within the run (`approval-<n>`).
    pub id: String,
    /// The run.
    pub run_id: RunId,
    /// The Thread's key, when the run belongs to one.
    pub thread: Option<String>,
    /// The tool call this approves, when the runtime names one.
    pub call_id: Option<String>,
    /// Which kind of action, in the policy's terms.
    pub action: Action,
    /// The tool or command name as the runtime reports it (`Write`, `commandExecution`,
    /// `mcp__files__delete`).
    pub tool: String,
    /// The arguments (a command line, a JSON text, paths), with every secret value the run
    /// knows redacted.
    pub arguments: String,
    /// Whether [`ApprovalDecision::Answer`] is accepted for this request.
    pub answerable: bool,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The request was answered already; the first answer stands.
    #[error("the approval request was already answered")]
    AlreadyAnswered,
    /// The request timed out or its run ended (cancelled); the answer is ignored.
    #[error("the approval request is closed (timed out or its run ended)")]
    Closed,
    /// [`ApprovalDecision::Answer`] for a request that is not answerable; the request stays
    /// open.
    #[error("this approval request cannot be answered in place of the tool")]
    NotAnswerable,
}

enum Slot {
    Waiting(oneshot::Sender<Result<ApprovalDecision, Expired>>),
    Answered,
    Closed,
}

/// The timeout passed before an answer.
struct Expired;

/// One request's shared state: the answer slot, and the signal that ends its timer early.
struct Pending {
    slot: Mutex<Slot>,
    ended: Mutex<bool>,
    end: Condvar,
}

impl Pending {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        // The slot is replaced whole under the lock: a poisoned one is still consistent.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the slot (a later answer gets `Closed`) and stops the timer.
    fn close(&self) {
        let mut slot = self.slot();
        if matches!(*slot, Slot::Waiting(_)) {
            *slot = Slot::Closed;
        }
        drop(slot);
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.end.notify_all();
    }

    /// Waits until `timeout` passes (then expires the request) or the request ends.
    fn run_timer(&self, timeout: Duration) {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        let (ended, _) = self
            .end
            .wait_timeout_while(ended, timeout, |ended| !*ended)
            .unwrap_or_else(PoisonError::into_inner);
        if *ended {
            return;
        }
        drop(ended);
        if let Slot::Waiting(sender) = std::mem::replace(&mut *self.slot(), Slot::Closed) {
            let _ = sender.send(Err(Expired));
        }
    }
}

/// Closes a request when its `ask` ends, by answer, timeout or drop (cancellation).
struct CloseOnDrop(Arc<Pending>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// One pending approval request, as the host's [`ApprovalHandler`] receives it. Clone it to
/// answer from anywhere (another task, a UI); the first answer wins.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::{Arc, Mutex};
/// use driver_spi::{Action, ApprovalDecision, ApprovalQuery, ApprovalTicket, AnswerError};
/// use driver_spi::{Approvals, CollectingSink, Request, ProfilePayload};
/// # use compat_fingerprint::{Fingerprint, Kind};
/// # const K: Kind = Kind::new("example 2026-12-03 profile v1");
/// # let fp = Fingerprint::of(K, |e| e.str("p"));
/// use run_service::RunId;
///
/// let seen: Arc<Mutex<Vec<ApprovalTicket>>> = Arc::default();
/// let handler = { let seen = seen.clone(); move |t: ApprovalTicket| seen.lock().unwrap().push(t) };
/// let approvals = Approvals::new(Arc::new(handler));
/// let request = Request::new(RunId::new("r1"), "hi", ProfilePayload::new(fp, fp));
/// let sink = CollectingSink::new();
/// let asking = approvals.ask(&request, &sink, ApprovalQuery::new(Action::Write, "Write"));
/// let answering = async {
///     tokio::task::yield_now().await;
///     let ticket = seen.lock().unwrap()[0].clone();
///     assert_eq!(ticket.approve(), Ok(()));
///     assert_eq!(ticket.deny("too late"), Err(AnswerError::AlreadyAnswered));
/// };
/// let (decision, ()) = tokio::join!(asking, answering);
/// assert_eq!(decision, ApprovalDecision::Approve);
/// # });
/// ```
#[derive(Clone)]
pub struct ApprovalTicket {
    request: Arc<ApprovalRequest>,
    pending: Arc<Pending>,
}

impl std::fmt::Debug for ApprovalTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalTicket")
            .field("request", &self.request)
            .field("open", &self.is_open())
            .finish()
    }
}

impl ApprovalTicket {
    /// The request.
    pub fn request(&self) -> &ApprovalRequest {
        &self.request
    }

    /// Whether an answer would still be taken: not answered, not timed out, run not ended.
    pub fn is_open(&self) -> bool {
        match &*self.pending.slot() {
            Slot::Waiting(sender) => !sender.is_closed(),
            Slot::Answered | Slot::Closed => false,
        }
    }

    /// Approves.
    ///
    /// # Errors
    /// [`AnswerError::AlreadyAnswered`] or [`AnswerError::Closed`].
    pub fn approve(&self) -> Result<(), AnswerError> {
        self.decide(ApprovalDecision::Approve)
    }

    /// Denies, with a reason the runtime sees.
    ///
    /// # Errors
    /// [`AnswerError::AlreadyAnswered`] or [`AnswerError::Closed`].
    pub fn deny(&self, reason: impl Into<String>) -> Result<(), AnswerError> {
        self.decide(ApprovalDecision::deny(reason))
    }

    /// Answers in place of the tool's result.
    ///
    /// # Errors
    /// [`AnswerError::NotAnswerable`], [`AnswerError::AlreadyAnswered`] or
    /// [`AnswerError::Closed`].
    pub fn answer(&self, output: impl Into<String>) -> Result<(), AnswerError> {
        self.decide(ApprovalDecision::answer(output))
    }

    /// Gives the decision; the first one taken stands.
    ///
    /// # Errors
    /// [`AnswerError::NotAnswerable`] (the request stays open), [`AnswerError::AlreadyAnswered`]
    /// or [`AnswerError::Closed`].
    pub fn decide(&self, decision: ApprovalDecision) -> Result<(), AnswerError> {
        if matches!(decision, ApprovalDecision::Answer { .. }) && !self.request.answerable {
            return Err(AnswerError::NotAnswerable);
        }
        let mut slot = self.pending.slot();
        match std::mem::replace(&mut *slot, Slot::Closed) {
            Slot::Answered => {
                *slot = Slot::Answered;
                Err(AnswerError::AlreadyAnswered)
            }
            Slot::Closed => Err(AnswerError::Closed),
            Slot::Waiting(sender) => {
                // The receiver is gone once the request timed out or its run was dropped.
                sender.send(Ok(decision)).map_err(|_| AnswerError::Closed)?;
                *slot = Slot::Answered;
                Ok(())
            }
        }
    }
}

/// The host's side of approvals: receives each [`ApprovalTicket`] and answers it, now or
/// later, from anywhere. It must not block: a handler that asks a person hands the ticket
/// to a task or a UI and returns.
///
/// Any `Fn(ApprovalTicket) + Send + Sync` is a handler.
pub trait ApprovalHandler: Send + Sync {
    /// A new request.
    fn on_request(&self, ticket: ApprovalTicket);
}

impl<F: Fn(ApprovalTicket) + Send + Sync> ApprovalHandler for F {
    fn on_request(&self, ticket: ApprovalTicket) {
        self(ticket);
    }
}

/// What a driver asks about: [`Approvals::ask`] turns it into an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalQuery {
    /// Which kind of action.
    pub action: Action,
    /// The tool or command name as the runtime reports it.
    pub tool: String,
    /// The tool call, when the runtime names one.
    pub call_id: Option<String>,
    /// The arguments in clear (redacted by [`Approvals::ask`]).
    pub arguments: String,
    /// Whether the runtime accepts an answer in place of the tool's result.
    pub answerable: bool,
}

impl ApprovalQuery {
    /// A query for `tool`, no call id, no arguments, not answerable.
    pub fn new(action: Action, tool: impl Into<String>) -> Self {
        Self {
            action,
            tool: tool.into(),
            call_id: None,
            arguments: String::new(),
            answerable: false,
        }
    }

    /// Names the tool call.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Sets the arguments (in clear; redacted when asked).
    pub fn with_arguments(mut self, arguments: impl Into<String>) -> Self {
        self.arguments = arguments.into();
        self
    }

    /// Declares that the runtime takes an answer in place of the tool's result.
    pub fn answerable(mut self) -> Self {
        self.answerable = true;
        self
    }
}

/// How a run asks the host: its [`ApprovalHandler`] (if any), the approval timeout and the
/// Thread it belongs to. Part of every [`Request`] (never serialized); the core sets it.
///
/// Without a handler every request is denied at once ([`ApprovalOutcome::Unanswered`]), so a
/// policy that asks fails safe.
#[derive(Clone)]
pub struct Approvals {
    handler: Option<Arc<dyn ApprovalHandler>>,
    timeout: Duration,
    thread: Option<String>,
    issued: Arc<AtomicU64>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("handler", &self.handler.is_some())
            .field("timeout", &self.timeout)
            .field("thread", &self.thread)
            .finish()
    }
}

impl Default for Approvals {
    fn default() -> Self {
        Self {
            handler: None,
            timeout: Self::DEFAULT_TIMEOUT,
            thread: None,
            issued: Arc::default(),
        }
    }
}

impl Approvals {
    /// How long a request waits for its answer unless [`with_timeout`](Self::with_timeout)
    /// says otherwise: five minutes, time for a person to read it.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// Approvals answered by this handler.
    pub fn new(handler: Arc<dyn ApprovalHandler>) -> Self {
        Self {
            handler: Some(handler),
            ..Self::default()
        }
    }

    /// No handler: every request is denied.
    pub fn none() -> Self {
        Self::default()
    }

    /// A handler that approves everything.
    pub fn approve_all() -> Self {
        Self::new(Arc::new(|t: ApprovalTicket| {
            let _ = t.approve();
        }))
    }

    /// A handler that denies everything, with this reason.
    pub fn deny_all(reason: impl Into<String>) -> Self {
        let reason: String = reason.into();
        Self::new(Arc::new(move |t: ApprovalTicket| {
            let _ = t.deny(reason.clone());
        }))
    }

    /// Sets the approval timeout: a request unanswered for this long is denied.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Names the Thread the run belongs to (the core does this).
    pub fn with_thread(mut self, thread: impl Into<String>) -> Self {
        self.thread = Some(thread.into());
        self
    }

    /// Whether a handler is set.
    pub fn has_handler(&self) -> bool {
        self.handler.is_some()
    }

    /// The approval timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Asks the host about one action of `request`'s run and waits for the decision: the
    /// handler's first answer; a denial when there is no handler, when every ticket is
    /// dropped unanswered, or when the timeout passes first. Emits
    /// [`DriverEvent::ApprovalRequested`] before and [`DriverEvent::ApprovalResolved`] after,
    /// both with the arguments redacted by `request`'s [`Redactor`](crate::Redactor). The
    /// denial reason the runtime gets is redacted the same way.
    ///
    /// Dropping the returned future (the run cancelled) closes the ticket: a later answer
    /// gets [`AnswerError::Closed`]. The timeout runs on a short-lived thread of its own, so any
    /// executor will do.
    pub async fn ask(
        &self,
        request: &Request,
        sink: &dyn EventSink,
        query: ApprovalQuery,
    ) -> ApprovalDecision {
        let redactor = request.redactor();
        let n = self.issued.fetch_add(1, Ordering::Relaxed) + 1;
        let approval = Arc::new(ApprovalRequest {
            id: format!("approval-{n}"),
            run_id: request.run_id.clone(),
            thread: self.thread.clone(),
            call_id: query.call_id,
            action: query.action,
            tool: redactor.redact(&query.tool).into_owned(),
            arguments: redactor.redact(&query.arguments).into_owned(),
            answerable: query.answerable,
        });
        sink.emit(DriverEvent::ApprovalRequested {
            approval_id: approval.id.clone(),
            call_id: approval.call_id.clone(),
            action: approval.action,
            tool: approval.tool.clone(),
            arguments: approval.arguments.clone(),
        });
        let (outcome, decision) = self.decide(approval.clone()).await;
        sink.emit(DriverEvent::ApprovalResolved {
            approval_id: approval.id.clone(),
            outcome,
        });
        match decision {
            ApprovalDecision::Deny { reason } => {
                ApprovalDecision::deny(redactor.redact(&reason).into_owned())
            }
            other => other,
        }
    }

    async fn decide(&self, request: Arc<ApprovalRequest>) -> (ApprovalOutcome, ApprovalDecision) {
        let Some(handler) = &self.handler else {
            return (
                ApprovalOutcome::Unanswered,
                ApprovalDecision::deny("no approval handler is set: denied"),
            );
        };
        let (sender, receiver) = oneshot::channel();
        let pending = Arc::new(Pending {
            slot: Mutex::new(Slot::Waiting(sender)),
            ended: Mutex::new(false),
            end: Condvar::new(),
        });
        let _close = CloseOnDrop(pending.clone());
        // A plain thread keeps the timeout independent of the async runtime (no time driver
        // needed); it sleeps on a condvar and ends as soon as the request does.
        let timer = pending.clone();
        let timeout = self.timeout;
        let spawned = std::thread::Builder::new()
            .name("approval-timeout".to_owned())
            .spawn(move || timer.run_timer(timeout));
        if spawned.is_err() {
            return (
                ApprovalOutcome::Unanswered,
                ApprovalDecision::deny("the approval timer could not start: denied"),
            );
        }
        handler.on_request(ApprovalTicket { request, pending });
        match receiver.await {
            Ok(Ok(decision)) => {
                let outcome = match decision {
                    ApprovalDecision::Approve => ApprovalOutcome::Approved,
                    ApprovalDecision::Deny { .. } => ApprovalOutcome::Denied,
                    ApprovalDecision::Answer { .. } => ApprovalOutcome::Answered,
                };
                (outcome, decision)
            }
            Ok(Err(Expired)) => (
                ApprovalOutcome::TimedOut,
                ApprovalDecision::deny("no answer before the approval timeout: denied"),
            ),
            Err(_) => (
                ApprovalOutcome::Unanswered,
                ApprovalDecision::deny("the approval request was dropped unanswered: denied"),
            ),
        }
    }
}
