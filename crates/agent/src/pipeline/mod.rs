//! The one pipeline every Thread run goes through. Each step lives in its own module; this
//! one strings them together.
//!
//! 1. Validate the thread contract ([`attach::check_contract`]).
//! 2. Attach every provider in order, unwinding in reverse on failure
//!    ([`attach::attach_providers`]), and validate all attachments.
//! 3. Build the concrete and session views and the run's identity ([`attach::identity`]).
//! 4. Take the Thread's leases ([`attached_run`]; a hot sticky lease is used as kept, see
//!    [`crate::sticky`]), resolve the stored record and decide:
//!    first whose it is (another namespace's is refused), then resume, start fresh, fork or
//!    refuse, before the driver runs ([`decide::decide`]).
//! 5. Run the driver with the concrete request, renewing the lease, starting over once after a
//!    rejected resume, and check its response ([`drive`]).
//! 6. Persist only a clean success with a valid checkpoint ([`persist::checkpoint`]),
//!    releasing the leases, or renewing a sticky one the driver still holds.
//! 7. Tear down within a budget ([`attach::detach_all`]).
//!
//! [`explain`] runs steps 1 to 4 without the lease, the driver or any write; [`prewarm`] runs
//! them too, then the driver's pre-warm of the request step 5 would send, without a prompt
//! (its attachment is kept for the Thread's next run, whose step 2 takes it).
//!
//! Tracing: a run is one `thread_run` span (INFO) carrying the run id and, in its `thread`
//! field, a digest of the Thread key, never the key (a field named `key` would also be masked
//! by log redactors that catch `key=…`). Each step ends in a DEBUG event with a `step` field
//! (`attach`, `validate`, `fingerprint`, `lease`, `decide`, `drive`, `persist`, `detach`) and
//! its elapsed time; each provider and lease has a TRACE event. Nothing logged carries a value
//! of the request: errors are logged by their class ([`ThreadError::class`]).

mod attach;
mod decide;
mod drive;
mod persist;
pub(crate) mod warm;

use std::sync::Arc;
use std::time::Instant;

use compat_fingerprint::{Breakdown, Fingerprint, ShortDigest};
use driver_spi::FailureKind;
use run_service::{RunAttachment, RunId, RunViews};
use runtime_env::Redactor;
use thread_store::{Lease, ThreadStore};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use self::attach::{attach_providers, check_contract, detach_all, identity, secret_values};
pub(crate) use self::decide::check_readable;
use self::decide::{Plan, decide, decode_state, release_all, store_error};
use self::drive::Driven;
pub(crate) use self::warm::prewarm;
use crate::events::CoreSink;
use crate::explain::{Explanation, Verdict};
use crate::sticky::{self, Held};
use crate::thread::{Mode, Thread};
use crate::{RunResult, SessionOutcome, ThreadError, ThreadEvent, ThreadEventKind};

/// Stores accept names of up to 512 bytes; the lease target adds the `thread:` prefix.
const MAX_KEY_LEN: usize = thread_store::MAX_NAME_LEN - LEASE_PREFIX.len();
// The refusal below names the limit; this keeps the two in step.
const _: () = assert!(MAX_KEY_LEN == 505);
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
            reason: "longer than 505 bytes",
        });
    }
    if key.chars().any(char::is_control) {
        return Err(ThreadError::InvalidKey {
            reason: "contains a control character",
        });
    }
    Ok(())
}

pub(crate) async fn execute(
    thread: &Thread,
    prompt: String,
    run_id: RunId,
    events: mpsc::UnboundedSender<ThreadEvent>,
    cancel: watch::Receiver<bool>,
) -> Result<RunResult, ThreadError> {
    let span = tracing::info_span!(
        "thread_run",
        run_id = %run_id,
        thread = %ShortDigest::of_str(&thread.key),
        resume_only = thread.mode == Mode::ResumeOnly,
        fork = thread.fork_from.is_some(),
    );
    async move {
        let started = Instant::now();
        let outcome = execute_inner(thread, prompt, &run_id, events, cancel).await;
        let elapsed_ms = elapsed_ms(started);
        match &outcome {
            Ok(result) => tracing::info!(
                session = session_label(&result.session),
                persisted = result.record_id.is_some(),
                elapsed_ms,
                "run finished"
            ),
            Err(ThreadError::Driver { kind, .. }) => {
                tracing::info!(error = "driver", kind = %kind, elapsed_ms, "run failed");
            }
            Err(error) => tracing::info!(error = error.class(), elapsed_ms, "run failed"),
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
    // 1. The thread contract, and the output schema compiled.
    let store = check_contract(thread)?;
    let checker = thread
        .output_schema
        .as_ref()
        .map(crate::output::Checker::new)
        .transpose()?;
    // 2. Attach providers in order; unwind in reverse if one fails. A pre-warm's attachment
    // (attached under the pre-warm's own run id) serves instead, so the process it warmed
    // sees the very same services.
    let (attached, mut attachments, attached_as, prewarmed) =
        match inner.prewarmed.take(&thread.key) {
            Some(warm) => (warm.attached, warm.attachments, warm.run_id, warm.ticket),
            None => {
                let (attached, attachments) = attach_providers(thread, run_id, &cancel).await?;
                (attached, attachments, run_id.clone(), None)
            }
        };

    let host_secrets = inner.host_secrets.iter().map(|b| b.value().clone());
    let redactor = Redactor::with_secrets(
        attachments
            .iter()
            .flat_map(secret_values)
            .chain(host_secrets),
    );
    let sink = Arc::new(CoreSink::new(run_id.clone(), redactor.clone(), events));
    let cx = RunCx {
        thread,
        store,
        run_id,
        sink: Arc::clone(&sink),
        redactor,
        cancel,
        checker,
        prewarmed,
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
    detach_all(&attached, &attached_as, inner.teardown_budget).await;
    result
}

/// The outcome's name in logs (a fork's parent record id is left out).
fn session_label(session: &SessionOutcome) -> &'static str {
    match session {
        SessionOutcome::Started => "started",
        SessionOutcome::Resumed => "resumed",
        SessionOutcome::Restarted { .. } => "restarted",
        SessionOutcome::RestartedAfterRejection => "restarted_after_rejection",
        SessionOutcome::Forked { .. } => "forked",
    }
}

/// Milliseconds since `started`, for the steps' `elapsed_ms` fields.
fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Microseconds since `started`, for the quick steps' `elapsed_us` fields.
fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What a run of `thread` would decide now, through the same steps 1 to 4 (and the decoding
/// of the stored state), without the lease, the driver or any write. Providers are attached
/// as for a run, under `run_id`, and detached before it returns.
pub(crate) async fn explain(
    thread: &Thread,
    run_id: &RunId,
    cancel: watch::Receiver<bool>,
) -> Result<Explanation, ThreadError> {
    let span = tracing::info_span!(
        "thread_explain",
        run_id = %run_id,
        thread = %ShortDigest::of_str(&thread.key),
    );
    explain_inner(thread, run_id, cancel).instrument(span).await
}

async fn explain_inner(
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
        let verdict = verdict(thread, &plan)?;
        Ok(Explanation {
            verdict,
            fingerprint,
        })
    }
    .await;
    detach_all(&attached, run_id, inner.teardown_budget).await;
    decided
}

/// What a run under `plan` does with the stored conversation, its checkpoint decoded as the
/// run would (a state the codec refuses is the run's error).
fn verdict(thread: &Thread, plan: &Plan) -> Result<Verdict, ThreadError> {
    Ok(match plan {
        Plan::Start { archive, changes } => Verdict::Start {
            replaces: archive.as_ref().map(|r| r.id.clone()),
            changes: changes.clone().unwrap_or_default(),
        },
        Plan::Resume { record, claim } => {
            decode_state(thread, &record.state)?;
            if *claim {
                Verdict::Claim {
                    record: record.id.clone(),
                }
            } else {
                Verdict::Resume {
                    record: record.id.clone(),
                }
            }
        }
        Plan::Fork { parent } => {
            decode_state(thread, &parent.state)?;
            Verdict::Fork {
                parent: parent.id.clone(),
            }
        }
    })
}

/// What every step of one run shares.
struct RunCx<'a> {
    thread: &'a Thread,
    store: Arc<dyn ThreadStore>,
    run_id: &'a RunId,
    sink: Arc<CoreSink>,
    redactor: Redactor,
    cancel: watch::Receiver<bool>,
    /// The run's output schema, compiled.
    checker: Option<crate::output::Checker>,
    /// The ticket of the pre-warm whose attachment the run took, for the driver.
    prewarmed: Option<driver_spi::PrewarmTicket>,
}

/// The run's compatibility identity, computed once from its session view.
struct Identity {
    views: RunViews,
    breakdown: Breakdown,
    fingerprint: Fingerprint,
}

/// Step 4's leases (the key; for a fork the parent too, so it cannot move meanwhile), then
/// the rest of the run under them; the leases are released on every failure but a lost lease.
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
    let started = Instant::now();
    // A kept (sticky) lease of the Thread: used as is while hot, else re-acquired by its owner.
    let mut kept = sticky::take(thread);
    for key in std::iter::once(&thread.key).chain(thread.fork_from.as_ref()) {
        let target = format!("{LEASE_PREFIX}{key}");
        let acquired = match kept.take() {
            Some(Held::Hot(lease)) => Ok(lease),
            Some(Held::Cold(kept_owner)) => {
                store
                    .acquire_lease(&target, &kept_owner, inner.lease_ttl)
                    .await
            }
            None => store.acquire_lease(&target, &owner, inner.lease_ttl).await,
        };
        match acquired {
            Ok(lease) => {
                tracing::trace!(thread = %ShortDigest::of_str(key), "lease acquired");
                leases.push(lease);
            }
            Err(e) => {
                release_all(store, &leases).await;
                let error = store_error(e, key);
                tracing::debug!(step = "lease", error = error.class(), "step refused");
                return Err(error);
            }
        }
    }
    tracing::debug!(
        step = "lease",
        leases = leases.len(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
    let outcome = leased_run(cx, prompt, attachments, &identity, leases.clone()).await;
    if outcome
        .as_ref()
        .is_err_and(|e| !matches!(e, ThreadError::LeaseLost { .. }))
    {
        release_all(store, &leases).await;
    }
    outcome
}

/// Steps 4 to 6, under the run's leases.
async fn leased_run(
    cx: &RunCx<'_>,
    prompt: String,
    attachments: &mut [RunAttachment],
    identity: &Identity,
    mut leases: Vec<Lease>,
) -> Result<RunResult, ThreadError> {
    // 4. Decide.
    let started = Instant::now();
    let plan = decide(
        cx.thread,
        &cx.store,
        &identity.breakdown,
        identity.fingerprint,
    )
    .await
    .inspect_err(|e| tracing::debug!(step = "decide", error = e.class(), "step refused"))?;
    tracing::debug!(
        step = "decide",
        decision = plan.label(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );

    // 5. Drive.
    let started = Instant::now();
    let mut base = drive::request(cx.thread, cx.run_id, prompt, attachments, &identity.views);
    if let Some(ticket) = &cx.prewarmed {
        base = base.with_prewarmed(ticket.clone());
    }
    let forwarders = drive::forward_events(attachments, &cx.sink);
    let driven = drive::run_with_retry(cx, plan, base, &mut leases).await;
    forwarders.drain().await;
    let Driven {
        plan,
        rejected,
        response,
    } = driven?;
    // A clean answer that is not the data the schema asks for is a failure: nothing persists.
    // The answer is redacted by the run's redactor, as the output below, before it is checked.
    let response = response
        .and_then(|r| drive::check_response(r, &cx.redactor))
        .and_then(|r| match &cx.checker {
            Some(checker) => Ok((Some(checker.check(&r, &cx.redactor)?), r)),
            None => Ok((None, r)),
        });
    match &response {
        Ok((_, r)) => tracing::debug!(
            step = "drive",
            session = plan.label(),
            restarted_after_rejection = rejected,
            exit = ?r.exit,
            elapsed_ms = elapsed_ms(started),
            "step finished"
        ),
        Err(e) => tracing::debug!(
            step = "drive",
            error = e.class(),
            elapsed_ms = elapsed_ms(started),
            "step failed"
        ),
    }
    let (structured, response) = response?;

    // 6. Persist.
    let started = Instant::now();
    let session = persist::outcome(&plan, rejected);
    let (record_id, not_persisted) =
        persist::checkpoint(cx, &plan, identity, &response, leases).await?;
    tracing::debug!(
        step = "persist",
        persisted = record_id.is_some(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
    Ok(RunResult {
        run_id: cx.run_id.clone(),
        output: cx.redactor.redact(&response.output).into_owned(),
        exit: response.exit,
        usage: response.usage,
        session,
        record_id,
        not_persisted,
        structured,
        events: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_limit_is_the_one_the_refusal_names() {
        assert!(check_key(&"k".repeat(MAX_KEY_LEN)).is_ok());
        assert!(matches!(
            check_key(&"k".repeat(MAX_KEY_LEN + 1)),
            Err(ThreadError::InvalidKey {
                reason: "longer than 505 bytes"
            })
        ));
    }
}
