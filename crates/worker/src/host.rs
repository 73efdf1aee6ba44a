//! The host's side: [`WorkerDriver`], a `Driver` that runs a driver configuration in the
//! worker of its credential namespace, and [`Workers`], the pool of worker processes the
//! drivers of one host share (one per namespace).
//!
//! A `WorkerDriver` is a layer (in tower's sense), not a dialect: the worker's driver already
//! translated and judged the turn. It stands for a [`DriverConfig`]: its descriptor, session
//! codec and config fingerprinter are those of the same configuration built in process, so a
//! Thread resumes the same way in process or through a worker, and moving between the two is
//! no semantic change.
//!
//! How a run goes is on [`WorkerDriver`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use driver_process::command::Limits;
use driver_process::peer::{RpcError, RpcPeer};
use driver_process::pool::{PoolError, PoolLimits, ProcessPool, SharedCheckout};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, DriverEvent, EventSink,
    FailureKind, Prewarmed, ProcessLifecycle, ProcessSignature, Request, Response, RunFailure,
    SessionCodec, Unsupported,
};
use runtime_env::{CredentialNamespace, HostEnv, IsolationMode, RuntimeEnv};
use serde_json::{Value, json};
use worker_protocol::{
    CONFIGURE, Configure, DriverConfig, PREWARM, Prewarm, PrewarmAnswer, ReferenceScript, SCRIPT,
    START_TASK, STOP, Script, Scripted, StartTask, Started, WireRequest,
};

mod hot;
mod process;
mod task;

use hot::Conversations;
use process::WorkerProcess;
use task::{Ended, FollowUps, follow};

use crate::build::BuildError;
use crate::launcher::Launcher;

/// How long the host waits for the worker's answer to a request of its own.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The worker processes of one host, one per credential namespace, on the process layer's
/// pool with shared checkouts (the tasks of all the drivers a host wraps share a namespace's
/// worker). Clone the `Arc` to share it.
pub struct Workers {
    program: PathBuf,
    launcher: Launcher,
    pool: ProcessPool<CredentialNamespace, WorkerProcess>,
    limits: Limits,
    signature: ProcessSignature,
    next_driver: AtomicU64,
    pids: Mutex<HashMap<CredentialNamespace, u32>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("program", &self.program)
            .field("launcher", &self.launcher.name())
            .finish_non_exhaustive()
    }
}

impl Workers {
    /// Workers running `program` (the `agent-worker` binary), within `limits` (at most
    /// `max_live` workers, `max_tasks_per_process` tasks each), started directly
    /// ([`Launcher::Direct`]: as the host's own user, no OS boundary).
    pub fn new(program: impl Into<PathBuf>, limits: PoolLimits) -> Arc<Self> {
        Self::with_launcher(program, limits, Launcher::Direct)
    }

    /// Workers running `program` as [`new`](Self::new), each started by `launcher` (a
    /// sandbox, a command prefix): see [`Launcher`] for what each separates.
    pub fn with_launcher(
        program: impl Into<PathBuf>,
        limits: PoolLimits,
        launcher: Launcher,
    ) -> Arc<Self> {
        let program = program.into();
        let signature = ProcessSignature::builder()
            .command(program.to_string_lossy(), Vec::<String>::new())
            .finish();
        Arc::new(Self {
            program,
            launcher,
            pool: ProcessPool::new(limits),
            limits: Limits::default().with_max_line_bytes(crate::serve::MAX_LINE),
            signature,
            next_driver: AtomicU64::new(1),
            pids: Mutex::default(),
        })
    }

    /// The process id of the namespace's most recently started worker (for tests and
    /// diagnostics; it may have ended since): the process the launcher spawned, so under
    /// [`Launcher::Bubblewrap`] the sandbox's `bwrap`, with the `agent-worker` below it, and
    /// under [`Launcher::Prefix`] the prefix's program.
    pub fn worker_pid(&self, namespace: &CredentialNamespace) -> Option<u32> {
        self.pids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .copied()
    }

    /// How many workers run now, idle or serving tasks.
    pub fn live(&self) -> usize {
        let (idle, busy) = self.pool.counts();
        idle + busy
    }

    /// Shuts down every idle worker now, and each busy one when its last task ends.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A driver configuration run in its namespace's worker.
///
/// A run, in this order:
/// 1. a shared checkout of the namespace's worker from the pool, which starts it lazily (in
///    the namespace's `RuntimeEnv`, program = the host's `agent-worker` path) or replaces a
///    dead one;
/// 2. `runtime.configure`, once per worker and driver;
/// 3. `runtime.startTask`, whose attempt counts this driver's starts of the run id;
/// 4. the task's events in order (a gap or a repeat of `seq` fails the run as a protocol
///    error), approval requests relayed to the request's `Approvals` (answered once, the
///    host's timeout denies), and the request's follow-ups (its `Steering`) forwarded as
///    `runtime.steer` when the wrapped configuration steers (refused `Unsupported`
///    otherwise), until the terminal event; after a clean run of a configuration that keeps
///    processes, `runtime.holds` for its conversation (what `holds_conversation` answers);
/// 5. if the worker's output ends first, the run fails with
///    [`FailureKind::Process`](driver_spi::FailureKind::Process) and `retryable`: `true`
///    when no tool call was in flight (every started tool had its result), `false` when one
///    was, since its effect may have happened. The next run starts a new worker.
///
/// Dropping the run future (cancellation) sends `runtime.stop` and closes its open approval
/// requests.
pub struct WorkerDriver {
    workers: Arc<Workers>,
    env: Arc<RuntimeEnv>,
    config: DriverConfig,
    shadow: Arc<dyn Driver>,
    id: u64,
    attempts: Mutex<HashMap<String, u32>>,
    /// The conversations its worker's processes hold (see the `hot` module).
    conversations: Arc<Conversations>,
}

impl std::fmt::Debug for WorkerDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerDriver")
            .field("namespace", self.env.namespace())
            .field("driver", &self.shadow.descriptor().driver_type)
            .finish_non_exhaustive()
    }
}

impl WorkerDriver {
    /// The driver of `config`, run by `workers` in `env`, the runtime environment of the
    /// configuration's namespace (the worker is spawned in it). The configuration is also
    /// built here, not to run, for its descriptor, codec and fingerprinter.
    ///
    /// # Errors
    /// [`BuildError`] when the configuration cannot be built, or names another namespace
    /// than `env`; [`BuildError::SharedLevel`] when `workers` launch in bubblewrap and `env`
    /// is at the shared level; [`BuildError::OverstatedMode`] when `env` declares
    /// [`IsolationMode::Worker`] but `workers` launch directly, in the host's OS user;
    /// [`BuildError::UnlistedVar`] when `env` sets a plain variable the configuration's
    /// `env.vars` does not name.
    pub fn new(
        workers: Arc<Workers>,
        env: Arc<RuntimeEnv>,
        config: DriverConfig,
    ) -> Result<Self, BuildError> {
        if config.env().namespace != env.namespace().as_str() {
            return Err(BuildError::Namespace);
        }
        // Binding the host's HOME into a sandbox would separate nothing.
        if matches!(workers.launcher, Launcher::Bubblewrap(_)) && env.root().is_none() {
            return Err(BuildError::SharedLevel);
        }
        // A declared mode is what summaries and the policy report: it may understate the
        // launcher's boundary, never overstate it.
        if env.mode() == IsolationMode::Worker
            && workers.launcher.isolation_mode() == Some(IsolationMode::Subprocess)
        {
            return Err(BuildError::OverstatedMode);
        }
        // A plain variable the host sets for its runtimes (neither allow-listed from the host,
        // nor set by the environment itself, nor a secret) reaches a CLI through the worker
        // only when the configuration names it too: refuse the silent difference.
        let child = env.child_env();
        let secrets: Vec<&str> = child.secret_names().collect();
        if let Some(name) = child.names().into_iter().find(|name| {
            child.get(name).is_none()
                && !secrets.contains(&name.as_str())
                && !runtime_env::is_allowed_host_var(name)
                && !config.env().vars.contains_key(name)
        }) {
            return Err(BuildError::UnlistedVar { name });
        }
        let shadow = crate::build::build(config.clone(), HostEnv::empty())?;
        let id = workers.next_driver.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            workers,
            env,
            config,
            shadow,
            id,
            attempts: Mutex::default(),
            conversations: Conversations::new(id),
        })
    }

    /// A run id that succeeded is not retried: its count goes.
    fn forget(&self, run_id: &str) {
        self.attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
    }

    fn attempt(&self, run_id: &str) -> u32 {
        let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        let attempt = attempts.entry(run_id.to_owned()).or_insert(0);
        *attempt = attempt.saturating_add(1);
        *attempt
    }
}

/// A checkout that could not be had: the pool's refusal, or the worker's start.
struct StartError(DriverError);

impl From<PoolError> for StartError {
    fn from(e: PoolError) -> Self {
        Self(DriverError::Failed(RunFailure::new(
            FailureKind::Limit,
            format!("worker pool: {e}"),
        )))
    }
}

/// The run failed because the worker's output ended.
fn worker_lost(retryable: bool) -> DriverError {
    DriverError::Failed(
        RunFailure::new(FailureKind::Process, "the worker exited mid-task")
            .with_retryable(retryable),
    )
}

/// The worker broke the protocol.
fn protocol(what: &str) -> DriverError {
    DriverError::Failed(RunFailure::new(
        FailureKind::Protocol,
        format!("worker: {what}"),
    ))
}

fn rpc_failed(step: &str, err: &RpcError) -> DriverError {
    match err {
        RpcError::Closed | RpcError::Write(_) => worker_lost(true),
        RpcError::Timeout { .. } => DriverError::Failed(RunFailure::new(
            FailureKind::Timeout,
            format!("worker: `{step}`: {err}"),
        )),
        RpcError::Remote { code, .. } => DriverError::Failed(RunFailure::new(
            FailureKind::Protocol,
            format!("worker: `{step}` refused with code {code}"),
        )),
    }
}

#[async_trait::async_trait]
impl Driver for WorkerDriver {
    /// The configuration's descriptor, but for `persistent_processes`, which is always
    /// declared: the worker is a process kept between runs, which
    /// [`process_lifecycle`](Driver::process_lifecycle) ends. (No Thread fingerprint covers
    /// it, so a Thread moves between in process and a worker all the same.) `prewarm` and
    /// `steer` are the wrapped configuration's: the wire carries both (`runtime.prewarm`,
    /// `runtime.steer`).
    fn descriptor(&self) -> Descriptor {
        let mut descriptor = self.shadow.descriptor();
        descriptor.capabilities.persistent_processes = true;
        descriptor
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.shadow.validate_config()
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.shadow.session_codec()
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.shadow.config_fingerprinter()
    }

    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        Some(self)
    }

    fn credential_namespace(&self) -> Option<&str> {
        self.shadow.credential_namespace()
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let worker = self.check_out().await?;
        self.configure(&worker).await?;
        let start = StartTask {
            driver: self.id,
            session_id: request.session.state.as_ref().map(|s| s.resume_id.clone()),
            task_id: request.run_id.to_string(),
            attempt: self.attempt(&request.run_id.to_string()),
            request: WireRequest::from_request(&request),
        };
        let answer = worker
            .peer
            .request(START_TASK, start.to_wire(), ANSWER_TIMEOUT)
            .await
            .map_err(|e| rpc_failed(START_TASK, &e))?;
        let Started { handle } = serde_json::from_value(answer)
            .map_err(|_| protocol("a `startTask` answer that does not parse"))?;
        let messages = worker.routes.register(handle);
        let follow_ups = FollowUps {
            receiver: request.steering.take(),
            forward: self.shadow.descriptor().capabilities.steer,
        };
        let mut guard = StopOnDrop {
            peer: Some(Arc::clone(&worker.peer)),
            handle,
        };
        let ended = follow(
            &worker.peer,
            handle,
            start.attempt,
            messages,
            &request,
            &*sink,
            follow_ups,
        )
        .await;
        worker.routes.unregister(handle);
        // A task that ended, or whose worker is gone, needs no stop; one that broke the
        // protocol is stopped as the guard drops.
        if !matches!(ended, Err(Ended::Broken(_))) {
            guard.peer = None;
        }
        match ended {
            Ok(response) => {
                self.forget(&request.run_id.to_string());
                // What the agent asks right after the turn (sticky leases), fresh.
                if self.shadow.descriptor().capabilities.persistent_processes
                    && let Some(checkpoint) = &response.checkpoint
                {
                    let session = &checkpoint.state.resume_id;
                    self.conversations.ask(&worker.peer, session).await;
                }
                Ok(response)
            }
            Err(Ended::Error(e) | Ended::Broken(e)) => Err(e),
            Err(Ended::Lost {
                started,
                open_calls,
            }) => {
                if started {
                    sink.emit(DriverEvent::RunFailed {
                        kind: FailureKind::Process,
                    });
                }
                Err(worker_lost(open_calls == 0))
            }
        }
    }

    /// Pre-warms in the namespace's worker (`runtime.prewarm`), for a wrapped configuration
    /// that declares it; refused as unsupported on the host otherwise, before any worker
    /// starts. A refused pre-warm that started the worker ends it again: a refusal starts
    /// nothing.
    async fn prewarm(&self, request: Request) -> Result<Prewarmed, DriverError> {
        if !self.shadow.descriptor().capabilities.prewarm {
            return Err(Unsupported::Prewarm.into());
        }
        let (worker, started) = self.check_out_noting().await?;
        self.configure(&worker).await?;
        let params = Prewarm {
            driver: self.id,
            session_id: request.session.state.as_ref().map(|s| s.resume_id.clone()),
            request: WireRequest::from_request(&request),
        };
        let answer = worker
            .peer
            .request(PREWARM, params.to_wire(), ANSWER_TIMEOUT)
            .await
            .map_err(|e| rpc_failed(PREWARM, &e))?;
        let result = serde_json::from_value::<PrewarmAnswer>(answer)
            .map_err(|_| protocol("a `prewarm` answer that does not parse"))?
            .into_result();
        if result.is_err() && started {
            drop(worker);
            self.workers.pool.retire(self.env.namespace()).await;
        }
        result
    }
}

#[async_trait::async_trait]
impl ProcessLifecycle for WorkerDriver {
    /// Shuts the namespace's idle worker down (and with it every process it kept for its
    /// drivers); a busy one serves on.
    async fn close_processes(&self) -> Result<(), DriverError> {
        self.workers.pool.retire(self.env.namespace()).await;
        Ok(())
    }

    /// Whether the worker last said one of its processes holds `session_id` (asked after
    /// each run and again whenever the worker reports a change; see the `hot` module).
    fn holds_conversation(&self, session_id: &str) -> bool {
        self.conversations.holds(session_id)
    }

    /// Bumped once the host re-read what the worker holds after the wrapped driver's
    /// processes changed, and when the worker ends.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.conversations.subscribe())
    }
}

impl WorkerDriver {
    /// A share of the namespace's worker, started if there is none (or it died).
    async fn check_out(
        &self,
    ) -> Result<SharedCheckout<CredentialNamespace, WorkerProcess>, DriverError> {
        Ok(self.check_out_noting().await?.0)
    }

    /// [`check_out`](Self::check_out), and whether it started the worker.
    async fn check_out_noting(
        &self,
    ) -> Result<(SharedCheckout<CredentialNamespace, WorkerProcess>, bool), DriverError> {
        let namespace = self.env.namespace().clone();
        let workers = &self.workers;
        let started = std::sync::atomic::AtomicBool::new(false);
        let checkout = workers
            .pool
            .check_out_shared(&namespace, &workers.signature, || async {
                started.store(true, Ordering::Relaxed);
                let process = WorkerProcess::start(
                    &self.env,
                    workers.launcher.command(&workers.program, &self.env),
                    workers.limits,
                )
                .map_err(StartError)?;
                workers
                    .pids
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(namespace.clone(), process.pid());
                Ok::<_, StartError>(process)
            })
            .await
            .map_err(|StartError(e)| e)?;
        Ok((checkout, started.load(Ordering::Relaxed)))
    }

    /// For tests and demos of the reference runtime: queues `script` on this configuration's
    /// driver in the namespace's worker (`runtime.script`), and answers how many tools its
    /// runs performed so far and what its last run materialized (secret values included, as
    /// a `WireSecret`).
    ///
    /// # Errors
    /// As a run's start; `FailureKind::Protocol` when the configuration is not the reference
    /// runtime's.
    pub async fn script(&self, script: Vec<ReferenceScript>) -> Result<Scripted, DriverError> {
        self.send_script(script, false).await
    }

    /// For tests of the reference runtime: releases the runs of this configuration stalled
    /// now ([`ReferenceScript::Stall`]), as its backend's `release_stalled` does in process.
    ///
    /// # Errors
    /// As [`script`](Self::script).
    pub async fn release_stalled(&self) -> Result<(), DriverError> {
        self.send_script(Vec::new(), true).await.map(drop)
    }

    async fn send_script(
        &self,
        script: Vec<ReferenceScript>,
        release: bool,
    ) -> Result<Scripted, DriverError> {
        let worker = self.check_out().await?;
        self.configure(&worker).await?;
        let params = serde_json::to_value(Script {
            driver: self.id,
            script,
            release,
        })
        .unwrap_or(Value::Null);
        let answer = worker
            .peer
            .request(SCRIPT, params, ANSWER_TIMEOUT)
            .await
            .map_err(|e| rpc_failed(SCRIPT, &e))?;
        serde_json::from_value::<Scripted>(answer)
            .map_err(|_| protocol("a `script` answer that does not parse"))
    }

    /// Builds this driver's configuration in the worker, once per worker.
    async fn configure(&self, worker: &WorkerProcess) -> Result<(), DriverError> {
        let mut configured = worker.configured.lock().await;
        if configured.contains(&self.id) {
            return Ok(());
        }
        let configure = Configure {
            driver: self.id,
            config: self.config.clone(),
        };
        match worker
            .peer
            .request(CONFIGURE, configure.to_wire(), ANSWER_TIMEOUT)
            .await
        {
            Ok(_) => {
                configured.insert(self.id);
                worker.watchers.register(&self.conversations);
                Ok(())
            }
            Err(RpcError::Remote { .. }) => Err(DriverError::InvalidConfig(ConfigError::invalid(
                "worker driver",
                "the worker could not build the driver configuration",
            ))),
            Err(e) => Err(rpc_failed(CONFIGURE, &e)),
        }
    }
}

/// Sends `runtime.stop` for a task whose run future was dropped before its end.
struct StopOnDrop {
    peer: Option<Arc<RpcPeer>>,
    handle: u64,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        {
            let handle = self.handle;
            runtime.spawn(async move {
                let _ = peer
                    .request(STOP, json!({"handle": handle}), ANSWER_TIMEOUT)
                    .await;
            });
        }
    }
}
