//! Step 5: the concrete request (the current endpoints and credentials, exactly), the
//! providers' event forwarders, the driver run with its lease renewals, the one restart after
//! a rejected resume, and the check of the driver's response.

use std::sync::Arc;

use driver_spi::{DriverError, FailureKind, Request, Response, RuntimePayload, SessionContext};
use run_service::{RunAttachment, RunId, RunViews};
use runtime_env::Redactor;
use thread_store::{Lease, StoreError, ThreadStore};
use tokio::sync::watch;

use super::RunCx;
use super::decide::{Plan, decode_state, unclaimed};
use crate::ThreadError;
use crate::compat::profile_payload;
use crate::events::CoreSink;
use crate::thread::{Mode, Thread};

/// Resolves when the run is cancelled; pends forever if nobody can cancel it any more.
pub(super) async fn cancelled(mut cancel: watch::Receiver<bool>) {
    loop {
        if *cancel.borrow_and_update() {
            return;
        }
        if cancel.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Aborts spawned tasks when dropped, so no early return leaves one running.
pub(super) struct AbortOnDrop(pub(super) Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl AbortOnDrop {
    /// Lets the forwarders deliver what their providers already queued, then stops them.
    pub(super) async fn drain(self) {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
}

/// The run's concrete request, without its session: the current endpoints and credentials,
/// exactly. The attachments' services move into it; only the views were needed of them.
pub(super) fn request(
    thread: &Thread,
    run_id: &RunId,
    prompt: String,
    attachments: &mut [RunAttachment],
    views: &RunViews,
) -> Request {
    let inner = &thread.agent.inner;
    let services: Vec<_> = attachments
        .iter_mut()
        .flat_map(|a| std::mem::take(&mut a.services))
        .collect();
    let mut mcp: Vec<_> = services.iter().filter_map(|s| s.mcp.clone()).collect();
    mcp.extend(inner.host_mcp.iter().cloned());
    let runtime = inner.host_secrets.iter().cloned().fold(
        RuntimePayload::from_services(services),
        RuntimePayload::with_secret_env,
    );
    let schema = thread.output_schema.as_ref();
    let prompt = match schema {
        Some(s) if s.delivery() == driver_spi::SchemaDelivery::PromptOnly => {
            crate::output::prompt_only(&prompt, s)
        }
        _ => prompt,
    };
    let mut base = Request::new(
        run_id.clone(),
        prompt,
        profile_payload(&inner.profile, views, &thread.permissions()),
    )
    .with_runtime(runtime)
    .with_mcp(mcp)
    .with_permissions(thread.permissions())
    .with_approvals(thread.approvals());
    if let Some(workspace) = &inner.profile.workspace {
        base = base.with_workspace(workspace.clone());
    }
    if let Some(model) = &inner.profile.model {
        base = base.with_model(model.clone());
    }
    if let Some(instructions) = &inner.profile.instructions {
        base = base.with_instructions(instructions.clone());
    }
    if let Some(schema) = schema.and_then(crate::output::for_driver) {
        base = base.with_output_schema(schema);
    }
    base
}

/// Starts forwarding the providers' event streams to the run's sink, alongside the driver;
/// the guard stops them on every path.
pub(super) fn forward_events(
    attachments: &mut [RunAttachment],
    sink: &Arc<CoreSink>,
) -> AbortOnDrop {
    AbortOnDrop(
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
    )
}

/// How the driver run ended: the plan it ran under last, whether a rejected resume was
/// started over, and the driver's answer.
pub(super) struct Driven {
    pub(super) plan: Plan,
    pub(super) rejected: bool,
    pub(super) response: Result<Response, ThreadError>,
}

/// The session context `plan` runs under.
pub(super) fn session(thread: &Thread, plan: &Plan) -> Result<SessionContext, ThreadError> {
    Ok(match plan {
        Plan::Start { .. } => SessionContext::start(),
        // A claim must never become a fresh session: only a real resume proves the session
        // lives in this agent's namespace.
        Plan::Resume { record, claim } if *claim || thread.mode == Mode::ResumeOnly => {
            SessionContext::continue_only(decode_state(thread, &record.state)?)
        }
        Plan::Resume { record, .. } => {
            SessionContext::continue_or_start(decode_state(thread, &record.state)?)
        }
        Plan::Fork { parent } => SessionContext::fork(decode_state(thread, &parent.state)?),
    })
}

/// Runs the driver under `plan`. A resume the driver rejects (it no longer knows the stored
/// session) starts over once, when the Thread may start over.
pub(super) async fn run_with_retry(
    cx: &RunCx<'_>,
    mut plan: Plan,
    mut base: Request,
    leases: &mut [Lease],
) -> Result<Driven, ThreadError> {
    let thread = cx.thread;
    let mut rejected = false;
    loop {
        let session = session(thread, &plan)?;
        // Decided once per attempt. Only then is the request cloned, for the retry.
        let retry_possible = thread.mode == Mode::ContinueOrStart
            && matches!(plan, Plan::Resume { claim: false, .. })
            && !rejected;
        let request = if retry_possible {
            base.clone()
        } else {
            let profile = base.profile;
            std::mem::replace(
                &mut base,
                Request::new(cx.run_id.clone(), String::new(), profile),
            )
        }
        .with_session(session);
        let response = drive(
            thread,
            &cx.store,
            request,
            &cx.sink,
            leases,
            cx.cancel.clone(),
        )
        .await;
        match (response, plan) {
            (Err(ThreadError::ResumeRejected { .. }), plan @ Plan::Resume { claim: true, .. }) => {
                // Not this namespace's session (or not any more): the record stays as it is.
                return Ok(Driven {
                    plan,
                    rejected,
                    response: Err(ThreadError::Unclaimed {
                        key: thread.key.clone(),
                        reason: unclaimed::REJECTED,
                    }),
                });
            }
            (Err(ThreadError::ResumeRejected { reason }), Plan::Resume { record, .. })
                if retry_possible =>
            {
                tracing::debug!(%reason, "the driver rejected the resume; starting over once");
                rejected = true;
                plan = Plan::Start {
                    archive: Some(record),
                    changes: None,
                };
            }
            (response, last) => {
                return Ok(Driven {
                    plan: last,
                    rejected,
                    response,
                });
            }
        }
    }
}

/// A response that is not clean is the run's failure, its message redacted.
pub(super) fn check_response(
    response: Response,
    redactor: &Redactor,
) -> Result<Response, ThreadError> {
    if response.is_clean() {
        return Ok(response);
    }
    let (kind, message, retryable) = match &response.failure {
        Some(failure) => (
            failure.kind,
            redactor.redact(&failure.message).into_owned(),
            failure.retryable,
        ),
        None => (
            FailureKind::Other,
            format!("exit status {:?}", response.exit),
            None,
        ),
    };
    Err(ThreadError::Driver {
        kind,
        message,
        retryable,
    })
}

/// Runs the driver, renewing the lease at a third of its TTL, until it returns, the run is
/// cancelled, or the lease is lost (then the driver future is dropped, which stops it).
pub(super) async fn drive(
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
    // The host may steer the turn from here until the driver returns.
    let (request, _steerable) = crate::steer::attach(thread, request);
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

pub(super) fn driver_error(error: DriverError) -> ThreadError {
    match error {
        DriverError::ResumeRejected { reason } => ThreadError::ResumeRejected { reason },
        DriverError::Cancelled => ThreadError::Cancelled,
        // A driver refuses what its runtime cannot do before it launches anything (a policy,
        // an output schema): the host branches on it as on the core's own refusals.
        DriverError::Unsupported(what) => ThreadError::Unsupported(what),
        // The failure's message is provider detail and stays out of the error; a program
        // that could not be started is host configuration, named with what to do.
        DriverError::Failed(failure) => ThreadError::Driver {
            kind: failure.kind,
            message: failure
                .program
                .as_ref()
                .map_or_else(|| failure.kind.to_string(), ToString::to_string),
            retryable: failure.retryable,
        },
        other => ThreadError::Driver {
            kind: FailureKind::Other,
            message: other.to_string(),
            retryable: None,
        },
    }
}
