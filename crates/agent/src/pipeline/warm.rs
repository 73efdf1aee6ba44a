//! A Thread's pre-warm ([`Thread::prewarm`](crate::Thread::prewarm)): the run's steps 1 to 4
//! as [`explain`](super::explain) runs them (contract, attach, validate, fingerprint, decide;
//! no lease, no write), then the driver's pre-warm of the very request step 5 would send,
//! without a prompt. The attachment is not detached: it is kept for the Thread's next run.

use std::sync::Arc;

use driver_spi::{DriverError, SessionContext, Unsupported};
use run_service::{RunAttachment, RunId, RunServiceProvider};
use tokio::sync::watch;

use super::attach::{attach_providers, check_contract, detach_all, identity};
use super::decide::{Plan, decide};
use super::drive::{self, cancelled, driver_error};
use super::verdict;
use crate::ThreadError;
use crate::prewarm::{Prewarm, Warm};
use crate::thread::{Mode, Thread};

/// Pre-warms `thread`'s next run under `run_id`: what it left ready, and what the run takes
/// (the attachment, the driver's ticket). On an error every provider is detached again.
pub(crate) async fn prewarm(
    thread: &Thread,
    run_id: &RunId,
    cancel: watch::Receiver<bool>,
) -> Result<(Prewarm, Warm), ThreadError> {
    let inner = &thread.agent.inner;
    // 1. The contract, and the output schema compiled, as the run checks them.
    let store = check_contract(thread)?;
    if let Some(schema) = &thread.output_schema {
        crate::output::Checker::new(schema)?;
    }
    if !inner.driver_info.prewarm {
        return Err(ThreadError::Unsupported(Unsupported::Prewarm));
    }
    // 2. Attach.
    let (attached, mut attachments) = attach_providers(thread, run_id, &cancel).await?;
    let warmed = tokio::select! {
        warmed = warm(thread, run_id, &store, &mut attachments) => warmed,
        () = cancelled(cancel) => Err(ThreadError::Cancelled),
    };
    match warmed {
        Ok((prewarm, ticket)) => Ok((
            prewarm,
            Warm {
                run_id: run_id.clone(),
                attached,
                attachments,
                ticket,
            },
        )),
        Err(error) => {
            detach_all(&attached, run_id, inner.teardown_budget).await;
            Err(error)
        }
    }
}

/// Steps 2b to 4, then the driver's pre-warm. A resume the driver rejects is pre-warmed as a
/// start when the Thread may start over, as the run would start over.
async fn warm(
    thread: &Thread,
    run_id: &RunId,
    store: &Arc<dyn thread_store::ThreadStore>,
    attachments: &mut [RunAttachment],
) -> Result<(Prewarm, Option<driver_spi::PrewarmTicket>), ThreadError> {
    let inner = &thread.agent.inner;
    let identity = identity(thread, attachments)?;
    let plan = decide(thread, store, &identity.breakdown, identity.fingerprint).await?;
    let verdict = verdict(thread, &plan)?;
    // The run's request from copies of the services: the attachment keeps its own for the run.
    let mut copies: Vec<RunAttachment> = attachments
        .iter()
        .map(|a| RunAttachment::new(a.services.clone()))
        .collect();
    let base = drive::request(thread, run_id, String::new(), &mut copies, &identity.views);
    let session = drive::session(thread, &plan)?;
    let may_start_over =
        thread.mode == Mode::ContinueOrStart && matches!(plan, Plan::Resume { claim: false, .. });
    let prewarmed = match inner
        .driver
        .prewarm(base.clone().with_session(session))
        .await
    {
        Err(DriverError::ResumeRejected { reason }) if may_start_over => {
            tracing::debug!(%reason, "the driver rejected the resume; pre-warming a start");
            inner
                .driver
                .prewarm(base.with_session(SessionContext::start()))
                .await
        }
        other => other,
    }
    .map_err(driver_error)?;
    Ok((
        Prewarm {
            verdict,
            reused: prewarmed.reused,
            expires_after: prewarmed.expires_after,
        },
        prewarmed.ticket,
    ))
}

/// The providers a kept attachment was made by.
pub(crate) type Attached = Vec<Arc<dyn RunServiceProvider>>;

/// Detaches a kept attachment within `budget` (it expired, was replaced, or the agent closed).
pub(crate) async fn release(warm: Warm, budget: std::time::Duration) {
    detach_all(&warm.attached, &warm.run_id, budget).await;
}
