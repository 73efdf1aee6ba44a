//! Steering a Thread's running turn: [`Thread::steer`] sends a follow-up message into the run
//! this agent has in flight for the Thread, and waits, within a bound, until the driver
//! delivered it to the runtime.
//!
//! Each driver run of a Thread whose driver declares
//! [`steer`](driver_spi::Capabilities::steer) gets a fresh [`steering`](driver_spi::steering)
//! pair: the receiver goes into the run's request, the [`Steerer`] into this agent's registry
//! under the Thread's key, from just before the driver runs until it returns (a run that is
//! refused before, `Busy` on its lease say, never replaces the running one's). Only this
//! agent's own run is reachable: another host's run of the same Thread is not.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use driver_spi::{Request, SteerError, Steerer, Steering};
use run_service::RunId;

use crate::{Agent, Thread};

/// How long [`Thread::steer`] callers commonly wait for an acknowledgement: a runtime that
/// has not taken a follow-up by then is busy elsewhere (a Rust peer of Codex's app-server
/// caps it at the same).
pub const DEFAULT_STEER_TIMEOUT: Duration = Duration::from_secs(15);

/// The steerers of the runs in flight, by Thread key.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    runs: Mutex<HashMap<String, (RunId, Steerer)>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (RunId, Steerer)>> {
        // Entries are inserted and removed whole: a poisoned map is still consistent.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keeps a run's steerer registered while its driver runs; dropped (the driver returned, or
/// its future was dropped), it ends the run's steering, so a follow-up still waiting is
/// refused as the turn ended.
pub(crate) struct Registered {
    agent: Agent,
    key: String,
    run_id: RunId,
    steering: Steering,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut runs = self.agent.inner.steering.lock();
        if runs
            .get(&self.key)
            .is_some_and(|(run, _)| *run == self.run_id)
        {
            runs.remove(&self.key);
        }
        drop(runs);
        self.steering.close();
    }
}

/// Lets the host steer `request`'s run of `thread`, when the driver declares it: the request
/// with its receiver, and the registration that ends with the driver's run.
pub(crate) fn attach(thread: &Thread, request: Request) -> (Request, Option<Registered>) {
    let agent = &thread.agent;
    if !agent.inner.driver.descriptor().capabilities.steer {
        return (request, None);
    }
    let (steerer, receiver) = driver_spi::steering();
    let run_id = request.run_id.clone();
    agent
        .inner
        .steering
        .lock()
        .insert(thread.key.clone(), (run_id.clone(), steerer));
    let request = request.with_steering(receiver);
    let registered = Registered {
        agent: agent.clone(),
        key: thread.key.clone(),
        run_id,
        steering: request.steering.clone(),
    };
    (request, Some(registered))
}

impl Thread {
    /// Sends `text` into this Thread's running turn, as a follow-up the model sees inside the
    /// same turn, and waits at most `timeout` (commonly [`DEFAULT_STEER_TIMEOUT`]) until the
    /// driver delivered it to the runtime: Codex answered its `turn/steer`, Claude Code was
    /// written another user message (see `docs/drivers.md`, "Steering"). The turn's events
    /// then hold a [`ThreadEventKind::FollowUp`](crate::ThreadEventKind::FollowUp), its text
    /// redacted like every event's; the runtime gets the text as it is, like a prompt. The
    /// follow-up is part of the turn: the run finalizes once, after the runtime answered it
    /// too.
    ///
    /// Only a run this agent has in flight for the Thread can be steered (its
    /// [`run`](Self::run) or [`stream`](Self::stream), from just before its driver starts).
    ///
    /// # Errors
    /// - [`SteerError::Unsupported`]: the driver (in its mode) cannot steer a running turn
    ///   (ACP agents, one process per turn, CodeBuddy);
    /// - [`SteerError::Empty`]: an empty text;
    /// - [`SteerError::NoTurn`]: this agent has no run of this Thread in flight;
    /// - [`SteerError::TurnEnded`]: the turn ended before the follow-up was delivered;
    /// - [`SteerError::Refused`]: the runtime refused it;
    /// - [`SteerError::TimedOut`]: no acknowledgement within `timeout` (it may still reach the
    ///   runtime, when it was being written as the time ran out).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use agent::{Agent, SteerError, ThreadEventKind};
    /// use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
    /// use thread_store::memory::MemoryStore;
    ///
    /// let backend = ReferenceBackend::new();
    /// backend.push_behavior(Behavior::Stall); // the turn runs until released
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .build()?;
    /// let thread = agent.thread("support/7");
    /// let second = Duration::from_secs(1);
    /// assert_eq!(thread.steer("hello?", second).await, Err(SteerError::NoTurn));
    ///
    /// let stream = thread.stream("fix the bug")?;
    /// backend.wait_for_stalled(1).await;
    /// thread.steer("only in src/", Duration::from_secs(5)).await?;
    /// backend.release_stalled();
    /// let result = stream.result().await?;
    /// assert!(result.output.ends_with("[follow-up: only in src/]"));
    /// assert!(result.events.iter().any(|e| e.kind == ThreadEventKind::FollowUp { text: "only in src/".into() }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn steer(
        &self,
        text: impl Into<String>,
        timeout: Duration,
    ) -> Result<(), SteerError> {
        if !self.agent.inner.driver.descriptor().capabilities.steer {
            return Err(SteerError::Unsupported);
        }
        let text = text.into();
        if text.trim().is_empty() {
            return Err(SteerError::Empty);
        }
        let steerer = self
            .agent
            .inner
            .steering
            .lock()
            .get(&self.key)
            .map(|(_, steerer)| steerer.clone())
            .ok_or(SteerError::NoTurn)?;
        tokio::time::timeout(timeout, steerer.steer(text))
            .await
            .unwrap_or(Err(SteerError::TimedOut { after: timeout }))
    }
}
