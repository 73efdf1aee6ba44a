//! Resident mode ([`ProcessMode::Resident`](crate::ProcessMode::Resident)): a dialect's
//! [`ResidentProtocol`] (what to send, as values), the process the pool keeps between turns,
//! and the one event loop of a resident turn.
//!
//! A resident turn, in this order:
//! 1. the launch invocation and its exact [`ProcessSignature`] (argv, cwd, plain variables,
//!    secret values keyed-hashed, MCP servers, model, namespace, and the permission policy,
//!    which a protocol may apply only when it opens a session: Codex opens a thread
//!    `untrusted` when commands ask, so a process whose thread is loaded under another policy
//!    must not serve the turn);
//! 2. the pool's decision for the conversation (or, for a new, stateless or forked session,
//!    the place a pre-warm reserved under the request's ticket for this plan,
//!    [`prewarm`]): reuse its idle process when the signature is equal, else retire it
//!    (recycle, or replace a dead one) *before* a new one starts; a fork first retires its
//!    parent's idle process, so no other process holds the parent;
//! 3. a new process: spawned like a per-turn one (same environment, group and limits) with
//!    stdin kept open, then the protocol's handshake;
//! 4. the session opened unless the process has it loaded (a start, a cold resume or a
//!    fork) or was pre-warmed (its session is open; a new session is the one it opened); a peer's refusal is judged by the protocol (`UnknownSession` becomes
//!    `ResumeRejected` before anything is emitted); what the process sends while the session
//!    opens (a replayed history) is dropped, never emitted as the turn's;
//! 5. the turn's one redactor: the turn's secrets ([`turn_redactor`]) and those the process
//!    was launched with, for the translator, the approval requests and the stderr tail;
//!    then the prompt, sent once: nothing after this point sends it again, whatever happens;
//! 6. notifications through the same translator bookkeeping and stop rule as one process
//!    per turn, server requests answered by the protocol, until the translator says the turn
//!    ended; idle and total timeouts as for a per-turn process; meanwhile the host's
//!    follow-ups, once the prompt was answered, delivered with the protocol's
//!    [`steer`](ResidentProtocol::steer) call and acknowledged, or refused typed;
//! 7. the same judgement; the process goes back to the pool under the session's id. A turn
//!    that stopped early, a bare (stateless) run and a dropped (cancelled) turn end their
//!    process: a cancelled one is first asked to interrupt the turn, within the kill grace.
//!
//! Between turns a process is quiet: what it writes is dropped, never read as the next
//! turn's, and past [`PoolLimits::max_idle_output`](driver_process::pool::PoolLimits::max_idle_output) it is
//! ended. Within a turn, a protocol that names turns ([`ResidentProtocol::turn_of`]) has only
//! its own turn's messages read: those of another turn are dropped.

use std::sync::PoisonError;
use std::time::Duration;

use driver_spi::{
    DriverError, EventSink, ExitStatus, FailureKind, Redactor, Request, Response,
    ResumeRejectReason, RunFailure,
};
use runtime_env::RuntimeEnv;
use serde_json::Value;
use tokio::time::Instant;

use crate::dialect::{Dialect, Invocation, Translator as _, Turn};
use crate::driver::turn::{Gate, Stop, fail_early, judge, required_servers};
use crate::driver::turn_redactor;
use driver_process::peer::{Inbox, Incoming, RpcError, RpcPeer};
use driver_process::pool::{ConversationKey, Endings, ProcessPool, Resident};
use driver_process::process::ChildHandle;

mod approval;
mod launch;
mod open;
pub(crate) mod prewarm;
mod protocol;
mod read;
mod steer;

use crate::dialect::ConfigFiles;
use crate::dialect::events::Tracked;
use crate::dialect::session::SessionPlan;
use driver_process::command::CliCommand;
use driver_process::command::Limits;
use driver_process::error::ProcessError;
use driver_process::files::RunDir;
use driver_process::process::CliProcess;
use driver_process::process::Finished;
use launch::Launch;
use open::{Opened, open};
pub use protocol::{Call, Rejection, Replay, ResidentProtocol, TurnNotes};
use read::{Read, read_turn};

/// A resident process as the pool keeps it: its handle, its protocol peer, the channel of
/// what it sent unprompted, and the session it has loaded.
pub(crate) struct ResidentProcess {
    child: ChildHandle,
    peer: RpcPeer,
    incoming: Inbox,
    loaded: Option<String>,
    limits: Limits,
    /// What the last turn's translator carried for the next ([`Translator::carried`]).
    carried: Option<Value>,
    /// The process's per-run config file, removed when the process is dropped.
    files: Option<RunDir>,
    /// Pre-warmed: its session is open (or named at launch) and no prompt was sent yet.
    prewarmed: bool,
}

impl std::fmt::Debug for ResidentProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentProcess")
            .field("pid", &self.child.pid())
            .field("loaded", &self.loaded.is_some())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Resident for ResidentProcess {
    /// Alive until it exits or closes its output (seen first, before the exit is reaped).
    fn is_alive(&self) -> bool {
        !self.child.has_exited() && !self.peer.is_closed()
    }

    fn flooded(&self) -> bool {
        self.peer.flooded()
    }

    /// Between turns: what the process writes from now on is dropped (past the budget, it is
    /// ended), and what it wrote that the turn did not read is gone.
    fn quiet(&mut self) {
        self.peer.end_turn();
        self.incoming.clear();
    }

    async fn shut_down(self) {
        let _ = self.close().await;
    }
}

impl ResidentProcess {
    /// Spawns `command` with stdin kept open and runs the protocol's handshake. Writing more
    /// than `idle_output` bytes between turns ends it.
    async fn start(
        env: &RuntimeEnv,
        command: CliCommand,
        limits: Limits,
        idle_output: usize,
        protocol: &dyn ResidentProtocol,
    ) -> Result<Self, DriverError> {
        let (child, stdin, stdout) = CliProcess::spawn_resident(env, command.keep_stdin(), limits)?;
        let (peer, incoming) =
            RpcPeer::client(protocol.framing(), stdout, stdin, limits.max_line_bytes);
        let ender = child.ender();
        peer.on_flood(idle_output, move || ender.terminate());
        tracing::debug!(pid = child.pid(), "resident process started");
        let process = Self {
            child,
            peer,
            incoming,
            loaded: None,
            limits,
            carried: None,
            files: None,
            prewarmed: false,
        };
        for call in protocol.handshake() {
            if let Err(err) = process.send(&call).await {
                let failure = rpc_failure(protocol, call.method, err);
                let finished = process.close().await;
                return Err(DriverError::Failed(with_stderr(failure, &finished)));
            }
        }
        Ok(process)
    }

    /// Sends `call`; a request's answer, `Null` for a notification.
    async fn send(&self, call: &Call) -> Result<Value, RpcError> {
        if call.notification {
            self.peer.notify(call.method, call.wire_params()).await?;
            return Ok(Value::Null);
        }
        self.peer
            .request(call.method, call.wire_params(), self.limits.idle_timeout)
            .await
    }

    /// Closes stdin (the protocols here exit on it), waits up to the kill grace, then ends
    /// the group.
    async fn close(self) -> Finished {
        let Self {
            child,
            peer,
            limits,
            ..
        } = self;
        drop(peer);
        let finished = child.wait_or_terminate(Some(limits.kill_grace)).await;
        tracing::debug!(status = %finished.status, "resident process ended");
        finished
    }
}

/// The failure of a request the peer did not answer with a result.
fn rpc_failure(protocol: &dyn ResidentProtocol, method: &str, err: RpcError) -> RunFailure {
    let kind = match &err {
        RpcError::Timeout { .. } => FailureKind::Timeout,
        RpcError::Closed | RpcError::Write(_) => FailureKind::Process,
        RpcError::Remote { code, message } => match protocol.rejection(method, *code, &message.0) {
            Rejection::Failed(kind) => kind,
            Rejection::UnknownSession => FailureKind::Protocol,
        },
    };
    RunFailure::new(kind, format!("resident process: `{method}`: {err}"))
}

fn with_stderr(mut failure: RunFailure, finished: &Finished) -> RunFailure {
    if !finished.stderr_tail.trim().is_empty() {
        failure.message.push_str("\nstderr:\n");
        failure.message.push_str(&finished.stderr_tail);
    }
    failure
}

/// A turn in flight on a resident process. Dropped before [`finish`](Self::finish) (the run
/// future was dropped: a cancellation), it asks the process to interrupt the turn and ends
/// it, in a task, within the kill grace; without a runtime, the process group just ends.
struct InFlight {
    process: Option<ResidentProcess>,
    interrupt: Option<Call>,
    endings: Endings,
    /// The process's requests the turn is deciding (an approval asked of the host), by id,
    /// with the answer each gets when the turn is cancelled first
    /// ([`ResidentProtocol::cancelled_answer`]).
    pending: Pending,
}

/// Requests of a process awaiting the host, with their answers on cancellation.
pub(crate) type Pending = std::sync::Arc<std::sync::Mutex<Vec<(Value, Value)>>>;

impl InFlight {
    fn process(&mut self) -> &mut ResidentProcess {
        // Set at construction and taken only by `finish`, which consumes `self`.
        self.process
            .as_mut()
            .unwrap_or_else(|| unreachable!("an in-flight turn always holds its process"))
    }

    fn finish(mut self) -> ResidentProcess {
        self.process
            .take()
            .unwrap_or_else(|| unreachable!("an in-flight turn always holds its process"))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(process) = self.process.take() else {
            return;
        };
        let interrupt = self.interrupt.take();
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::debug!("resident turn cancelled: interrupting, then ending the process");
        let ending = runtime.spawn(async move {
            let grace = process.limits.kill_grace;
            let _ = tokio::time::timeout(grace, async {
                if let Some(call) = interrupt {
                    let _ = process.send(&call).await;
                }
                // After the interrupt, as ACP orders it: what the process still waits for.
                for (id, answer) in pending {
                    let _ = process.peer.respond(id, answer).await;
                }
            })
            .await;
            process.close().await;
        });
        let mut endings = self.endings.lock().unwrap_or_else(PoisonError::into_inner);
        endings.retain(|e| !e.is_finished());
        endings.push(ending);
    }
}

/// One resident turn of `dialect` (steps 1–7 of the module docs).
pub(crate) async fn run<D: Dialect>(
    dialect: &D,
    protocol: &dyn ResidentProtocol,
    pool: &ProcessPool<ConversationKey, ResidentProcess>,
    turn: &Turn<'_>,
    config: ConfigFiles,
    command: impl Fn(Invocation, Redactor) -> CliCommand,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let request = turn.request;
    let launch = Launch::new(dialect, protocol, pool, turn, config, command)?;
    let invocation = &launch.invocation;
    let key = |conversation: &str| launch.key(conversation);
    if let SessionPlan::Fork(parent) = turn.plan {
        pool.retire(&key(parent)).await;
    }
    let place = launch.place(request.prewarmed.as_ref());
    let mut checkout = pool
        .check_out(place.as_ref(), &launch.signature)
        .await
        .map_err(|e| DriverError::Failed(RunFailure::new(FailureKind::Limit, e.to_string())))?;
    let (mut process, mut reused) = match checkout.process.take() {
        Some(process) => {
            // Nothing the process wrote while idle reaches this turn.
            process.peer.begin_turn();
            (process, true)
        }
        None => (launch.start().await?, false),
    };
    // A pre-warmed process has its session open and was sent nothing: a new session is the
    // one it opened (or named at launch), and it is not opened again.
    let mut warm = std::mem::take(&mut process.prewarmed);
    let warm_id = process.loaded.clone().filter(|_| warm);
    let mut current = *turn;
    if let (SessionPlan::Start(_), Some(id)) = (turn.plan, warm_id.as_deref()) {
        current.plan = SessionPlan::Start(Some(id));
    }
    let required = required_servers(request);
    loop {
        let mut flight = InFlight {
            process: Some(process),
            interrupt: None,
            endings: pool.endings(),
            pending: Pending::default(),
        };
        let opened = if std::mem::take(&mut warm) {
            Ok(flight.process().loaded.clone())
        } else {
            open(&mut flight, protocol, &current).await
        };
        let session = match opened {
            Ok(session) => session,
            // A reused process that died unseen: nothing was delivered, so a fresh one may
            // serve the turn.
            Err(Opened::Gone(_)) if reused => {
                flight.finish().close().await;
                pool.note_replaced();
                (process, reused) = (launch.start().await?, false);
                current = *turn;
                continue;
            }
            Err(Opened::Gone(failure)) => {
                let finished = flight.finish().close().await;
                return Err(DriverError::Failed(with_stderr(failure, &finished)));
            }
            Err(Opened::Refused(err)) => {
                let finished = flight.finish().close().await;
                return Err(match err {
                    DriverError::Failed(failure) => {
                        DriverError::Failed(with_stderr(failure, &finished))
                    }
                    other => other,
                });
            }
        };
        if let Some(stop) = session
            .as_deref()
            .and_then(|s| crate::driver::turn::session_stop(current.plan, s))
        {
            let finished = flight.finish().close().await;
            return Err(fail_early(stop, current.plan, false, &finished, sink));
        }
        flight.process().loaded.clone_from(&session);

        // One turn, one redactor: the turn's secrets and those the process was launched with
        // (for an earlier turn, maybe), for its events, its approvals and its stderr.
        let mut redactor = turn_redactor(&current, invocation);
        redactor.merge(flight.process().child.redaction());
        flight.process().child.set_redaction(redactor.clone());

        // The prompt, sent once; then the turn's notifications.
        let prompt = protocol.prompt(&current, session.as_deref());
        let mut translator = Tracked::new(dialect.translator(request, redactor.clone()));
        translator.continue_from(flight.process().carried.as_ref());
        if let Some(session) = session.as_deref() {
            translator.opened_session(session);
        }
        let mut started = false;
        let read = read_turn(
            &mut flight,
            request,
            &redactor,
            protocol,
            &prompt,
            session.as_deref(),
            &mut translator,
            Gate::new(current.plan, &required),
            &mut started,
            sink,
        )
        .await;
        let mut done = flight.finish();
        let stop = match read {
            Read::Ended => None,
            Read::Undelivered(_) if reused => {
                done.close().await;
                pool.note_replaced();
                (process, reused) = (launch.start().await?, false);
                current = *turn;
                continue;
            }
            Read::Undelivered(failure) => Some(Stop::Refused(failure)),
            Read::Stopped(stop) => Some(stop),
        };
        if let Some(stop) = stop {
            let finished = done.close().await;
            // A CLI that names the session at launch refuses an unknown one by exiting.
            if matches!(stop, Stop::Ended)
                && !started
                && current.plan.is_resuming()
                && dialect.unknown_session(&translator, &finished)
            {
                return Err(ResumeRejectReason::UnknownSession.into());
            }
            return Err(fail_early(stop, current.plan, started, &finished, sink));
        }
        done.carried = translator.carried();
        let finished = Finished::new(ExitStatus::Success, done.child.stderr_tail());
        let session = session.or_else(|| translator.session_id().map(str::to_owned));
        let result = judge(dialect, &current, translator, &finished, sink);
        match (&session, &result) {
            (Some(session), Ok(_)) if current.plan != SessionPlan::Stateless => {
                done.loaded = Some(session.clone());
                // The pool quiets it.
                checkout.check_in(key(session), done).await;
            }
            _ => {
                done.close().await;
            }
        }
        return result;
    }
}
