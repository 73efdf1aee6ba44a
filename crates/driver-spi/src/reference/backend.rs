//! The reference driver's simulated provider backend: sessions, recorded requests,
//! simulated processes, scripted behaviours and the stall signal, shared through a cloneable
//! [`ReferenceBackend`] handle.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use run_service::RunId;
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::watch;

use super::Behavior;
use super::sessions::{MemorySessions, ReferenceSession, SessionTable, SessionTableError};
use crate::{ProcessAction, ProcessSignature, Request};

/// A handle on the simulated provider backend of one or more
/// [`ReferenceDriver`](super::ReferenceDriver)s: its session table, request log, simulated
/// processes and behaviour script.
///
/// Cloning the handle shares the backend. Two drivers built with
/// [`ReferenceDriver::with_backend`](super::ReferenceDriver::with_backend) on clones of one
/// handle see the same sessions, as two agents on two hosts see one provider account. The
/// sessions live in memory unless the backend is built on another [`SessionTable`]
/// ([`with_sessions`](Self::with_sessions)); everything else (requests, processes, the
/// behaviour script) is always this process's own.
#[derive(Clone, Default)]
pub struct ReferenceBackend {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// Number of runs currently stalled.
    stalled: watch::Sender<usize>,
    /// Bumped by [`ReferenceBackend::release_stalled`].
    release: watch::Sender<u64>,
}

impl Default for Inner {
    fn default() -> Self {
        Self::new(Box::new(MemorySessions::new()))
    }
}

impl Inner {
    fn new(sessions: Box<dyn SessionTable>) -> Self {
        Self {
            state: Mutex::new(State::new(sessions)),
            stalled: watch::Sender::new(0),
            release: watch::Sender::new(0),
        }
    }
}

pub(super) struct State {
    next_driver: u64,
    next_process: u64,
    pub(super) sessions: Box<dyn SessionTable>,
    requests: Vec<RecordedRequest>,
    behaviors: VecDeque<Behavior>,
    processes: BTreeMap<(u64, String), SimProcess>,
    stats: ProcessStats,
    deliveries: Vec<Delivery>,
    last_materialization: Option<SecretString>,
    performed: Vec<String>,
}

impl State {
    fn new(sessions: Box<dyn SessionTable>) -> Self {
        Self {
            next_driver: 0,
            next_process: 0,
            sessions,
            requests: Vec::new(),
            behaviors: VecDeque::new(),
            processes: BTreeMap::new(),
            stats: ProcessStats::default(),
            deliveries: Vec::new(),
            last_materialization: None,
            performed: Vec::new(),
        }
    }
}

struct SimProcess {
    id: u64,
    signature: ProcessSignature,
    materialization: SecretString,
}

/// Counts of simulated runtime processes.
///
/// One-shot processes (stateless runs, or a driver without persistent processes) count as
/// spawned and closed in the same run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessStats {
    /// Processes started, replacements included.
    pub spawned: u64,
    /// Prompts sent to a live process whose signature matched.
    pub reused: u64,
    /// Live processes closed and respawned because their signature no longer matched.
    pub replaced: u64,
    /// Processes closed (replacements, one-shots and `close_processes`).
    pub closed: u64,
    /// Persistent processes alive now.
    pub live: u64,
}

/// One prompt delivery to a simulated process.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery {
    /// The run whose prompt was sent.
    pub run_id: RunId,
    /// The simulated process that received it.
    pub process_id: u64,
}

/// A request as the reference driver received it.
///
/// Secret values stay [`SecretString`]s: `Debug` redacts them, and the only way to read one
/// is the explicit test accessor [`expose_secret_env`](Self::expose_secret_env).
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    driver_instance: u64,
    request: Request,
}

impl RecordedRequest {
    /// The request.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The [`instance_id`](super::ReferenceDriver::instance_id) of the driver that received it.
    pub fn driver_instance(&self) -> u64 {
        self.driver_instance
    }

    /// Test accessor: the value of the runtime secret env binding `name`, exposed.
    pub fn expose_secret_env(&self, name: &str) -> Option<String> {
        self.request
            .runtime
            .secret(name)
            .map(|b| b.value().expose_secret().to_owned())
    }

    /// The names of the runtime secret env bindings.
    pub fn secret_env_names(&self) -> Vec<&str> {
        self.request
            .runtime
            .secret_env
            .iter()
            .map(|b| b.name())
            .collect()
    }
}

impl ReferenceBackend {
    /// A fresh backend: no sessions (kept in memory), no requests, no processes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh backend whose sessions live in `sessions`: no requests, no processes.
    pub fn with_sessions(sessions: impl SessionTable + 'static) -> Self {
        Self {
            inner: Arc::new(Inner::new(Box::new(sessions))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent; a panic elsewhere does not
        // invalidate it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.lock())
    }

    pub(super) fn register_driver(&self) -> u64 {
        let mut state = self.lock();
        state.next_driver += 1;
        state.next_driver
    }

    pub(super) fn record(&self, driver_instance: u64, request: &Request) {
        self.lock().requests.push(RecordedRequest {
            driver_instance,
            request: request.clone(),
        });
    }

    pub(super) fn next_behavior(&self) -> Behavior {
        self.lock().behaviors.pop_front().unwrap_or(Behavior::Reply)
    }

    // ---- Script ----

    /// Queues a behaviour for a future run; runs take queued behaviours in order, and
    /// [`Behavior::Reply`] when the queue is empty.
    pub fn push_behavior(&self, behavior: Behavior) {
        self.lock().behaviors.push_back(behavior);
    }

    /// How many queued behaviours no run has taken yet.
    pub fn pending_behaviors(&self) -> usize {
        self.lock().behaviors.len()
    }

    // ---- Requests ----

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// The last request received.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.lock().requests.last().cloned()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// The configuration the last run materialized for its runtime process, as JSON, secret
    /// env values included (expose it with [`ExposeSecret`]). It is what a CLI driver would
    /// write into the child's config files and environment; with persistent processes it is
    /// the configuration of the process that received the prompt.
    pub fn last_materialization(&self) -> Option<SecretString> {
        self.lock().last_materialization.clone()
    }

    // ---- Sessions ----

    /// The ids of every session the backend knows, sorted.
    ///
    /// # Errors
    /// [`SessionTableError`] when the session table cannot list them.
    pub fn session_ids(&self) -> Result<Vec<String>, SessionTableError> {
        self.lock().sessions.ids()
    }

    /// The session `resume_id`, if the backend knows it.
    ///
    /// # Errors
    /// [`SessionTableError`] when the session table cannot read it.
    pub fn session(&self, resume_id: &str) -> Result<Option<ReferenceSession>, SessionTableError> {
        self.lock().sessions.get(resume_id)
    }

    /// How many turns a session has had.
    ///
    /// # Errors
    /// [`SessionTableError`] when the session table cannot read it.
    pub fn session_turns(&self, resume_id: &str) -> Result<Option<u64>, SessionTableError> {
        Ok(self.session(resume_id)?.map(|s| s.turns))
    }

    /// Marks a session expired: resuming it is rejected with
    /// [`ResumeRejectReason::Expired`](crate::ResumeRejectReason::Expired). Returns whether
    /// the session exists.
    ///
    /// # Errors
    /// [`SessionTableError`] when the session table cannot read or store it.
    pub fn expire_session(&self, resume_id: &str) -> Result<bool, SessionTableError> {
        let mut state = self.lock();
        let Some(mut session) = state.sessions.get(resume_id)? else {
            return Ok(false);
        };
        session.expired = true;
        state.sessions.update(resume_id, &session)?;
        Ok(true)
    }

    /// Forgets a session: resuming it is rejected with
    /// [`ResumeRejectReason::UnknownSession`](crate::ResumeRejectReason::UnknownSession).
    /// Returns whether it existed.
    ///
    /// # Errors
    /// [`SessionTableError`] when the session table cannot remove it.
    pub fn forget_session(&self, resume_id: &str) -> Result<bool, SessionTableError> {
        self.lock().sessions.remove(resume_id)
    }

    // ---- Processes ----

    /// Counts of simulated processes.
    pub fn process_stats(&self) -> ProcessStats {
        self.lock().stats
    }

    /// The tools that ran under [`Behavior::UseTool`](super::Behavior::UseTool) (allowed by the
    /// policy or approved by the host), in order: the reference runtime's side effects.
    pub fn performed(&self) -> Vec<String> {
        self.lock().performed.clone()
    }

    pub(super) fn perform(&self, tool: &str) {
        self.lock().performed.push(tool.to_owned());
    }

    /// Every prompt delivery, in order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.lock().deliveries.clone()
    }

    /// How many times the prompt of `run_id` was delivered (the contract says at most once).
    pub fn deliveries_of(&self, run_id: &RunId) -> usize {
        self.lock()
            .deliveries
            .iter()
            .filter(|d| &d.run_id == run_id)
            .count()
    }

    /// Simulates sending a prompt: to the owner's persistent process for `session` (spawned,
    /// reused or replaced by signature), or to a one-shot process when `session` is `None`.
    pub(super) fn acquire_process(
        &self,
        owner: u64,
        session: Option<&str>,
        signature: ProcessSignature,
        materialization: SecretString,
        reuse_stale: bool,
        run_id: &RunId,
    ) {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.next_process += 1;
        let fresh = SimProcess {
            id: state.next_process,
            signature,
            materialization,
        };
        let (process_id, materialization) = match session {
            None => {
                state.stats.spawned += 1;
                state.stats.closed += 1;
                (fresh.id, fresh.materialization)
            }
            Some(session) => match state.processes.entry((owner, session.to_owned())) {
                Entry::Vacant(vacant) => {
                    state.stats.spawned += 1;
                    state.stats.live += 1;
                    let process = vacant.insert(fresh);
                    (process.id, process.materialization.clone())
                }
                Entry::Occupied(mut live) => {
                    let action = if reuse_stale {
                        ProcessAction::Reuse
                    } else {
                        ProcessSignature::decide(Some(&live.get().signature), &fresh.signature)
                    };
                    if action == ProcessAction::Reuse {
                        state.stats.reused += 1;
                    } else {
                        state.stats.replaced += 1;
                        state.stats.closed += 1;
                        state.stats.spawned += 1;
                        live.insert(fresh);
                    }
                    (live.get().id, live.get().materialization.clone())
                }
            },
        };
        state.deliveries.push(Delivery {
            run_id: run_id.clone(),
            process_id,
        });
        state.last_materialization = Some(materialization);
    }

    /// Closes every simulated process `owner` has; returns how many.
    pub(super) fn close_processes_of(&self, owner: u64) -> u64 {
        let mut state = self.lock();
        let before = state.processes.len();
        state.processes.retain(|(o, _), _| *o != owner);
        let closed = (before - state.processes.len()) as u64;
        state.stats.closed += closed;
        state.stats.live -= closed;
        closed
    }

    // ---- Stalls ----

    /// How many runs are stalled right now (a [`Behavior::Stall`] run waiting for
    /// [`release_stalled`](Self::release_stalled) or to be dropped).
    pub fn stalled_runs(&self) -> usize {
        *self.inner.stalled.borrow()
    }

    /// Waits until at least `count` runs are stalled.
    pub async fn wait_for_stalled(&self, count: usize) {
        let mut rx = self.inner.stalled.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|stalled| *stalled >= count).await;
    }

    /// Lets every currently stalled run continue as [`Behavior::Reply`].
    pub fn release_stalled(&self) {
        self.inner
            .release
            .send_modify(|generation| *generation += 1);
    }

    /// Stalls until released; dropping the returned future (cancellation) un-counts it.
    pub(super) async fn stall(&self) {
        let mut release = self.inner.release.subscribe();
        let generation = *release.borrow_and_update();
        self.inner.stalled.send_modify(|n| *n += 1);
        let _guard = StallGuard(self);
        let _ = release.wait_for(|g| *g > generation).await;
    }
}

struct StallGuard<'a>(&'a ReferenceBackend);

impl Drop for StallGuard<'_> {
    fn drop(&mut self) {
        self.0
            .inner
            .stalled
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl fmt::Debug for ReferenceBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("ReferenceBackend")
            .field("sessions", &state.sessions)
            .field("requests", &state.requests.len())
            .field("pending_behaviors", &state.behaviors.len())
            .field("processes", &state.stats)
            .finish()
    }
}
