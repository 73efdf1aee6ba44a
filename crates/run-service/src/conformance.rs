//! Provider conformance kit (feature `conformance`): run it against your own provider.
//!
//! The kit speaks the workspace's one kit vocabulary (the `kit-report` crate): you write a
//! [`Factory`], [`run`] judges every [`Clause`] and returns a [`Report`] with a [`Verdict`] per
//! clause, and [`Report::assert_passed`](kit_report::Report::assert_passed) panics naming every
//! clause that did not pass. A failing clause never stops the others.
//!
//! | id | clause |
//! |---|---|
//! | `RS-01` | every attachment validates ([`validate_run`](crate::validate_run())) |
//! | `RS-02` | two providers from the factory, one after the other as across a host restart, give the same compatibility tuple and the same session view, while the concrete endpoint may differ |
//! | `RS-03` | no secret value (the provider's own secret env values, or a factory canary) appears in the compatibility id or fingerprint, or in any `Debug` output |
//! | `RS-04` | no allocation detail (run id, concrete URL) appears in the compatibility id or fingerprint |
//! | `RS-05` | every attach succeeds and can be detached |
//! | `RS-06` | a Thread run ([`attach_thread_run`](crate::RunServiceProvider::attach_thread_run)) validates and gives the same compatibility tuple as a bare run, with no trace of the thread key in it |
//!
//! ```
//! # use std::sync::Arc;
//! # use run_service::{async_trait, RunServiceError, RunAttachment, RunId, RunServiceProvider};
//! # struct Mine;
//! # #[async_trait]
//! # impl RunServiceProvider for Mine {
//! #     async fn attach_run(&self, _: &RunId) -> Result<RunAttachment, RunServiceError> { Ok(RunAttachment::default()) }
//! #     async fn detach_run(&self, _: &RunId) -> Result<(), RunServiceError> { Ok(()) }
//! # }
//! use run_service::conformance::{self, Factory};
//! use secrecy::SecretString;
//!
//! struct MyFactory;
//!
//! #[run_service::async_trait]
//! impl Factory for MyFactory {
//!     async fn create(&self) -> Result<Arc<dyn RunServiceProvider>, RunServiceError> {
//!         Ok(Arc::new(Mine))
//!     }
//!     fn canaries(&self) -> Vec<SecretString> {
//!         vec![SecretString::from("sk-CANARY")]
//!     }
//! }
//!
//! # async fn demo() {
//! conformance::run(&MyFactory).await.assert_passed();
//! # }
//! ```

use std::sync::Arc;

use kit_report::Recorder;
use secrecy::{ExposeSecret, SecretString};

use crate::{
    McpTransport, RunAttachment, RunId, RunServiceError, RunServiceProvider, build_views,
    validate_run,
};

pub use kit_report::Verdict;

/// The result of [`run`]: one [`Verdict`] per [`Clause`].
pub type Report = kit_report::Report<Clause>;

kit_report::clauses! {
    /// One named clause of the provider contract. Every failure names its id ([`Clause::id`],
    /// for example `RS-02`).
    pub enum Clause in "run-service" {
        /// RS-01: every attachment validates.
        Rs01 = "RS-01": "every attachment validates",
        /// RS-02: attaching on two providers, as across a restart, gives the same compatibility
        /// tuple and session view.
        Rs02 = "RS-02": "across a restart: the same compatibility tuple and session view",
        /// RS-03: no secret value appears in the compatibility tuple or in `Debug` output.
        Rs03 = "RS-03": "no secret value in the compatibility tuple or in Debug output",
        /// RS-04: no allocation detail appears in the compatibility tuple.
        Rs04 = "RS-04": "no run id or concrete URL in the compatibility tuple",
        /// RS-05: every attach succeeds and can be detached.
        Rs05 = "RS-05": "every attach succeeds and can be detached",
        /// RS-06: a Thread run validates and gives a bare run's tuple, without the thread key.
        Rs06 = "RS-06": "a Thread run validates and gives a bare run's tuple, keyless",
    }
}

/// Makes the providers the kit checks.
#[async_trait::async_trait]
pub trait Factory: Send + Sync {
    /// A provider with the configuration under test. The kit creates two, one after the
    /// other, as a host restart would, and attaches on each. A factory may hand back one
    /// shared provider twice, when that is how the host runs it.
    async fn create(&self) -> Result<Arc<dyn RunServiceProvider>, RunServiceError>;

    /// The secret values the provider was configured with (API keys, signing keys). RS-03
    /// looks for them, as well as for the secret env values the attachments carry.
    fn canaries(&self) -> Vec<SecretString> {
        Vec::new()
    }

    /// What the report names as checked. The default is the factory's type name.
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_owned()
    }
}

/// A provider that lives across runs is its own factory: both "hosts" get the same one.
#[async_trait::async_trait]
impl Factory for Arc<dyn RunServiceProvider> {
    async fn create(&self) -> Result<Arc<dyn RunServiceProvider>, RunServiceError> {
        Ok(Arc::clone(self))
    }
}

/// The thread key of the kit's Thread run.
const THREAD_KEY: &str = "conformance-thread";

/// Runs every clause against providers from `factory`: attaches `conformance-run-1` on one
/// provider and `conformance-run-2` on a second (as across a restart), then one Thread run
/// (`conformance-run-3` of Thread `conformance-thread`) on the second, and detaches each.
pub async fn run(factory: &dyn Factory) -> Report {
    let mut r = Recorder::new();
    let runs = [
        RunId::new("conformance-run-1"),
        RunId::new("conformance-run-2"),
    ];
    let thread_run = RunId::new("conformance-run-3");

    let mut bare = Vec::new();
    let mut provider = None;
    for run in &runs {
        let created = match factory.create().await {
            Ok(p) => p,
            Err(_) => {
                r.fail_rest("the factory failed to create a provider");
                return r.finish(factory.name());
            }
        };
        if let Some(attachment) = attach_and_detach(&mut r, created.as_ref(), run, None).await {
            bare.push(attachment);
        }
        provider = Some(created);
    }
    let threaded = match &provider {
        Some(p) => attach_and_detach(&mut r, p.as_ref(), &thread_run, Some(THREAD_KEY)).await,
        None => None,
    };
    r.pass(Clause::Rs05);

    for (i, a) in bare.iter().enumerate() {
        r.check(
            Clause::Rs01,
            validate_run(std::slice::from_ref(a), &[]).map_err(|e| format!("attachment {i}: {e}")),
        );
    }
    match bare.as_slice() {
        [first, second] => r.check(Clause::Rs02, same_across_restart(first, second)),
        _ => r.fail(Clause::Rs02, "not checked: an attach failed (see RS-05)"),
    }
    match (&threaded, bare.first()) {
        (Some(threaded), Some(first)) => r.check(Clause::Rs06, thread_run_matches(threaded, first)),
        (None, _) => r.fail(Clause::Rs06, "attach_thread_run failed"),
        (Some(_), None) => r.fail(
            Clause::Rs06,
            "not checked: no bare run attached (see RS-05)",
        ),
    }

    let mut all = bare;
    all.extend(threaded);
    if all.is_empty() {
        r.fail_rest("no attach succeeded (see RS-05)");
        return r.finish(factory.name());
    }
    let mut secrets: Vec<String> = factory
        .canaries()
        .iter()
        .map(|s| s.expose_secret().to_owned())
        .collect();
    for a in &all {
        for s in &a.services {
            secrets.extend(
                s.secret_env
                    .iter()
                    .map(|b| b.value().expose_secret().to_owned()),
            );
        }
    }
    secrets.retain(|s| !s.is_empty());
    let mut allocation: Vec<String> = runs.iter().map(|r| r.as_str().to_owned()).collect();
    allocation.push(thread_run.as_str().to_owned());
    for (i, a) in all.iter().enumerate() {
        r.check(Clause::Rs03, no_secret(i, a, &secrets));
        r.check(Clause::Rs04, no_allocation(i, a, &allocation));
    }
    r.finish(factory.name())
}

/// Attaches `run` (as a Thread run when `thread_key` is given) and detaches it, recording a
/// failure of either under RS-05 (RS-06 for a failed Thread attach).
async fn attach_and_detach(
    r: &mut Recorder<Clause>,
    provider: &dyn RunServiceProvider,
    run: &RunId,
    thread_key: Option<&str>,
) -> Option<RunAttachment> {
    let attached = match thread_key {
        Some(key) => provider.attach_thread_run(run, key).await,
        None => provider.attach_run(run).await,
    };
    let Ok(attachment) = attached else {
        let clause = if thread_key.is_some() {
            Clause::Rs06
        } else {
            Clause::Rs05
        };
        r.fail(clause, format!("attaching {run} failed"));
        return None;
    };
    if provider.detach_run(run).await.is_err() {
        r.fail(Clause::Rs05, format!("detach_run failed for {run}"));
    }
    Some(attachment)
}

fn same_across_restart(first: &RunAttachment, second: &RunAttachment) -> Result<(), String> {
    if first.resume_compatibility != second.resume_compatibility {
        return Err("the compatibility tuple differs between two attachments".into());
    }
    let view = |a: &RunAttachment| build_views(std::slice::from_ref(a), &[]);
    let (v1, v2) = match (view(first), view(second)) {
        (Ok(v1), Ok(v2)) => (v1, v2),
        _ => return Err("not checked: the views do not build (see RS-01)".into()),
    };
    if first.resume_compatibility.is_some() && v1.session != v2.session {
        return Err("the session view differs between two attachments".into());
    }
    Ok(())
}

fn thread_run_matches(threaded: &RunAttachment, bare: &RunAttachment) -> Result<(), String> {
    validate_run(std::slice::from_ref(threaded), &[])
        .map_err(|e| format!("the Thread run's attachment: {e}"))?;
    if threaded.resume_compatibility != bare.resume_compatibility {
        return Err("the compatibility tuple of a Thread run differs from a bare run's".into());
    }
    if let Some(compat) = &threaded.resume_compatibility
        && (compat.id.contains(THREAD_KEY) || compat.fingerprint.contains(THREAD_KEY))
    {
        return Err("the compatibility tuple contains the thread key".into());
    }
    Ok(())
}

fn no_secret(i: usize, a: &RunAttachment, secrets: &[String]) -> Result<(), String> {
    let debug = format!("{a:?}");
    if secrets.iter().any(|s| debug.contains(s.as_str())) {
        return Err(format!(
            "attachment {i}: Debug output contains a secret value"
        ));
    }
    if let Some(compat) = &a.resume_compatibility
        && secrets
            .iter()
            .any(|s| compat.id.contains(s.as_str()) || compat.fingerprint.contains(s.as_str()))
    {
        return Err(format!(
            "attachment {i}: the compatibility tuple contains a secret value"
        ));
    }
    Ok(())
}

fn no_allocation(i: usize, a: &RunAttachment, run_ids: &[String]) -> Result<(), String> {
    let Some(compat) = &a.resume_compatibility else {
        return Ok(());
    };
    let mut allocation: Vec<&str> = run_ids.iter().map(String::as_str).collect();
    for s in &a.services {
        allocation.extend(s.url.as_deref());
        if let Some(McpTransport::StreamableHttp { url, .. } | McpTransport::Sse { url, .. }) =
            s.mcp.as_ref().map(|m| &m.transport)
        {
            allocation.push(url);
        }
    }
    if allocation
        .iter()
        .any(|v| compat.id.contains(v) || compat.fingerprint.contains(v))
    {
        return Err(format!(
            "attachment {i}: the compatibility tuple contains a run id or URL"
        ));
    }
    Ok(())
}
