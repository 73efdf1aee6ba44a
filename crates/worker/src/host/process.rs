//! The host's side of one worker process: [`WorkerProcess`], what the pool keeps per
//! namespace, and the dispatcher that routes what the worker sends to the task it is for.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use driver_process::command::{CliCommand, Limits};
use driver_process::peer::{Inbox, Incoming, JsonRpc, RpcPeer};
use driver_process::pool::Resident;
use driver_process::process::{ChildHandle, CliProcess};
use driver_spi::DriverError;
use runtime_env::RuntimeEnv;
use serde_json::Value;
use tokio::sync::mpsc;
use worker_protocol::{
    APPROVE, Approve, EVENT, EventParams, PROCESSES_CHANGED, ProcessesChanged, codes,
};

use super::hot::Watchers;

use crate::serve::MAX_LINE;

/// What the worker sent for one task.
#[derive(Debug)]
pub(crate) enum Message {
    /// A `runtime.event`.
    Event(EventParams),
    /// A `runtime.approve`, with the id to answer.
    Approve { id: Value, approve: Approve },
}

/// The most messages kept for tasks whose handle is not registered yet (sent between the
/// worker's `startTask` answer and the host's registration).
const EARLY_MAX: usize = 4096;

/// Where each task's messages go.
#[derive(Default)]
pub(crate) struct Routes {
    state: Mutex<RouteState>,
}

#[derive(Default)]
struct RouteState {
    tasks: HashMap<u64, mpsc::UnboundedSender<Message>>,
    early: HashMap<u64, Vec<Message>>,
    early_count: usize,
    closed: bool,
}

impl Routes {
    fn state(&self) -> std::sync::MutexGuard<'_, RouteState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The task `handle`'s messages, those that came before included. Once the worker's
    /// output ended the channel is closed at once.
    pub(crate) fn register(&self, handle: u64) -> mpsc::UnboundedReceiver<Message> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state();
        let early = state.early.remove(&handle).unwrap_or_default();
        state.early_count = state.early_count.saturating_sub(early.len());
        for message in early {
            let _ = tx.send(message);
        }
        if !state.closed {
            state.tasks.insert(handle, tx);
        }
        rx
    }

    /// The task ended: its later messages are dropped.
    pub(crate) fn unregister(&self, handle: u64) {
        self.state().tasks.remove(&handle);
    }

    fn deliver(&self, handle: u64, message: Message) {
        let mut state = self.state();
        if let Some(tx) = state.tasks.get(&handle) {
            let _ = tx.send(message);
        } else if state.early_count < EARLY_MAX {
            state.early_count += 1;
            state.early.entry(handle).or_default().push(message);
        }
    }

    /// The worker's output ended: every task's channel closes.
    fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        state.tasks.clear();
    }
}

/// One worker process, as the pool keeps it for its namespace.
pub(crate) struct WorkerProcess {
    child: ChildHandle,
    pub(crate) peer: Arc<RpcPeer>,
    pub(crate) routes: Arc<Routes>,
    /// The drivers configured here whose held conversations the host keeps.
    pub(crate) watchers: Arc<Watchers>,
    dispatcher: tokio::task::JoinHandle<()>,
    /// The host driver numbers configured in this worker; held while one is configured.
    pub(crate) configured: tokio::sync::Mutex<HashSet<u64>>,
    limits: Limits,
}

impl std::fmt::Debug for WorkerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerProcess")
            .field("pid", &self.child.pid())
            .finish_non_exhaustive()
    }
}

impl WorkerProcess {
    /// Spawns `program` with `args` (the launcher's command) in `env` (the namespace's
    /// environment: nothing of the host's beyond its allow-list reaches it) and starts
    /// routing what it sends.
    pub(crate) fn start(
        env: &RuntimeEnv,
        (program, args): (std::path::PathBuf, Vec<std::ffi::OsString>),
        limits: Limits,
    ) -> Result<Self, DriverError> {
        let command = CliCommand::new(program, env.redactor())
            .args(args)
            .keep_stdin();
        let (child, stdin, stdout) = CliProcess::spawn_resident(env, command, limits)?;
        let (peer, inbox) = RpcPeer::client(&JsonRpc, stdout, stdin, MAX_LINE);
        let peer = Arc::new(peer);
        let routes = Arc::new(Routes::default());
        let watchers = Arc::new(Watchers::default());
        let dispatcher = tokio::spawn(dispatch(
            inbox,
            Arc::downgrade(&peer),
            Arc::clone(&routes),
            Arc::clone(&watchers),
        ));
        tracing::debug!(pid = child.pid(), "worker started");
        Ok(Self {
            child,
            peer,
            routes,
            watchers,
            dispatcher,
            configured: tokio::sync::Mutex::default(),
            limits,
        })
    }

    /// The worker's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.pid()
    }
}

#[async_trait]
impl Resident for WorkerProcess {
    fn is_alive(&self) -> bool {
        !self.child.has_exited() && !self.peer.is_closed()
    }

    async fn shut_down(self) {
        let Self {
            child,
            peer,
            dispatcher,
            limits,
            watchers,
            ..
        } = self;
        dispatcher.abort();
        // Its drivers' processes end with it.
        watchers.lost();
        // The worker ends when its stdin closes, once it has ended its drivers' processes.
        drop(peer);
        let finished = child
            .wait_or_terminate(Some(worker_end_grace(&limits)))
            .await;
        tracing::debug!(status = %finished.status, "worker ended");
    }
}

/// How long a worker may take to end once its stdin closed: it closes its drivers' resident
/// CLIs first, as closing them does in process (stdin's end, then SIGTERM after a kill grace,
/// then SIGKILL after another), so the host waits out that ladder for one CLI, plus a grace,
/// before it ends the worker itself. (A worker holding several CLIs that ignore both stdin's
/// end and SIGTERM can outlast it; the bubblewrap launcher's PID namespace ends them all.)
fn worker_end_grace(limits: &Limits) -> std::time::Duration {
    limits.kill_grace.saturating_mul(3)
}

/// Routes the worker's messages until its output ends; answers a request of another method
/// with "Method not found".
async fn dispatch(
    mut inbox: Inbox,
    peer: Weak<RpcPeer>,
    routes: Arc<Routes>,
    watchers: Arc<Watchers>,
) {
    while let Some(incoming) = inbox.recv().await {
        match incoming {
            Incoming::Notification { method, params } if method == EVENT => {
                match serde_json::from_value::<EventParams>(params) {
                    Ok(event) => routes.deliver(event.handle, Message::Event(event)),
                    Err(_) => tracing::debug!("a worker event that does not parse was dropped"),
                }
            }
            Incoming::Notification { method, params } if method == PROCESSES_CHANGED => {
                if let Ok(changed) = serde_json::from_value::<ProcessesChanged>(params) {
                    watchers.changed(changed.driver, &peer);
                }
            }
            Incoming::Request { id, method, params } if method == APPROVE => {
                match serde_json::from_value::<Approve>(params) {
                    Ok(approve) => routes.deliver(approve.handle, Message::Approve { id, approve }),
                    Err(_) => {
                        answer_error(&peer, id, codes::INVALID_PARAMS, "Invalid params").await
                    }
                }
            }
            Incoming::Request { id, .. } => {
                answer_error(&peer, id, codes::METHOD_NOT_FOUND, "Method not found").await;
            }
            Incoming::Notification { .. } => {}
        }
    }
    routes.close();
    watchers.lost();
}

async fn answer_error(peer: &Weak<RpcPeer>, id: Value, code: i64, message: &str) {
    if let Some(peer) = peer.upgrade() {
        let _ = peer.respond_error(id, code, message).await;
    }
}
