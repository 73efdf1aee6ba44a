//! The proposal's robustness matrix, one row per line, as one table-driven test.

use std::future::Future;
use std::pin::Pin;

use agent::{SessionOutcome, ThreadError};
use driver_spi::reference::ReferenceBackend;
use run_service::conformance::{self, Clause};
use run_service::{McpServer, Reason};
use secrecy::ExposeSecret;

use test_support::host::{
    ProviderSpec, RotatingProvider, SqliteFile, host, host_with, semantic_fingerprint,
};

type Check = fn() -> Pin<Box<dyn Future<Output = Result<(), String>>>>;

/// `(case, expected result, check)`, in the proposal's order.
const MATRIX: &[(&str, &str, Check)] = &[
    (
        "Same capability, new port/token",
        "Resume; new concrete request applied",
        || Box::pin(same_capability_new_port()),
    ),
    (
        "Same token shape, different tenant/scope",
        "Fingerprint changes; incompatible",
        || Box::pin(different_scope()),
    ),
    (
        "Same endpoint, changed tool schema",
        "Fingerprint changes; incompatible",
        || Box::pin(changed_tool_schema()),
    ),
    (
        "Provider omits compatibility",
        "Exact concrete behavior",
        || Box::pin(omitted_compatibility()),
    ),
    (
        "Duplicate compatibility ID",
        "Typed pre-launch validation error",
        || Box::pin(duplicate_id()),
    ),
    (
        "Persistent process keeps old env",
        "Process recycled; never dispatch with stale auth",
        || Box::pin(stale_process()),
    ),
    (
        "Provider puts secret in a field",
        "No value echoed or persisted; conformance fails",
        || Box::pin(secret_in_field()),
    ),
    (
        "Non-owned MCP server changes",
        "Incompatible; no accidental normalization",
        || Box::pin(non_owned_mcp()),
    ),
];

#[tokio::test]
async fn robustness_matrix() {
    let mut failures = Vec::new();
    for (case, expected, check) in MATRIX {
        if let Err(why) = check().await {
            failures.push(format!("{case} (expected: {expected}): {why}"));
        }
    }
    assert_eq!(MATRIX.len(), 8, "one row per line of the proposal's matrix");
    assert!(
        failures.is_empty(),
        "matrix rows failed:\n{}",
        failures.join("\n")
    );
}

fn ensure(cond: bool, why: impl Into<String>) -> Result<(), String> {
    if cond { Ok(()) } else { Err(why.into()) }
}

/// Runs `first` on one host, `second` on a restarted host over the same SQLite file, and
/// returns the resume-only outcome with the backend.
async fn restart(
    first: ProviderSpec,
    second: ProviderSpec,
) -> (
    Result<agent::RunResult, ThreadError>,
    ReferenceBackend,
    std::sync::Arc<RotatingProvider>,
) {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let a1 = host(file.open().await, &backend, &[RotatingProvider::new(first)]);
    a1.thread("t").run("first").await.expect("first run");
    a1.close().await;
    let p2 = RotatingProvider::new(second);
    let a2 = host(file.open().await, &backend, std::slice::from_ref(&p2));
    let outcome = a2.thread("t").resume_only().run("second").await;
    (outcome, backend, p2)
}

async fn same_capability_new_port() -> Result<(), String> {
    let (outcome, backend, p2) =
        restart(ProviderSpec::semantic(1), ProviderSpec::semantic(2)).await;
    let result = outcome.map_err(|e| e.to_string())?;
    ensure(result.session == SessionOutcome::Resumed, "did not resume")?;
    let b = p2.allocation(0);
    let last = backend.last_request().ok_or("no request")?;
    ensure(
        last.request().runtime.services[0].url.as_deref() == Some(b.url.as_str()),
        "stale URL",
    )?;
    ensure(
        last.expose_secret_env(&b.env_name).as_deref() == Some(b.token.as_str()),
        "stale token",
    )
}

async fn expect_incompatible(second: ProviderSpec, prefix: &str) -> Result<(), String> {
    let (outcome, backend, _) = restart(ProviderSpec::semantic(1), second).await;
    let before = backend.request_count();
    match outcome {
        Err(ThreadError::Incompatible {
            incompatibility, ..
        }) if incompatibility.names_prefix(prefix) => {
            ensure(backend.request_count() == before, "driver ran")
        }
        other => Err(format!(
            "expected Incompatible naming {prefix}, got {other:?}"
        )),
    }
}

async fn different_scope() -> Result<(), String> {
    let second = ProviderSpec::semantic(2).with_fingerprint(semantic_fingerprint("1", "tenant-b"));
    expect_incompatible(second, "attachment.semantic:").await
}

async fn changed_tool_schema() -> Result<(), String> {
    let mut second = ProviderSpec::semantic(2);
    // Same endpoint as the first host, different tool schema.
    second.base_port = ProviderSpec::semantic(1).base_port;
    let schema_v2 = run_service::SemanticFingerprint::new()
        .service_role("agent-ui")
        .mcp_server("agent-ui", run_service::TransportKind::StreamableHttp, true)
        .tool(
            "ask_user",
            &serde_json::json!({"type": "object", "required": ["question"]}),
            "1",
        )
        .authorization("bearer", "tenant-a")
        .finish();
    expect_incompatible(second.with_fingerprint(schema_v2), "attachment.semantic:").await
}

async fn omitted_compatibility() -> Result<(), String> {
    let (outcome, _, _) = restart(ProviderSpec::exact(1), ProviderSpec::exact(2)).await;
    match outcome {
        Err(ThreadError::Incompatible {
            incompatibility, ..
        }) if incompatibility.names_prefix("attachment.exact:") => Ok(()),
        other => Err(format!("expected exact incompatibility, got {other:?}")),
    }
}

async fn duplicate_id() -> Result<(), String> {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let one = RotatingProvider::new(ProviderSpec::semantic(1));
    let mut spec = ProviderSpec::semantic(1);
    spec.service = "other-ui".into();
    let two = RotatingProvider::new(spec);
    let agent = host(file.open().await, &backend, &[one.clone(), two.clone()]);
    match agent.thread("t").run("x").await {
        Err(ThreadError::InvalidAttachment(e))
            if e.reason() == Reason::DuplicateCompatibilityId =>
        {
            ensure(backend.request_count() == 0, "driver ran")?;
            ensure(
                one.live_runs() == 0 && two.live_runs() == 0,
                "providers not detached",
            )
        }
        other => Err(format!("expected DuplicateCompatibilityId, got {other:?}")),
    }
}

async fn stale_process() -> Result<(), String> {
    // One host, two runs: every attach rotates the port, env name and token.
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host(file.open().await, &backend, std::slice::from_ref(&provider));
    let first = agent
        .thread("t")
        .run("first")
        .await
        .map_err(|e| e.to_string())?;
    let second = agent
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .map_err(|e| e.to_string())?;
    ensure(second.session == SessionOutcome::Resumed, "did not resume")?;
    let stats = backend.process_stats();
    ensure(
        stats.replaced == 1,
        format!("expected one replacement, got {stats:?}"),
    )?;
    let deliveries = backend.deliveries();
    let process_of = |run: &run_service::RunId| {
        deliveries
            .iter()
            .find(|d| &d.run_id == run)
            .map(|d| d.process_id)
    };
    ensure(
        process_of(&first.run_id) != process_of(&second.run_id),
        "prompt went to the stale process",
    )?;
    ensure(
        backend.deliveries_of(&second.run_id) == 1,
        "prompt delivered more than once",
    )?;
    let materialized = backend.last_materialization().ok_or("no materialization")?;
    let text = materialized.expose_secret();
    let (old, new) = (provider.allocation(0), provider.allocation(1));
    ensure(
        text.contains(&new.token) && text.contains(&new.url),
        "new endpoint not applied",
    )?;
    ensure(
        !text.contains(&old.token) && !text.contains(&old.url),
        "stale endpoint or credential applied",
    )
}

async fn secret_in_field() -> Result<(), String> {
    /// A provider that (wrongly) derives its fingerprint from its token.
    #[derive(Debug)]
    struct Leaky(std::sync::Arc<RotatingProvider>);
    #[run_service::async_trait]
    impl run_service::RunServiceProvider for Leaky {
        async fn attach_run(
            &self,
            run: &run_service::RunId,
        ) -> Result<run_service::RunAttachment, run_service::RunServiceError> {
            let mut attachment = self.0.attach_run(run).await?;
            let token = attachment.services[0].secret_env[0]
                .value()
                .expose_secret()
                .to_owned();
            if let Some(compat) = &mut attachment.resume_compatibility {
                compat.fingerprint = format!("fp-{token}");
            }
            Ok(attachment)
        }
        async fn detach_run(
            &self,
            run: &run_service::RunId,
        ) -> Result<(), run_service::RunServiceError> {
            self.0.detach_run(run).await
        }
    }
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let inner = RotatingProvider::new(ProviderSpec::semantic(1));
    let leaky = std::sync::Arc::new(Leaky(inner.clone()));
    let make = |store| {
        let driver = std::sync::Arc::new(driver_spi::reference::ReferenceDriver::with_backend(
            backend.clone(),
        ));
        agent::Agent::builder(driver)
            .store(store)
            .run_service(leaky.clone())
            .build()
            .unwrap()
    };
    let a1 = make(file.open().await);
    a1.thread("t")
        .run("first")
        .await
        .map_err(|e| e.to_string())?;
    let err = a1
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .err()
        .ok_or("resumed on a lying tuple")?;
    let tokens = [inner.allocation(0).token, inner.allocation(1).token];
    let shown = format!("{err} {err:?}");
    ensure(
        tokens.iter().all(|t| !shown.contains(t.as_str())),
        "token echoed in the error",
    )?;
    a1.close().await;
    let bytes = std::fs::read(file.path()).map_err(|e| e.to_string())?;
    let wal = std::fs::read(file.path().with_extension("db-wal")).unwrap_or_default();
    for t in &tokens {
        let needle = t.as_bytes();
        let found = bytes.windows(needle.len()).any(|w| w == needle)
            || wal.windows(needle.len()).any(|w| w == needle);
        ensure(!found, "token persisted in the store")?;
    }
    let leaky: std::sync::Arc<dyn run_service::RunServiceProvider> = leaky;
    let report = conformance::run(&leaky).await;
    if report.failed(Clause::Rs02) || report.failed(Clause::Rs03) {
        Ok(())
    } else {
        Err(format!("conformance should fail RS-02 or RS-03:\n{report}"))
    }
}

async fn non_owned_mcp() -> Result<(), String> {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    // The host's own server looks like the provider's (same shape of name and URL) and moves.
    let host_server = |port: u16| {
        McpServer::streamable_http("agent-ui-host", format!("http://127.0.0.1:{port}/mcp"))
    };
    let a1 = host_with(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
        |b| b.mcp_server(host_server(4100)),
    );
    a1.thread("t")
        .run("first")
        .await
        .map_err(|e| e.to_string())?;
    a1.close().await;
    let a2 = host_with(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(2))],
        |b| b.mcp_server(host_server(4200)),
    );
    match a2.thread("t").resume_only().run("second").await {
        Err(ThreadError::Incompatible {
            incompatibility, ..
        }) => {
            ensure(
                incompatibility.names_prefix("mcp:"),
                "host server not named",
            )?;
            ensure(
                !incompatibility.names_prefix("attachment."),
                "the provider's attachment was unchanged",
            )
        }
        other => Err(format!("expected Incompatible, got {other:?}")),
    }
}
