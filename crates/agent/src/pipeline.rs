//! The one pipeline every Thread run goes through.
//!
//! 1. Validate the thread contract.
//! 2. Attach every provider in order (unwinding in reverse on failure) and validate all
//!    attachments.
//! 3. Build the concrete and session views.
//! 4. Take the Thread's lease, resolve the stored record and decide: resume, start fresh, fork
//!    or refuse, before the driver runs.
//! 5. Run the driver with the concrete request, renewing the lease.
//! 6. Persist only a clean success with a valid checkpoint.
//! 7. Tear down within a budget.

use std::sync::Arc;
use std::time::Duration;

use compat_fingerprint::{Breakdown, ComponentChange, Fingerprint};
use driver_spi::{
    DriverError, FailureKind, Request, Response, ResumeRejectReason, RuntimePayload, SessionCodec,
    SessionContext, SessionParams,
};
use run_service::{ExposeSecret, RunAttachment, RunId, RunServiceProvider, RunViews, build_views};
use runtime_env::Redactor;
use thread_store::{
    Compatibility, FinalizeRequest, Lease, Query, RecordStatus, StoreError, ThreadRecord,
    ThreadStore, Timestamp,
};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::compat::{SCHEME_VERSION, profile_payload, thread_breakdown, thread_fingerprint};
use crate::events::CoreSink;
use crate::explain::{Explanation, Verdict};
use crate::thread::{Mode, Thread};
use crate::{
    Incompatibility, NotPersisted, RunResult, SessionOutcome, ThreadError, ThreadEvent,
    ThreadEventKind,
};

/// Stores accept names of up to 512 bytes; the lease target adds the `thread:` prefix.
const MAX_KEY_LEN: usize = 512 - LEASE_PREFIX.len();
/// The lease target of a Thread is this prefix and its key.
pub const THREAD_LEASE_PREFIX: &str = "thread:";
const LEASE_PREFIX: &str = THREAD_LEASE_PREFIX;

/// Thread keys are host-chosen names: non-empty, bounded, no control characters.
pub(crate) fn check_key(key: &str) -> Result<(), ThreadError> {
    if key.trim().is_empty() {
        return Err(ThreadError::InvalidKey { reason: "empty" });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(ThreadError::InvalidKey {
            reason: "longer than 512 bytes",
        });
    }
    if key.chars().any(char::is_control) {
        return Err(ThreadError::InvalidKey {
            reason: "contains a control character",
        });
    }
    Ok(())
}

/// Resolves when the run is cancelled; pends forever if nobody can cancel it any more.
async fn cancelled(mut cancel: watch::Receiver<bool>) {
    loop {
        if *cancel.borrow_and_update() {
            return;
        }
        if cancel.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

pub(crate) async fn execute(
    thread: &Thread,
    prompt: String,
    run_id: RunId,
    events: mpsc::UnboundedSender<ThreadEvent>,
    cancel: watch::Receiver<bool>,
) -> Result<RunResult, ThreadError> {
    let span = tracing::info_span!("thread_run", run_id = %run_id, thread = %thread.key, resume_only = thread.mode == Mode::ResumeOnly);
    async move {
        let outcome = execute_inner(thread, prompt, &run_id, events, cancel).await;
        match &outcome {
            Ok(result) => tracing::info!(session = ?result.session, persisted = result.record_id.is_some(), "run finished"),
            Err(error) => tracing::info!(error = %error, "run failed"),
        }
        outcome
    }
    .instrument(span)
    .await
}

async fn execute_inner(
    thread: &Thread,
    prompt: String,
    run_id: &RunId,
    events: mpsc::UnboundedSender<ThreadEvent>,
    cancel: watch::Receiver<bool>,
) -> Result<RunResult, ThreadError> {
    let inner = &thread.agent.inner;
    // 1. The thread contract.
    let store = check_contract(thread)?;
    // 2. Attach providers in order; unwind in reverse if one fails.
    let (attached, mut attachments) = attach_providers(thread, run_id, &cancel).await?;

    let secrets: Vec<secrecy::SecretString> = attachments.iter().flat_map(secret_values).collect();
    let redactor = Redactor::with_secrets(secrets.clone());
    let sink = Arc::new(CoreSink::new(
        run_id.clone(),
        redactor.clone(),
        secrets,
        events,
    ));
    let cx = RunCx {
        thread,
        store,
        run_id,
        sink: Arc::clone(&sink),
        redactor,
        cancel,
    };
    let result = attached_run(&cx, prompt, &mut attachments).await;
    // The terminal event follows the outcome, persistence included: a run whose checkpoint
    // could not be stored does not report `RunFinished`.
    sink.finish(match &result {
        Ok(_) => ThreadEventKind::RunFinished,
        Err(ThreadError::Driver { kind, .. }) => ThreadEventKind::RunFailed { kind: *kind },
        Err(_) => ThreadEventKind::RunFailed {
            kind: FailureKind::Other,
        },
    });
    // 7. Teardown, bounded.
    detach_all(&attached, run_id, inner.teardown_budget).await;
    result
}

/// Step 1: what a Thread needs of the agent and its driver; the store it runs on.
fn check_contract(thread: &Thread) -> Result<Arc<dyn ThreadStore>, ThreadError> {
    let inner = &thread.agent.inner;
    let store = inner.store.clone().ok_or(ThreadError::StoreRequired)?;
    check_key(&thread.key)?;
    if let Some(parent) = &thread.fork_from {
        check_key(parent)?;
    }
    let driver = &inner.driver_info;
    if !driver.resume || driver.codec.is_none() {
        return Err(ThreadError::Unsupported {
            capability: "session resume with a session codec",
        });
    }
    if thread.fork_from.is_some() && !driver.fork {
        return Err(ThreadError::Unsupported { capability: "fork" });
    }
    Ok(store)
}

/// Step 2: attaches every provider in order for a run of `thread`; on a failure, detaches
/// those attached in reverse and reports the failure redacted.
async fn attach_providers(
    thread: &Thread,
    run_id: &RunId,
    cancel: &watch::Receiver<bool>,
) -> Result<(Vec<Arc<dyn RunServiceProvider>>, Vec<RunAttachment>), ThreadError> {
    let inner = &thread.agent.inner;
    let mut attached: Vec<Arc<dyn RunServiceProvider>> = Vec::new();
    let mut attachments: Vec<RunAttachment> = Vec::new();
    for (index, provider) in inner.providers.iter().enumerate() {
        if *cancel.borrow() {
            detach_all(&attached, run_id, inner.teardown_budget).await;
            return Err(ThreadError::Cancelled);
        }
        match provider.attach_thread_run(run_id, &thread.key).await {
            Ok(attachment) => {
                attached.push(Arc::clone(provider));
                attachments.push(attachment);
            }
            Err(error) => {
                detach_all(&attached, run_id, inner.teardown_budget).await;
                let secrets = attachments.iter().flat_map(secret_values);
                let message = Redactor::with_secrets(secrets)
                    .redact(error.message())
                    .into_owned();
                tracing::debug!(provider = index, "provider failed to attach");
                return Err(ThreadError::Provider { index, message });
            }
        }
    }
    Ok((attached, attachments))
}

/// Steps 2b and 3: validates every attachment and the endpoint policy, builds both views and
/// the run's compatibility identity.
fn identity(thread: &Thread, attachments: &[RunAttachment]) -> Result<Identity, ThreadError> {
    let inner = &thread.agent.inner;
    let views = build_views(attachments, &inner.host_mcp)?;
    if let Some(endpoint) = inner.endpoints.first_refused(attachments, &inner.host_mcp) {
        return Err(ThreadError::EndpointRefused { endpoint });
    }
    let breakdown = thread_breakdown(&inner.statics, &views);
    let fingerprint = thread_fingerprint(&breakdown);
    Ok(Identity {
        views,
        breakdown,
        fingerprint,
    })
}

/// What a run of `thread` would decide now, through the same steps 1 to 4 (and the decoding
/// of the stored state), without the lease, the driver or any write. Providers are attached
/// as for a run, under `run_id`, and detached before it returns.
pub(crate) async fn explain(
    thread: &Thread,
    run_id: &RunId,
    cancel: watch::Receiver<bool>,
) -> Result<Explanation, ThreadError> {
    let inner = &thread.agent.inner;
    let store = check_contract(thread)?;
    let (attached, attachments) = attach_providers(thread, run_id, &cancel).await?;
    let decided = async {
        let Identity {
            breakdown,
            fingerprint,
            ..
        } = identity(thread, &attachments)?;
        let plan = decide(thread, &store, &breakdown, fingerprint).await?;
        let verdict = match plan {
            Plan::Start { archive, changes } => Verdict::Start {
                replaces: archive.map(|r| r.id),
                changes: changes.unwrap_or_default(),
            },
            Plan::Resume { record } => {
                decode_state(thread, &record.state)?;
                Verdict::Resume { record: record.id }
            }
            Plan::Fork { parent } => {
                decode_state(thread, &parent.state)?;
                Verdict::Fork { parent: parent.id }
            }
        };
        Ok(Explanation {
            verdict,
            fingerprint,
        })
    }
    .await;
    detach_all(&attached, run_id, inner.teardown_budget).await;
    decided
}

fn secret_values(attachment: &RunAttachment) -> Vec<secrecy::SecretString> {
    attachment
        .services
        .iter()
        .flat_map(|s| s.secret_env.iter())
        .map(|b| secrecy::SecretString::from(b.value().expose_secret().to_owned()))
        .collect()
}

async fn detach_all(attached: &[Arc<dyn RunServiceProvider>], run_id: &RunId, budget: Duration) {
    let detach = async {
        for provider in attached.iter().rev() {
            if provider.detach_run(run_id).await.is_err() {
                tracing::debug!("provider failed to detach");
            }
        }
    };
    if tokio::time::timeout(budget, detach).await.is_err() {
        tracing::warn!(
            budget_ms = budget.as_millis() as u64,
            "provider teardown exceeded its budget"
        );
    }
}

/// Aborts spawned tasks when dropped, so no early return leaves one running.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What step 4 decided.
enum Plan {
    Start {
        archive: Option<ThreadRecord>,
        changes: Option<Vec<ComponentChange>>,
    },
    Resume {
        record: ThreadRecord,
    },
    Fork {
        parent: ThreadRecord,
    },
}

/// What every step of one run shares.
struct RunCx<'a> {
    thread: &'a Thread,
    store: Arc<dyn ThreadStore>,
    run_id: &'a RunId,
    sink: Arc<CoreSink>,
    redactor: Redactor,
    cancel: watch::Receiver<bool>,
}

/// The run's compatibility identity, computed once from its session view.
struct Identity {
    views: RunViews,
    breakdown: Breakdown,
    fingerprint: Fingerprint,
}

async fn attached_run(
    cx: &RunCx<'_>,
    prompt: String,
    attachments: &mut [RunAttachment],
) -> Result<RunResult, ThreadError> {
    let RunCx {
        thread,
        store,
        run_id,
        ..
    } = cx;
    let inner = &thread.agent.inner;
    // 2b and 3. Validate everything and build both views before anything launches.
    let identity = identity(thread, attachments)?;

    // 4. Lease (the key; for a fork the parent too, so it cannot move meanwhile), resolve,
    // decide.
    let owner = format!("{}/{}", inner.instance, run_id);
    let mut leases = Vec::new();
    for key in std::iter::once(&thread.key).chain(thread.fork_from.as_ref()) {
        let target = format!("{LEASE_PREFIX}{key}");
        match store.acquire_lease(&target, &owner, inner.lease_ttl).await {
            Ok(lease) => leases.push(lease),
            Err(e) => {
                release_all(store, &leases).await;
                return Err(store_error(e, key));
            }
        }
    }
    let outcome = leased_run(cx, prompt, attachments, &identity, leases.clone()).await;
    if outcome
        .as_ref()
        .is_err_and(|e| !matches!(e, ThreadError::LeaseLost { .. }))
    {
        release_all(store, &leases).await;
    }
    outcome
}

/// Best effort: an unreleased lease expires after its TTL anyway.
async fn release_all(store: &Arc<dyn ThreadStore>, leases: &[Lease]) {
    for lease in leases {
        let _ = store.release_lease(lease).await;
    }
}

fn store_error(error: StoreError, key: &str) -> ThreadError {
    match error {
        StoreError::Busy { .. } => ThreadError::Busy {
            key: key.to_owned(),
        },
        StoreError::LeaseLost { .. } => ThreadError::LeaseLost {
            key: key.to_owned(),
        },
        StoreError::AlreadyExists { .. } => ThreadError::AlreadyExists {
            key: key.to_owned(),
        },
        other => ThreadError::Store(other),
    }
}

fn check_compatibility(
    thread: &Thread,
    record: &ThreadRecord,
    breakdown: &Breakdown,
    fingerprint: Fingerprint,
) -> Result<(), Incompatibility> {
    let stored = &record.compatibility;
    if stored.scheme_version != SCHEME_VERSION {
        let migrated = thread.agent.inner.migrations.iter().any(|m| {
            m.from_scheme == stored.scheme_version
                && m.from == stored.fingerprint
                && m.to == fingerprint
        });
        return if migrated {
            Ok(())
        } else {
            Err(Incompatibility::scheme(
                stored.scheme_version,
                SCHEME_VERSION,
            ))
        };
    }
    if stored.fingerprint == fingerprint {
        return Ok(());
    }
    Err(Incompatibility::components(
        stored.components.diff(breakdown),
    ))
}

async fn decide(
    thread: &Thread,
    store: &Arc<dyn ThreadStore>,
    breakdown: &Breakdown,
    fingerprint: Fingerprint,
) -> Result<Plan, ThreadError> {
    let key = &thread.key;
    let resolve = |k: &str| {
        let query = Query::key(k.to_owned());
        async move { store.resolve(&query).await }
    };
    if let Some(parent_key) = &thread.fork_from {
        if resolve(key).await.map_err(ThreadError::Store)?.is_some() {
            return Err(ThreadError::AlreadyExists { key: key.clone() });
        }
        let parent = resolve(parent_key)
            .await
            .map_err(ThreadError::Store)?
            .ok_or_else(|| ThreadError::NotFound {
                key: parent_key.clone(),
            })?;
        check_compatibility(thread, &parent, breakdown, fingerprint).map_err(
            |incompatibility| ThreadError::Incompatible {
                key: parent_key.clone(),
                incompatibility,
            },
        )?;
        if parent.state.resume_id.trim().is_empty() {
            return Err(ThreadError::CheckpointMissing {
                key: parent_key.clone(),
            });
        }
        return Ok(Plan::Fork { parent });
    }
    let resume_only = thread.mode == Mode::ResumeOnly;
    let Some(record) = resolve(key).await.map_err(ThreadError::Store)? else {
        return if resume_only {
            Err(ThreadError::NotFound { key: key.clone() })
        } else {
            Ok(Plan::Start {
                archive: None,
                changes: None,
            })
        };
    };
    match check_compatibility(thread, &record, breakdown, fingerprint) {
        Ok(()) if record.state.resume_id.trim().is_empty() => {
            if resume_only {
                Err(ThreadError::CheckpointMissing { key: key.clone() })
            } else {
                Ok(Plan::Start {
                    archive: Some(record),
                    changes: None,
                })
            }
        }
        Ok(()) => Ok(Plan::Resume { record }),
        Err(incompatibility) if resume_only => Err(ThreadError::Incompatible {
            key: key.clone(),
            incompatibility,
        }),
        Err(incompatibility) => Ok(Plan::Start {
            archive: Some(record),
            changes: Some(incompatibility.changes().to_vec()),
        }),
    }
}

/// The driver's session codec; Threads are refused up front without one.
fn codec(thread: &Thread) -> Result<&dyn SessionCodec, ThreadError> {
    thread
        .agent
        .inner
        .driver
        .session_codec()
        .ok_or(ThreadError::Unsupported {
            capability: "session resume with a session codec",
        })
}

/// A stored state, decoded through the driver's codec from its normalized params. A state the
/// codec cannot decode is refused before the driver runs.
fn decode_state(
    thread: &Thread,
    stored: &thread_store::SessionState,
) -> Result<driver_spi::SessionState, ThreadError> {
    let params = SessionParams::new(
        stored.resume_id.clone(),
        stored.display_id.clone().unwrap_or_default(),
        stored.data.clone(),
    );
    match codec(thread)?.from_params(Some(&params)) {
        Ok(Some(state)) => Ok(state),
        Ok(None) | Err(_) => Err(ThreadError::ResumeRejected {
            reason: ResumeRejectReason::InvalidState,
        }),
    }
}

/// A checkpoint in the codec-normalized form the store keeps.
fn encode_state(
    thread: &Thread,
    state: &driver_spi::SessionState,
) -> Result<thread_store::SessionState, ThreadError> {
    match codec(thread)?.to_params(Some(state)) {
        Ok(Some(params)) => Ok(thread_store::SessionState {
            resume_id: params.resume_id,
            display_id: (!params.display_id.is_empty()).then_some(params.display_id),
            data: params.data,
        }),
        Ok(None) | Err(_) => Err(ThreadError::Driver {
            kind: FailureKind::Protocol,
            message: "the session codec could not encode the checkpoint".to_owned(),
        }),
    }
}

async fn leased_run(
    cx: &RunCx<'_>,
    prompt: String,
    attachments: &mut [RunAttachment],
    identity: &Identity,
    leases: Vec<Lease>,
) -> Result<RunResult, ThreadError> {
    let RunCx {
        thread,
        store,
        sink,
        redactor,
        cancel,
        ..
    } = cx;
    let run_id: &RunId = cx.run_id;
    let Identity {
        views,
        breakdown,
        fingerprint,
    } = identity;
    let (breakdown, fingerprint) = (breakdown, *fingerprint);
    let inner = &thread.agent.inner;
    let mut plan = decide(thread, store, breakdown, fingerprint).await?;
    tracing::debug!(
        plan = match &plan {
            Plan::Start { changes: None, .. } => "start",
            Plan::Start { .. } => "restart",
            Plan::Resume { .. } => "resume",
            Plan::Fork { .. } => "fork",
        },
        "compatibility decided"
    );

    // 5. The concrete request: current endpoints and credentials, exactly.
    // The attachments are not needed after the views: their services move into the request.
    let services: Vec<_> = attachments
        .iter_mut()
        .flat_map(|a| std::mem::take(&mut a.services))
        .collect();
    let mut mcp: Vec<_> = services.iter().filter_map(|s| s.mcp.clone()).collect();
    mcp.extend(inner.host_mcp.iter().cloned());
    let mut base = Request::new(
        run_id.clone(),
        prompt,
        profile_payload(&inner.profile, views),
    )
    .with_runtime(RuntimePayload::from_services(services))
    .with_mcp(mcp);
    if let Some(workspace) = &inner.profile.workspace {
        base = base.with_workspace(workspace.clone());
    }
    if let Some(model) = &inner.profile.model {
        base = base.with_model(model.clone());
    }
    if let Some(instructions) = &inner.profile.instructions {
        base = base.with_instructions(instructions.clone());
    }

    // Provider event streams run alongside the driver; the guard stops them on every path.
    let forwarders = AbortOnDrop(
        attachments
            .iter_mut()
            .filter_map(|a| a.events.take())
            .map(|events| {
                let sink = Arc::clone(sink);
                tokio::spawn(async move {
                    let mut stream = events.into_inner();
                    while let Some(event) =
                        std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await
                    {
                        sink.service_event(event);
                    }
                })
            })
            .collect(),
    );

    let mut leases = leases;
    let mut rejected = false;
    let response = loop {
        let session = match &plan {
            Plan::Start { .. } => SessionContext::start(),
            Plan::Resume { record } if thread.mode == Mode::ResumeOnly => {
                SessionContext::continue_only(decode_state(thread, &record.state)?)
            }
            Plan::Resume { record } => {
                SessionContext::continue_or_start(decode_state(thread, &record.state)?)
            }
            Plan::Fork { parent } => SessionContext::fork(decode_state(thread, &parent.state)?),
        };
        // Clone the request only while a retry is still possible.
        let retry_possible = thread.mode == Mode::ContinueOrStart
            && matches!(plan, Plan::Resume { .. })
            && !rejected;
        let request = if retry_possible {
            base.clone()
        } else {
            let profile = base.profile;
            std::mem::replace(
                &mut base,
                Request::new(run_id.clone(), String::new(), profile),
            )
        }
        .with_session(session);
        match drive(thread, store, request, sink, &mut leases, cancel.clone()).await {
            Err(ThreadError::ResumeRejected { .. })
                if thread.mode == Mode::ContinueOrStart
                    && matches!(plan, Plan::Resume { .. })
                    && !rejected =>
            {
                // The driver does not know the stored session any more: start over, once.
                rejected = true;
                let Plan::Resume { record } = plan else {
                    unreachable!("matched above")
                };
                plan = Plan::Start {
                    archive: Some(record),
                    changes: None,
                };
            }
            other => break other,
        }
    };
    // Let forwarders deliver what their providers already queued before they are stopped.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    drop(forwarders);
    let response = response?;

    if !response.is_clean() {
        let (kind, message) = match &response.failure {
            Some(failure) => (failure.kind, redactor.redact(&failure.message).into_owned()),
            None => (
                FailureKind::Other,
                format!("exit status {:?}", response.exit),
            ),
        };
        return Err(ThreadError::Driver { kind, message });
    }

    // 6. Persist a clean success with a valid checkpoint.
    let session = match &plan {
        Plan::Start {
            changes: Some(c), ..
        } => SessionOutcome::Restarted { changes: c.clone() },
        Plan::Start { .. } if rejected => SessionOutcome::RestartedAfterRejection,
        Plan::Start { .. } => SessionOutcome::Started,
        Plan::Resume { .. } => SessionOutcome::Resumed,
        Plan::Fork { parent } => SessionOutcome::Forked {
            parent: parent.id.clone(),
        },
    };
    let (record_id, not_persisted) = match response.persistable_checkpoint() {
        Some(state) => (
            Some(persist(thread, store, &plan, breakdown, fingerprint, state, leases).await?),
            None,
        ),
        None => {
            release_all(store, &leases).await;
            let why = if response.checkpoint.is_some() {
                NotPersisted::InvalidCheckpoint
            } else {
                NotPersisted::NoCheckpoint
            };
            tracing::warn!(reason = %why, "run finished without a stored checkpoint");
            sink.push(ThreadEventKind::Warning {
                code: NotPersisted::CODE.to_owned(),
                message: why.to_string(),
            });
            (None, Some(why))
        }
    };
    Ok(RunResult {
        run_id: run_id.clone(),
        output: redactor.redact(&response.output).into_owned(),
        exit: response.exit,
        usage: response.usage,
        session,
        record_id,
        not_persisted,
        events: Vec::new(),
    })
}

/// Runs the driver, renewing the lease at a third of its TTL, until it returns, the run is
/// cancelled, or the lease is lost (then the driver future is dropped, which stops it).
async fn drive(
    thread: &Thread,
    store: &Arc<dyn ThreadStore>,
    request: Request,
    sink: &Arc<CoreSink>,
    leases: &mut [Lease],
    cancel: watch::Receiver<bool>,
) -> Result<Response, ThreadError> {
    let inner = &thread.agent.inner;
    let ttl = inner.lease_ttl;
    let sink_dyn: Arc<dyn driver_spi::EventSink> =
        Arc::clone(sink) as Arc<dyn driver_spi::EventSink>;
    let run = inner.driver.run(request, sink_dyn);
    tokio::pin!(run);
    let cancelled = cancelled(cancel);
    tokio::pin!(cancelled);
    loop {
        tokio::select! {
            result = &mut run => {
                return result.map_err(driver_error);
            }
            () = &mut cancelled => return Err(ThreadError::Cancelled),
            () = tokio::time::sleep(ttl / 3) => {
                for lease in leases.iter_mut() {
                    match store.renew_lease(lease, ttl).await {
                        Ok(renewed) => *lease = renewed,
                        Err(StoreError::LeaseLost { .. }) => {
                            tracing::warn!("lease lost while the driver ran; stopping the run");
                            return Err(ThreadError::LeaseLost { key: thread.key.clone() });
                        }
                        // A transient store failure: keep running; the next renewal retries,
                        // and a real loss shows up as LeaseLost at renew or finalize.
                        Err(_) => tracing::debug!("lease renewal failed; retrying"),
                    }
                }
            }
        }
    }
}

fn driver_error(error: DriverError) -> ThreadError {
    match error {
        DriverError::ResumeRejected { reason } => ThreadError::ResumeRejected { reason },
        DriverError::Cancelled => ThreadError::Cancelled,
        DriverError::Failed(failure) => ThreadError::Driver {
            kind: failure.kind,
            message: failure.kind.to_string(),
        },
        other => ThreadError::Driver {
            kind: FailureKind::Other,
            message: other.to_string(),
        },
    }
}

async fn persist(
    thread: &Thread,
    store: &Arc<dyn ThreadStore>,
    plan: &Plan,
    breakdown: &Breakdown,
    fingerprint: Fingerprint,
    state: &driver_spi::SessionState,
    leases: Vec<Lease>,
) -> Result<thread_store::RecordId, ThreadError> {
    let inner = &thread.agent.inner;
    let now = Timestamp::now();
    let compatibility = Compatibility {
        fingerprint,
        scheme_version: SCHEME_VERSION,
        components: breakdown.clone(),
    };
    let driver = &inner.driver_info;
    let codec = driver.codec.clone().unwrap_or_default();
    let stored_state = encode_state(thread, state)?;
    let fresh = || {
        ThreadRecord::new(
            thread.key.clone(),
            driver.driver_type.clone(),
            inner.profile.identity.clone(),
            compatibility.clone(),
            codec.clone(),
            stored_state.clone(),
            now,
        )
    };
    let request = match plan {
        Plan::Resume { record } => {
            let mut updated = record.clone();
            updated.state = stored_state.clone();
            updated.compatibility = compatibility.clone();
            updated.status = RecordStatus::Active;
            updated.updated_at = now;
            updated.turns = record.turns.saturating_add(1);
            FinalizeRequest::new(updated)
        }
        Plan::Start {
            archive: Some(old), ..
        } => FinalizeRequest::new(fresh())
            .archive_previous(old.id.clone())
            .rebind_key(),
        Plan::Start { archive: None, .. } => FinalizeRequest::new(fresh()).rebind_key(),
        Plan::Fork { parent } => {
            // The fork continues the parent's conversation: its turns count on.
            let mut forked = fresh();
            forked.turns = parent.turns.saturating_add(1);
            FinalizeRequest::new(forked)
                .require_key_absent()
                .rebind_key()
        }
    };
    let id = request.record.id.clone();
    store
        .finalize(
            &leases
                .into_iter()
                .fold(request, FinalizeRequest::holding)
                .release_leases(),
        )
        .await
        .map_err(|e| store_error(e, &thread.key))?;
    Ok(id)
}
