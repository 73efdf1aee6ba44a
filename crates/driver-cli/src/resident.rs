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
//! 2. the pool's decision for the conversation: reuse its idle process when the signature is
//!    equal, else retire it (recycle, or replace a dead one) *before* a new one starts; a
//!    fork first retires its parent's idle process, so no other process holds the parent;
//! 3. a new process: spawned like a per-turn one (same environment, group and limits) with
//!    stdin kept open, then the protocol's handshake;
//! 4. the session opened unless the process has it loaded (a start, a cold resume or a
//!    fork); a peer's refusal is judged by the protocol (`UnknownSession` becomes
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

use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::Duration;

use driver_spi::{
    ConfigError, DriverError, EventSink, ExitStatus, FailureKind, ProcessSignature, Redactor,
    Request, Response, ResumeRejectReason, RunFailure,
};
use runtime_env::RuntimeEnv;
use serde_json::Value;
use tokio::time::Instant;

use crate::dialect::{Dialect, Invocation, Translator as _, Turn};
use crate::driver::options::CommonOptions as _;
use crate::driver::turn::{Gate, Stop, fail_early, judge, required_servers};
use crate::driver::turn_redactor;
use driver_process::peer::{Inbox, Incoming, RpcError, RpcPeer};
use driver_process::pool::{ConversationKey, Endings, ProcessPool, Resident};
use driver_process::process::ChildHandle;

mod approval;
mod open;
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
use driver_process::files::RunFiles;
use driver_process::process::CliProcess;
use driver_process::process::Finished;
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

/// The exact launch configuration of `command` for `turn`, as a private signature.
fn signature(
    binary: &Path,
    invocation: &Invocation,
    run_file: Option<&[u8]>,
    turn: &Turn<'_>,
    default_model: Option<&str>,
) -> ProcessSignature {
    let request = turn.request;
    let cwd = request
        .workspace
        .as_deref()
        .unwrap_or(turn.env.cwd().to_string_lossy().as_ref())
        .to_owned();
    let mut builder = ProcessSignature::builder()
        .command(binary.to_string_lossy(), invocation.args.iter().cloned())
        .cwd(cwd)
        .secret_env(&request.runtime.secret_env)
        .secret_env(&invocation.secrets)
        .services(&request.runtime.services)
        .mcp(&request.mcp)
        .model(request.model.as_deref().or(default_model))
        .component("namespace", turn.env.namespace().as_str())
        // What the process may do: a protocol may apply it only when it opens a session
        // (Codex's `untrusted` thread), which a reused process with the session loaded skips.
        .component("permissions", request.permissions.to_string());
    for (name, value) in &invocation.vars {
        builder = builder.env(name.clone(), value.clone());
    }
    if let Some(contents) = run_file {
        builder = builder.component("run_file", String::from_utf8_lossy(contents));
    }
    builder.finish()
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

/// The file name a per-run config file has in the signature's argv: its real path differs
/// per process, its contents are a component of their own.
const RUN_FILE_PLACEHOLDER: &str = "<run-dir>";

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
    let cli = dialect.cli();
    let limits = cli.limits;
    let run_file = match config {
        ConfigFiles::None => None,
        ConfigFiles::RunFile { name, contents } => Some((name, contents)),
        ConfigFiles::Namespace(_) => {
            // A resident process cannot hold the namespace's turn lock between turns.
            return Err(ConfigError::invalid(
                "process_mode",
                "this CLI reads its config from namespace files, which resident mode cannot keep",
            )
            .into());
        }
    };
    let placeholder = run_file
        .as_ref()
        .map(|(name, _)| PathBuf::from(RUN_FILE_PLACEHOLDER).join(name));
    let shown = Turn {
        run_file: placeholder.as_deref(),
        ..*turn
    };
    let invocation = dialect.invocation(&shown)?;
    let contents = run_file.as_ref().map(|(_, c)| c.as_slice());
    let signature = signature(
        &cli.binary,
        &invocation,
        contents,
        turn,
        cli.model.as_deref(),
    );
    let key = |conversation: &str| ConversationKey::new(turn.env.namespace().clone(), conversation);
    if let SessionPlan::Fork(parent) = turn.plan {
        pool.retire(&key(parent)).await;
    }
    let conversation = match turn.plan {
        SessionPlan::Resume(id) => Some(key(id)),
        _ => None,
    };
    let mut checkout = pool
        .check_out(conversation.as_ref(), &signature)
        .await
        .map_err(|e| DriverError::Failed(RunFailure::new(FailureKind::Limit, e.to_string())))?;
    // A new process: its own config file (removed when it ends), the session named at launch.
    let start = || async {
        let files = match &run_file {
            None => None,
            Some((name, contents)) => {
                let files = RunFiles::create(
                    turn.env,
                    &dialect.runtime().descriptor,
                    request.run_id.as_str(),
                )?;
                let path = files.write(name, contents)?;
                Some((files.keep(), path))
            }
        };
        let launched = Turn {
            run_file: files.as_ref().map(|(_, path)| path.as_path()),
            ..*turn
        };
        let mut invocation = dialect.invocation(&launched)?;
        invocation.args.extend(protocol.launch_session(turn));
        // The launch's secrets: kept by the process for every turn it serves.
        let redactor = turn_redactor(turn, &invocation);
        let mut process = ResidentProcess::start(
            turn.env,
            command(invocation, redactor),
            limits,
            pool.limits().max_idle_output,
            protocol,
        )
        .await?;
        process.files = files.map(|(files, _)| files);
        if protocol.open(turn, None).is_none() {
            // Named at launch: the plan's id, or the one the events will report.
            process.loaded = turn.plan.expected_id().map(str::to_owned);
        }
        Ok::<_, DriverError>(process)
    };
    let (mut process, mut reused) = match checkout.process.take() {
        Some(process) => {
            // Nothing the process wrote while idle reaches this turn.
            process.peer.begin_turn();
            (process, true)
        }
        None => (start().await?, false),
    };
    let required = required_servers(request);
    loop {
        let mut flight = InFlight {
            process: Some(process),
            interrupt: None,
            endings: pool.endings(),
            pending: Pending::default(),
        };
        let session = match open(&mut flight, protocol, turn).await {
            Ok(session) => session,
            // A reused process that died unseen: nothing was delivered, so a fresh one may
            // serve the turn.
            Err(Opened::Gone(_)) if reused => {
                flight.finish().close().await;
                pool.note_replaced();
                (process, reused) = (start().await?, false);
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
            .and_then(|s| crate::driver::turn::session_stop(turn.plan, s))
        {
            let finished = flight.finish().close().await;
            return Err(fail_early(stop, turn.plan, false, &finished, sink));
        }
        flight.process().loaded.clone_from(&session);

        // One turn, one redactor: the turn's secrets and those the process was launched with
        // (for an earlier turn, maybe), for its events, its approvals and its stderr.
        let mut redactor = turn_redactor(turn, &invocation);
        redactor.merge(flight.process().child.redaction());
        flight.process().child.set_redaction(redactor.clone());

        // The prompt, sent once; then the turn's notifications.
        let prompt = protocol.prompt(turn, session.as_deref());
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
            Gate::new(turn.plan, &required),
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
                (process, reused) = (start().await?, false);
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
                && turn.plan.is_resuming()
                && dialect.unknown_session(&translator, &finished)
            {
                return Err(ResumeRejectReason::UnknownSession.into());
            }
            return Err(fail_early(stop, turn.plan, started, &finished, sink));
        }
        done.carried = translator.carried();
        let finished = Finished::new(ExitStatus::Success, done.child.stderr_tail());
        let session = session.or_else(|| translator.session_id().map(str::to_owned));
        let result = judge(dialect, turn, translator, &finished, sink);
        match (&session, &result) {
            (Some(session), Ok(_)) if turn.plan != SessionPlan::Stateless => {
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
