//! Step 6: what a clean run reports (`SessionOutcome`), and the one write: a clean success
//! with a valid checkpoint is finalized under the run's leases, anything else writes nothing
//! and says why.

use std::sync::Arc;

use compat_fingerprint::{Breakdown, Fingerprint, ShortDigest};
use thread_store::{
    Compatibility, FinalizeRequest, Lease, RecordStatus, ThreadRecord, ThreadStore, Timestamp,
};

use driver_spi::Response;
use thread_store::RecordId;

use super::decide::{Plan, encode_state, release_all, store_error};
use super::{Identity, RunCx};
use crate::compat::SCHEME_VERSION;
use crate::sticky;
use crate::thread::Thread;
use crate::{NotPersisted, SessionOutcome, ThreadError, ThreadEventKind};

/// What the run did to the conversation, as `RunResult::session` reports it.
pub(super) fn outcome(plan: &Plan, rejected: bool) -> SessionOutcome {
    match plan {
        Plan::Start {
            changes: Some(c), ..
        } => SessionOutcome::Restarted { changes: c.clone() },
        Plan::Start { .. } if rejected => SessionOutcome::RestartedAfterRejection,
        Plan::Start { .. } => SessionOutcome::Started,
        Plan::Resume { .. } => SessionOutcome::Resumed,
        Plan::Fork { parent } => SessionOutcome::Forked {
            parent: parent.id.clone(),
        },
    }
}

/// Persists a clean run's valid checkpoint and returns its record id; with none to persist,
/// writes nothing, releases the leases and says why (a warning event and the reason).
pub(super) async fn checkpoint(
    cx: &RunCx<'_>,
    plan: &Plan,
    identity: &Identity,
    response: &Response,
    leases: Vec<Lease>,
) -> Result<(Option<RecordId>, Option<NotPersisted>), ThreadError> {
    match response.persistable_checkpoint() {
        Some(state) => {
            let id = persist(
                cx.thread,
                &cx.store,
                plan,
                &identity.breakdown,
                identity.fingerprint,
                state,
                leases,
            )
            .await?;
            Ok((Some(id), None))
        }
        None => {
            release_all(&cx.store, &leases).await;
            let why = if response.checkpoint.is_some() {
                NotPersisted::InvalidCheckpoint
            } else {
                NotPersisted::NoCheckpoint
            };
            tracing::warn!(reason = %why, "run finished without a stored checkpoint");
            cx.sink.push(ThreadEventKind::Warning {
                code: NotPersisted::CODE.to_owned(),
                message: why.to_string(),
            });
            Ok((None, Some(why)))
        }
    }
}

/// Writes the run's checkpoint: the one `finalize`, holding the run's leases and releasing
/// them, or renewing a sticky one.
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
    // Every record the agent writes is its namespace's (a restart and a fork keep it: the
    // decision only lets them happen on a record the namespace owns).
    let fresh = || ThreadRecord {
        namespace: inner.namespace.clone(),
        ..ThreadRecord::new(
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
        Plan::Resume { record, .. } => {
            let mut updated = record.clone();
            // The same owner; a claim gives a record without one the agent's namespace.
            updated.namespace.clone_from(&inner.namespace);
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
    let conversation = state.resume_id.as_str();
    // A sticky lease the driver still holds is renewed by this commit, else released.
    let keep = sticky::renewal(thread, conversation);
    let request = leases
        .iter()
        .cloned()
        .fold(request, FinalizeRequest::holding);
    let request = match keep {
        Some(ttl) => request.renew_leases(ttl),
        None => request.release_leases(),
    };
    let before = std::time::Instant::now();
    store
        .finalize(&request)
        .await
        .map_err(|e| store_error(e, &thread.key))?;
    if keep.is_some() {
        sticky::keep(thread, leases, before, conversation).await;
    }
    if let Plan::Resume { claim: true, .. } = plan {
        tracing::info!(
            thread = %ShortDigest::of_str(&thread.key),
            "claimed a Thread stored without an owner for the agent's credential namespace"
        );
    }
    Ok(id)
}
