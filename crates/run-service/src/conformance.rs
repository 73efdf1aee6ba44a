//! Provider conformance kit (feature `conformance`): run it against your own provider.
//!
//! Each clause has an id; a failure names it. The clauses:
//!
//! | id | clause |
//! |---|---|
//! | `RS-01` | every attachment validates ([`validate_run`](crate::validate_run())) |
//! | `RS-02` | attaching twice, as across a restart, gives the same compatibility tuple and the same session view, while the concrete endpoint may differ |
//! | `RS-03` | no secret value (the provider's own secret env values, or a caller canary) appears in the compatibility id or fingerprint, or in any `Debug` output |
//! | `RS-04` | no allocation detail (run id, concrete URL) appears in the compatibility id or fingerprint |
//! | `RS-05` | every successful attach can be detached |
//! | `RS-06` | a Thread run ([`attach_thread_run`](crate::RunServiceProvider::attach_thread_run)) validates and gives the same compatibility tuple as a bare run, with no trace of the thread key in it |
//!
//! ```
//! # use run_service::{async_trait, ProviderError, RunAttachment, RunId, RunServiceProvider};
//! # struct Mine;
//! # #[async_trait]
//! # impl RunServiceProvider for Mine {
//! #     async fn attach_run(&self, _: &RunId) -> Result<RunAttachment, ProviderError> { Ok(RunAttachment::default()) }
//! #     async fn detach_run(&self, _: &RunId) -> Result<(), ProviderError> { Ok(()) }
//! # }
//! # async fn demo() {
//! use run_service::conformance::{check_provider, KitOptions};
//! let report = check_provider(&Mine, &KitOptions::default().canary("sk-CANARY")).await.unwrap();
//! assert!(report.clauses_passed >= 6);
//! # }
//! ```

use std::fmt;

use secrecy::ExposeSecret;

use crate::{McpTransport, RunId, RunServiceProvider, build_views, validate_run};

/// Options of one kit run.
#[derive(Debug, Clone, Default)]
pub struct KitOptions {
    canaries: Vec<String>,
}

impl KitOptions {
    /// Adds a canary: a secret value the provider was configured with, which must never appear
    /// in the compatibility tuple or in `Debug` output.
    pub fn canary(mut self, value: impl Into<String>) -> Self {
        self.canaries.push(value.into());
        self
    }
}

/// A clause that failed. Its message names the clause and never reproduces a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{clause} failed: {message}")]
pub struct KitFailure {
    /// The clause id, for example `RS-02`.
    pub clause: &'static str,
    /// What went wrong.
    pub message: String,
}

/// A passing run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KitReport {
    /// How many clauses passed.
    pub clauses_passed: usize,
    /// Whether the provider opted into semantic resume compatibility.
    pub opted_in: bool,
}

impl fmt::Display for KitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} clauses passed (opted in: {})",
            self.clauses_passed, self.opted_in
        )
    }
}

fn fail(clause: &'static str, message: impl Into<String>) -> KitFailure {
    KitFailure {
        clause,
        message: message.into(),
    }
}

/// The thread key of the kit's Thread run.
const THREAD_KEY: &str = "conformance-thread";

/// Runs every clause against `provider`. Attaches two runs (`conformance-run-1` and
/// `conformance-run-2`, one after the other, as across a restart) and one Thread run
/// (`conformance-run-3` of Thread `conformance-thread`), and detaches each.
pub async fn check_provider(
    provider: &dyn RunServiceProvider,
    options: &KitOptions,
) -> Result<KitReport, KitFailure> {
    let runs = [
        RunId::new("conformance-run-1"),
        RunId::new("conformance-run-2"),
    ];
    let mut attachments = Vec::new();
    for run in &runs {
        let attachment = provider
            .attach_run(run)
            .await
            .map_err(|_| fail("RS-05", format!("attach_run failed for {run}")))?;
        provider
            .detach_run(run)
            .await
            .map_err(|_| fail("RS-05", format!("detach_run failed for {run}")))?;
        attachments.push(attachment);
    }
    let thread_run = RunId::new("conformance-run-3");
    let threaded = provider
        .attach_thread_run(&thread_run, THREAD_KEY)
        .await
        .map_err(|_| fail("RS-06", "attach_thread_run failed"))?;
    provider
        .detach_run(&thread_run)
        .await
        .map_err(|_| fail("RS-05", format!("detach_run failed for {thread_run}")))?;

    for (i, a) in attachments.iter().enumerate() {
        validate_run(std::slice::from_ref(a), &[])
            .map_err(|e| fail("RS-01", format!("attachment {i}: {e}")))?;
    }

    let (first, second) = (&attachments[0], &attachments[1]);
    if first.resume_compatibility != second.resume_compatibility {
        return Err(fail(
            "RS-02",
            "the compatibility tuple differs between two attachments",
        ));
    }
    let v1 =
        build_views(std::slice::from_ref(first), &[]).map_err(|e| fail("RS-01", e.to_string()))?;
    let v2 =
        build_views(std::slice::from_ref(second), &[]).map_err(|e| fail("RS-01", e.to_string()))?;
    if first.resume_compatibility.is_some() && v1.session != v2.session {
        return Err(fail(
            "RS-02",
            "the session view differs between two attachments",
        ));
    }

    validate_run(std::slice::from_ref(&threaded), &[])
        .map_err(|e| fail("RS-06", format!("the Thread run's attachment: {e}")))?;
    if threaded.resume_compatibility != attachments[0].resume_compatibility {
        return Err(fail(
            "RS-06",
            "the compatibility tuple of a Thread run differs from a bare run's",
        ));
    }
    if let Some(compat) = &threaded.resume_compatibility
        && (compat.id.contains(THREAD_KEY) || compat.fingerprint.contains(THREAD_KEY))
    {
        return Err(fail(
            "RS-06",
            "the compatibility tuple contains the thread key",
        ));
    }
    let opted_in = first.resume_compatibility.is_some();
    attachments.push(threaded);

    let mut secrets: Vec<String> = options.canaries.clone();
    for a in &attachments {
        for s in &a.services {
            secrets.extend(
                s.secret_env
                    .iter()
                    .map(|b| b.value().expose_secret().to_owned()),
            );
        }
    }
    secrets.retain(|s| !s.is_empty());
    for (i, a) in attachments.iter().enumerate() {
        let debug = format!("{a:?}");
        if secrets.iter().any(|s| debug.contains(s.as_str())) {
            return Err(fail(
                "RS-03",
                format!("attachment {i}: Debug output contains a secret value"),
            ));
        }
        let Some(compat) = &a.resume_compatibility else {
            continue;
        };
        if secrets
            .iter()
            .any(|s| compat.id.contains(s.as_str()) || compat.fingerprint.contains(s.as_str()))
        {
            return Err(fail(
                "RS-03",
                format!("attachment {i}: the compatibility tuple contains a secret value"),
            ));
        }
        let mut allocation: Vec<&str> = runs.iter().map(RunId::as_str).collect();
        allocation.push(thread_run.as_str());
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
            return Err(fail(
                "RS-04",
                format!("attachment {i}: the compatibility tuple contains a run id or URL"),
            ));
        }
    }

    Ok(KitReport {
        clauses_passed: 6,
        opted_in,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn failure_display_names_the_clause() {
        assert_eq!(super::fail("RS-02", "x").to_string(), "RS-02 failed: x");
    }
}
