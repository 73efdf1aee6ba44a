//! Steps 1 to 3: the Thread contract, the providers' attachments (unwound in reverse on a
//! failure), and the run's compatibility identity built from the validated views.

use std::sync::Arc;
use std::time::{Duration, Instant};

use run_service::{ExposeSecret, RunAttachment, RunId, RunServiceProvider, build_views};
use runtime_env::Redactor;
use thread_store::ThreadStore;
use tokio::sync::watch;

use super::{Identity, check_key, elapsed_us};
use crate::ThreadError;
use crate::compat::{thread_breakdown, thread_fingerprint};
use crate::thread::Thread;

/// Step 1: what a Thread needs of the agent and its driver; the store it runs on.
pub(super) fn check_contract(thread: &Thread) -> Result<Arc<dyn ThreadStore>, ThreadError> {
    let inner = &thread.agent.inner;
    let store = inner.store.clone().ok_or(ThreadError::StoreRequired)?;
    check_key(&thread.key)?;
    if let Some(parent) = &thread.fork_from {
        check_key(parent)?;
    }
    let driver = &inner.driver_info;
    if !driver.resume || driver.codec.is_none() {
        return Err(ThreadError::Unsupported(driver_spi::Unsupported::Resume));
    }
    if thread.fork_from.is_some() && !driver.fork {
        return Err(ThreadError::Unsupported(driver_spi::Unsupported::Fork));
    }
    if thread.permissions().asks() && !driver.approvals {
        return Err(ThreadError::Unsupported(driver_spi::Unsupported::Approvals));
    }
    let native = thread
        .output_schema
        .as_ref()
        .is_some_and(|s| s.delivery() == driver_spi::SchemaDelivery::Native);
    if native && !driver.structured_output {
        return Err(ThreadError::Unsupported(
            driver_spi::Unsupported::StructuredOutput,
        ));
    }
    Ok(store)
}

/// Step 2: attaches every provider in order for a run of `thread`; on a failure, detaches
/// those attached in reverse and reports the failure redacted.
pub(super) async fn attach_providers(
    thread: &Thread,
    run_id: &RunId,
    cancel: &watch::Receiver<bool>,
) -> Result<(Vec<Arc<dyn RunServiceProvider>>, Vec<RunAttachment>), ThreadError> {
    let inner = &thread.agent.inner;
    let mut attached: Vec<Arc<dyn RunServiceProvider>> = Vec::new();
    let mut attachments: Vec<RunAttachment> = Vec::new();
    let started = Instant::now();
    for (index, provider) in inner.providers.iter().enumerate() {
        if *cancel.borrow() {
            detach_all(&attached, run_id, inner.teardown_budget).await;
            return Err(ThreadError::Cancelled);
        }
        match provider.attach_thread_run(run_id, &thread.key).await {
            Ok(attachment) => {
                tracing::trace!(
                    provider = index,
                    services = attachment.services.len(),
                    "provider attached"
                );
                attached.push(Arc::clone(provider));
                attachments.push(attachment);
            }
            Err(error) => {
                detach_all(&attached, run_id, inner.teardown_budget).await;
                let secrets = attachments.iter().flat_map(secret_values);
                let message = Redactor::with_secrets(secrets)
                    .redact(error.message())
                    .into_owned();
                tracing::debug!(step = "attach", provider = index, "step failed");
                return Err(ThreadError::RunService { index, message });
            }
        }
    }
    tracing::debug!(
        step = "attach",
        providers = attached.len(),
        services = attachments.iter().map(|a| a.services.len()).sum::<usize>(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
    Ok((attached, attachments))
}

/// Steps 2b and 3: validates every attachment and the endpoint policy, builds both views and
/// the run's compatibility identity.
pub(super) fn identity(
    thread: &Thread,
    attachments: &[RunAttachment],
) -> Result<Identity, ThreadError> {
    let inner = &thread.agent.inner;
    let started = Instant::now();
    let views = build_views(attachments, &inner.host_mcp).inspect_err(|_| {
        tracing::debug!(
            step = "validate",
            error = "invalid_attachment",
            "step refused"
        );
    })?;
    if let Some(endpoint) = inner.endpoints.first_refused(
        attachments,
        &inner.host_mcp,
        &inner.driver_info.endpoint_vars,
    ) {
        tracing::debug!(step = "validate", error = "endpoint_refused", %endpoint, "step refused");
        return Err(ThreadError::EndpointRefused { endpoint });
    }
    tracing::debug!(
        step = "validate",
        attachments = attachments.len(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
    let started = Instant::now();
    let breakdown = thread_breakdown(&inner.statics, &views, &thread.permissions());
    let fingerprint = thread_fingerprint(&breakdown);
    tracing::debug!(
        step = "fingerprint",
        fingerprint = %fingerprint.short(),
        components = breakdown.len(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
    Ok(Identity {
        views,
        breakdown,
        fingerprint,
    })
}

/// The secret values an attachment carries, for the run's redactor.
pub(super) fn secret_values(attachment: &RunAttachment) -> Vec<secrecy::SecretString> {
    attachment
        .services
        .iter()
        .flat_map(|s| s.secret_env.iter())
        .map(|b| secrecy::SecretString::from(b.value().expose_secret().to_owned()))
        .collect()
}

/// Detaches in reverse order, within `budget`.
pub(super) async fn detach_all(
    attached: &[Arc<dyn RunServiceProvider>],
    run_id: &RunId,
    budget: Duration,
) {
    let started = Instant::now();
    let detach = async {
        for (index, provider) in attached.iter().enumerate().rev() {
            if provider.detach_run(run_id).await.is_err() {
                tracing::debug!(provider = index, "provider failed to detach");
            } else {
                tracing::trace!(provider = index, "provider detached");
            }
        }
    };
    if tokio::time::timeout(budget, detach).await.is_err() {
        tracing::warn!(
            budget_ms = budget.as_millis() as u64,
            "provider teardown exceeded its budget"
        );
    }
    tracing::debug!(
        step = "detach",
        providers = attached.len(),
        elapsed_us = elapsed_us(started),
        "step finished"
    );
}
