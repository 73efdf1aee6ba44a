//! The worker's side: [`serve`] answers the worker protocol on a pair of streams (the
//! binary's stdin and stdout), running each task on its configured driver.
//!
//! One loop reads what the host sends (the peer's server role answers what it cannot take
//! with the fixed JSON-RPC errors and reads on); each task runs as a Tokio task of its own,
//! so tasks run concurrently. A task's events go through one ordered channel to one writer,
//! which numbers them from 0 and stops after the terminal event: whoever takes the task out
//! of the table (its run returning, or `runtime.stop`) sends that one terminal event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use driver_process::peer::{Incoming, JsonRpc, RpcPeer};
use driver_spi::reference::ReferenceBackend;
use driver_spi::{ApprovalTicket, Approvals, Driver, DriverEvent, EventSink, Steerer};
use runtime_env::HostEnv;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use worker_protocol::{
    ABANDON_STEER, APPROVE, Approve, ApproveResult, CONFIGURE, Configure, EVENT, EventParams,
    HOLDS, PREWARM, ProtocolError, SCRIPT, SEND_TOOL_DENIED, SEND_TOOL_RESULT, START_TASK, STEER,
    STOP, Script, Scripted, StartTask, Started, Stop, Stopped, TaskError, TaskEvent, ToolDenied,
    ToolResult, WORKER_METHODS, WireDecision, WireSecret,
};

/// The longest line the worker reads or the host should write: 4 MiB, room for a request
/// with a large prompt and output schema.
pub const MAX_LINE: usize = 4 << 20;

/// How much longer than the host's approval timeout the worker's own timer runs: the host's
/// timeout decides (its answer `timed_out` leaves the denial to this timer, so the events
/// read `timed_out` as in process), and this timer also covers a host that stopped answering.
pub const APPROVAL_GRACE: Duration = Duration::from_millis(200);

mod hot;

/// A running task: how to stop it, where its terminal event goes, and how to steer it.
struct Task {
    id: String,
    attempt: u32,
    events: mpsc::UnboundedSender<Out>,
    run: tokio::task::AbortHandle,
    /// The host end of the steering its request carries (`runtime.steer`).
    steerer: Steerer,
    /// The follow-ups the host may still abandon (`runtime.abandonSteer`), by number.
    steers: HashMap<u64, tokio::sync::oneshot::Sender<()>>,
}

/// A configured driver, and its backend when it is the reference runtime's.
struct Configured {
    driver: Arc<dyn Driver>,
    reference: Option<ReferenceBackend>,
}

/// What the loop and the tasks share.
struct Worker {
    peer: RpcPeer,
    host: HostEnv,
    drivers: Mutex<HashMap<u64, Configured>>,
    tasks: Mutex<HashMap<u64, Task>>,
    next_handle: AtomicU64,
}

impl Worker {
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Task>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn drivers(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Configured>> {
        self.drivers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves the worker protocol: reads requests on `input`, writes answers and events to
/// `output`, lines at most `max_line` bytes, until `input` ends; then stops every task and
/// closes every configured driver's processes (its resident CLIs), waiting for each to end.
/// Drivers are built in environments whose host variables come from `host` (the binary
/// passes its own, which the host's runtime environment already reduced to its allow-list).
pub async fn serve(
    input: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    output: impl tokio::io::AsyncWrite + Send + Unpin + 'static,
    max_line: usize,
    host: HostEnv,
) {
    let (peer, mut inbox) = RpcPeer::server(&JsonRpc, WORKER_METHODS, input, output, max_line);
    let worker = Arc::new(Worker {
        peer,
        host,
        drivers: Mutex::default(),
        tasks: Mutex::default(),
        next_handle: AtomicU64::new(1),
    });
    while let Some(incoming) = inbox.recv().await {
        // Notifications of the worker's methods carry no id to answer: they are ignored.
        let Incoming::Request { id, method, params } = incoming else {
            continue;
        };
        let answer = match method.as_str() {
            CONFIGURE => configure(&worker, params),
            PREWARM => match hot::prewarm(&worker, params) {
                Ok(prewarm) => {
                    prewarm(id);
                    continue;
                }
                Err(e) => Err(e),
            },
            STEER => match hot::steer(&worker, id.clone(), params) {
                Ok(()) => continue,
                Err(e) => Err(e),
            },
            ABANDON_STEER => hot::abandon(&worker, params),
            HOLDS => hot::holds(&worker, params),
            START_TASK => match start_task(&worker, params) {
                // The task answers itself, before its first event.
                Ok(start) => {
                    start(id);
                    continue;
                }
                Err(e) => Err(e),
            },
            STOP => stop(&worker, params),
            SCRIPT => script(&worker, params),
            SEND_TOOL_RESULT => tool_outcome::<ToolResult>(&worker, params, |p| p.handle),
            SEND_TOOL_DENIED => tool_outcome::<ToolDenied>(&worker, params, |p| p.handle),
            _ => Err(ProtocolError::InvalidParams),
        };
        let _ = match answer {
            Ok(result) => worker.peer.respond(id, result).await,
            Err(e) => worker.peer.respond_error(id, e.code(), e.message()).await,
        };
    }
    let tasks: Vec<Task> = worker.tasks().drain().map(|(_, task)| task).collect();
    for task in tasks {
        task.run.abort();
    }
    // End what the drivers kept (resident CLIs) as closing them does in process, each waited
    // for: dropped with the worker instead, a CLI would get SIGTERM only, since the escalation
    // to SIGKILL runs in this process and would end with it, and one that ignores SIGTERM and
    // stdin's end would outlive its worker.
    let drivers: Vec<Arc<dyn Driver>> = worker
        .drivers()
        .drain()
        .map(|(_, configured)| configured.driver)
        .collect();
    for driver in drivers {
        if let Some(lifecycle) = driver.process_lifecycle()
            && let Err(e) = lifecycle.close_processes().await
        {
            tracing::warn!(error = %e, "a driver's processes could not be closed");
        }
    }
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, ProtocolError> {
    serde_json::from_value(params).map_err(|_| ProtocolError::InvalidParams)
}

fn configure(worker: &Arc<Worker>, raw: Value) -> Result<Value, ProtocolError> {
    let Configure { driver, config } = params(raw)?;
    let (built, reference) =
        crate::build::build_parts(config, worker.host.clone()).map_err(|e| {
            tracing::warn!(error = %e, "a driver configuration could not be built");
            ProtocolError::ConfigRejected
        })?;
    hot::watch_changes(worker, driver, &*built);
    let configured = Configured {
        driver: built,
        reference,
    };
    worker.drivers().insert(driver, configured);
    Ok(json!({}))
}

/// `runtime.script`: queues behaviours on a configured reference driver; answers how many
/// tools it performed and what its last run materialized.
fn script(worker: &Worker, raw: Value) -> Result<Value, ProtocolError> {
    let Script {
        driver,
        script,
        release,
    } = params(raw)?;
    let drivers = worker.drivers();
    let configured = drivers.get(&driver).ok_or(ProtocolError::NotConfigured)?;
    let backend = configured
        .reference
        .as_ref()
        .ok_or(ProtocolError::NotScriptable)?;
    for step in script {
        backend.push_behavior(crate::build::behavior(step));
    }
    if release {
        backend.release_stalled();
    }
    let scripted = Scripted {
        performed: u64::try_from(backend.performed().len()).unwrap_or(u64::MAX),
        materialization: backend.last_materialization().map(WireSecret::new),
    };
    Ok(scripted.to_wire())
}

fn stop(worker: &Worker, raw: Value) -> Result<Value, ProtocolError> {
    let Stop { handle } = params(raw)?;
    let stopped = match worker.tasks().remove(&handle) {
        Some(task) => {
            task.run.abort();
            let _ = task.events.send(Out::Event(Box::new(TaskEvent::Stopped)));
            true
        }
        None => false,
    };
    Ok(serde_json::to_value(Stopped { stopped }).unwrap_or(Value::Null))
}

/// A tool outcome: valid params naming a live task are refused with
/// [`ProtocolError::ToolNotAwaited`], since no driver of this version hands a tool to the host.
fn tool_outcome<T: DeserializeOwned>(
    worker: &Worker,
    raw: Value,
    handle: impl FnOnce(&T) -> u64,
) -> Result<Value, ProtocolError> {
    let outcome: T = params(raw)?;
    if worker.tasks().contains_key(&handle(&outcome)) {
        Err(ProtocolError::ToolNotAwaited)
    } else {
        Err(ProtocolError::UnknownHandle)
    }
}

/// Validates a `runtime.startTask` and registers the task; the returned closure, given the
/// request's id, starts it (its answer first, then its run).
fn start_task(
    worker: &Arc<Worker>,
    raw: Value,
) -> Result<impl FnOnce(Value) + use<>, ProtocolError> {
    let start: StartTask = params(raw)?;
    let driver = worker
        .drivers()
        .get(&start.driver)
        .map(|c| Arc::clone(&c.driver))
        .ok_or(ProtocolError::NotConfigured)?;
    let handle = worker.next_handle.fetch_add(1, Ordering::Relaxed);
    let (events, queue) = mpsc::unbounded_channel();
    let wait = start
        .request
        .approval_timeout()
        .saturating_add(APPROVAL_GRACE);
    let relay = Relay {
        queue: events.clone(),
        handle,
        attempt: start.attempt,
    };
    let approvals = if start.request.body.approvals {
        Approvals::new(Arc::new(relay)).with_timeout(
            start
                .request
                .approval_timeout()
                .saturating_add(APPROVAL_GRACE),
        )
    } else {
        Approvals::none()
    };
    let (steerer, follow_ups) = driver_spi::steering();
    let request = start
        .request
        .into_request(approvals)?
        .with_steering(follow_ups);
    let mut tasks = worker.tasks();
    if tasks.values().any(|t| t.id == start.task_id) {
        return Err(ProtocolError::DuplicateTask);
    }
    let (go, ready) = tokio::sync::oneshot::channel::<()>();
    let sink = Arc::new(Forward(events.clone()));
    let run_worker = Arc::clone(worker);
    let run = tokio::spawn(async move {
        if ready.await.is_err() {
            return;
        }
        let result = driver.run(request, sink).await;
        if let Some(task) = run_worker.tasks().remove(&handle) {
            let event = match result {
                Ok(response) => TaskEvent::Completed { response },
                Err(error) => TaskEvent::Failed {
                    error: TaskError::from_driver_error(&error),
                },
            };
            let _ = task.events.send(Out::Event(Box::new(event)));
        }
    });
    tasks.insert(
        handle,
        Task {
            id: start.task_id,
            attempt: start.attempt,
            events,
            run: run.abort_handle(),
            steerer,
            steers: HashMap::new(),
        },
    );
    drop(tasks);
    let worker = Arc::clone(worker);
    Ok(move |id: Value| {
        tokio::spawn(async move {
            let started = serde_json::to_value(Started { handle }).unwrap_or(Value::Null);
            let _ = worker.peer.respond(id, started).await;
            let _ = go.send(());
            write_events(&worker, handle, queue, wait).await;
        });
    })
}

/// What a task sends the host, in the order it happened.
enum Out {
    /// An event, numbered by the writer (boxed: a terminal event carries a whole response).
    Event(Box<TaskEvent>),
    /// An approval request, asked after every event emitted before it.
    Ask(Box<Approve>, ApprovalTicket),
    /// The answer to a request of the host's (`runtime.steer`), written after every event
    /// emitted before it.
    Answer(Value, Value),
}

/// Sends a task's events in order, numbered from 0, until its terminal event; asks its
/// approval requests in the same order, each waiting at most `wait` for its answer.
async fn write_events(
    worker: &Worker,
    handle: u64,
    mut queue: mpsc::UnboundedReceiver<Out>,
    wait: Duration,
) {
    let mut seq = 0;
    while let Some(out) = queue.recv().await {
        let event = match out {
            Out::Event(event) => *event,
            Out::Ask(ask, ticket) => {
                let params = serde_json::to_value(&*ask).unwrap_or(Value::Null);
                match worker.peer.send_request(APPROVE, params).await {
                    Ok(answer) => {
                        tokio::spawn(async move {
                            let answer = answer.wait(wait).await.ok();
                            decide(&ask, ticket, answer);
                        });
                    }
                    Err(_) => {
                        let _ = ticket.deny("the host could not be asked: denied");
                    }
                }
                continue;
            }
            Out::Answer(id, answer) => {
                let _ = worker.peer.respond(id, answer).await;
                continue;
            }
        };
        let terminal = event.is_terminal();
        let params = EventParams { handle, seq, event };
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        if worker.peer.notify(EVENT, params).await.is_err() {
            return;
        }
        seq += 1;
        if terminal {
            // A follow-up's answer queued behind the terminal event (its refusal as the turn
            // ended) still goes out; later ones find the queue closed and answer themselves.
            queue.close();
            while let Ok(out) = queue.try_recv() {
                if let Out::Answer(id, answer) = out {
                    let _ = worker.peer.respond(id, answer).await;
                }
            }
            return;
        }
    }
}

/// Decides `ticket` by the host's `answer` to `ask`: an answer for another request or attempt,
/// or none, denies; the host's `timed_out` leaves it to the worker's own timer.
fn decide(ask: &Approve, ticket: ApprovalTicket, answer: Option<Value>) {
    let answer = answer.and_then(|v| serde_json::from_value::<ApproveResult>(v).ok());
    let _ = match answer {
        // The host's timeout passed: the worker's own timer denies in a moment, so the events
        // read `timed_out`.
        Some(a) if a.decision == WireDecision::TimedOut => Ok(()),
        Some(a) if a.approval_id == ask.approval_id && a.attempt == ask.attempt => {
            ticket.decide(a.decision.into())
        }
        Some(_) => ticket.deny("the host answered another approval request: denied"),
        None => ticket.deny("the host gave no valid answer: denied"),
    };
}

/// A task's event sink: the driver's events, in order, to the task's writer.
struct Forward(mpsc::UnboundedSender<Out>);

impl EventSink for Forward {
    fn emit(&self, event: DriverEvent) {
        let _ = self
            .0
            .send(Out::Event(Box::new(TaskEvent::Driver { event })));
    }
}

/// A task's approval handler: each ticket is asked of the host (`runtime.approve`) through
/// the task's writer, after the events before it, and decided by the answer ([`decide`]).
struct Relay {
    queue: mpsc::UnboundedSender<Out>,
    handle: u64,
    attempt: u32,
}

impl driver_spi::ApprovalHandler for Relay {
    fn on_request(&self, ticket: ApprovalTicket) {
        let request = ticket.request();
        let ask = Approve {
            handle: self.handle,
            approval_id: request.id.clone(),
            attempt: self.attempt,
            call_id: request.call_id.clone(),
            action: request.action,
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            answerable: request.answerable,
        };
        if let Err(mpsc::error::SendError(Out::Ask(_, ticket))) =
            self.queue.send(Out::Ask(Box::new(ask), ticket))
        {
            let _ = ticket.deny("the task ended: denied");
        }
    }
}
