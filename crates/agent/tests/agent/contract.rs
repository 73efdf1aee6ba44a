//! The root and Thread contract of the proposal: restart, rebind, reject, fail closed.

use agent::{SessionOutcome, ThreadError};
use driver_spi::reference::ReferenceBackend;

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, host, semantic_fingerprint};

#[tokio::test]
async fn unchanged_semantic_identity_resumes_across_restart_with_new_endpoint() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();

    let provider_a = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent1 = host(
        file.open().await,
        &backend,
        std::slice::from_ref(&provider_a),
    );
    let first = agent1.thread("t").run("first").await.unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    let first_request = backend.last_request().unwrap();
    agent1.close().await;
    drop(agent1);

    let provider_b = RotatingProvider::new(ProviderSpec::semantic(2));
    let agent2 = host(
        file.open().await,
        &backend,
        std::slice::from_ref(&provider_b),
    );
    let second = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap();
    assert_eq!(second.session, SessionOutcome::Resumed);

    // The resumed driver received the new URL, MCP declaration, env name and rotated secret.
    let b = provider_b.allocation(0);
    let recorded = backend.last_request().unwrap();
    let request = recorded.request();
    assert_eq!(
        request.runtime.services[0].url.as_deref(),
        Some(b.url.as_str())
    );
    let mcp = &request.mcp[0];
    assert!(format!("{mcp:?}").contains(&b.url));
    assert!(format!("{mcp:?}").contains(&b.env_name));
    assert_eq!(recorded.secret_env_names(), vec![b.env_name.as_str()]);
    assert_eq!(
        recorded.expose_secret_env(&b.env_name).as_deref(),
        Some(b.token.as_str())
    );
    let a = provider_a.allocation(0);
    assert!(
        recorded.expose_secret_env(&a.env_name).is_none(),
        "no stale credential"
    );

    // Concrete profile fingerprint changed; the session-compatibility one did not.
    let before = first_request.request().profile;
    assert_ne!(before.exact, request.profile.exact);
    assert_eq!(
        before.session_compatibility,
        request.profile.session_compatibility
    );
    assert_eq!(
        agent2
            .thread("t")
            .checkpoint()
            .await
            .unwrap()
            .unwrap()
            .resume_id,
        first_request_resume(&backend)
    );
}

fn first_request_resume(backend: &ReferenceBackend) -> String {
    backend.session_ids().unwrap().into_iter().next().unwrap()
}

#[tokio::test]
async fn changed_fingerprint_rejects_before_the_driver_runs() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;

    let changed = ProviderSpec::semantic(2).with_fingerprint(semantic_fingerprint("2", "tenant-a"));
    let agent2 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(changed)],
    );
    let before = backend.request_count();
    let err = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap_err();
    let incompatibility = err.incompatibility().expect("incompatible");
    assert!(
        incompatibility.names_prefix("attachment.semantic:"),
        "{err}"
    );
    assert_eq!(backend.request_count(), before, "the driver never ran");
}

#[tokio::test]
async fn nil_compatibility_keeps_endpoint_changes_incompatible() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::exact(1))],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;

    let agent2 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::exact(2))],
    );
    let before = backend.request_count();
    let err = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Incompatible { .. }), "{err}");
    assert!(
        err.incompatibility()
            .unwrap()
            .names_prefix("attachment.exact:")
    );
    assert_eq!(backend.request_count(), before);

    // Continue-or-start archives and starts over, saying why.
    let restarted = agent2.thread("t").run("again").await.unwrap();
    assert!(matches!(
        restarted.session,
        SessionOutcome::Restarted { .. }
    ));
}

#[tokio::test]
async fn one_semantic_plus_one_exact_attachment_rejects_exact_changes() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let exact = |g| {
        let mut spec = ProviderSpec::exact(g);
        spec.service = "search".into();
        RotatingProvider::new(spec)
    };
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1)), exact(1)],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;

    let agent2 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(2)), exact(2)],
    );
    let err = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap_err();
    let inc = err.incompatibility().unwrap();
    assert!(inc.names_prefix("attachment.exact:"), "{err}");
    assert!(
        !inc.names_prefix("attachment.semantic:"),
        "the semantic attachment is unchanged: {err}"
    );
}

#[tokio::test]
async fn resume_only_with_nothing_stored_is_not_found() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent = host(file.open().await, &backend, &[]);
    let err = agent
        .thread("nothing")
        .resume_only()
        .run("x")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::NotFound { .. }), "{err}");
    assert_eq!(backend.request_count(), 0);
}

#[tokio::test]
async fn fork_honours_semantic_identity_and_requires_a_free_key() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    let parent = agent1.thread("parent");
    parent.run("first").await.unwrap();
    agent1.close().await;

    // A restarted host with a new port and token may fork: the parent check uses the
    // session view too.
    let agent2 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(2))],
    );
    let forked = agent2
        .thread("parent")
        .fork("child")
        .run("branch")
        .await
        .unwrap();
    assert!(matches!(forked.session, SessionOutcome::Forked { .. }));
    let child = agent2.thread("child").checkpoint().await.unwrap().unwrap();
    let parent_cp = agent2.thread("parent").checkpoint().await.unwrap().unwrap();
    assert_ne!(child.resume_id, parent_cp.resume_id);
    let again = agent2
        .thread("parent")
        .fork("child")
        .run("branch")
        .await
        .unwrap_err();
    assert!(
        matches!(again, ThreadError::AlreadyExists { .. }),
        "{again}"
    );

    // A real semantic change refuses the fork before the driver runs.
    let changed = ProviderSpec::semantic(3).with_fingerprint(semantic_fingerprint("9", "tenant-a"));
    let agent3 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(changed)],
    );
    let err = agent3
        .thread("parent")
        .fork("child-2")
        .run("branch")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Incompatible { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_resumes_with_new_endpoint_across_two_agents() {
    use std::sync::Arc;
    use thread_store::ThreadStore;
    use thread_store::postgres::{PostgresConfig, PostgresStore};
    let url = std::env::var("THREAD_STORE_POSTGRES_URL")
        .expect("THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test cannot run (run with --skip postgres to skip it visibly)");
    let schema = format!("agent_restart_{}", uuid::Uuid::now_v7().simple());
    let open = || async {
        let config = PostgresConfig::from_url(&url, &schema).unwrap();
        Arc::new(PostgresStore::connect(config).await.unwrap()) as Arc<dyn ThreadStore>
    };
    let backend = ReferenceBackend::new();
    let agent1 = host(
        open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;
    drop(agent1);

    let provider = RotatingProvider::new(ProviderSpec::semantic(2));
    let agent2 = host(open().await, &backend, std::slice::from_ref(&provider));
    let resumed = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap();
    assert_eq!(resumed.session, SessionOutcome::Resumed);
    let b = provider.allocation(0);
    let recorded = backend.last_request().unwrap();
    assert_eq!(
        recorded.expose_secret_env(&b.env_name).as_deref(),
        Some(b.token.as_str())
    );

    let changed = ProviderSpec::semantic(3).with_fingerprint(semantic_fingerprint("2", "tenant-a"));
    let agent3 = host(open().await, &backend, &[RotatingProvider::new(changed)]);
    let err = agent3
        .thread("t")
        .resume_only()
        .run("third")
        .await
        .unwrap_err();
    assert!(
        err.incompatibility()
            .unwrap()
            .names_prefix("attachment.semantic:"),
        "{err}"
    );

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}

/// Compatibility is decided by the tuple alone: not by the provider's type, its service name,
/// its reuse key, or the loopback shape of its URL.
#[tokio::test]
async fn nothing_but_the_tuple_decides_compatibility() {
    use run_service::{RunAttachment, RunId, RunServiceError, RunServiceProvider, async_trait};
    use std::sync::Arc;

    /// Another provider type that hands out the same tuple under another service name.
    #[derive(Debug)]
    struct Other(Arc<RotatingProvider>);
    #[async_trait]
    impl RunServiceProvider for Other {
        async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
            self.0.attach_run(run).await
        }
        async fn detach_run(&self, run: &RunId) -> Result<(), RunServiceError> {
            self.0.detach_run(run).await
        }
    }

    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;

    // Another type, another service name and MCP key, another reuse key, a non-loopback URL:
    // still the same tuple, so the session view is the same and the Thread resumes.
    let mut spec = ProviderSpec::semantic(2);
    spec.service = "renamed-ui".into();
    let other = Arc::new(Other(RotatingProvider::new(spec)));
    let agent2 = agent::Agent::builder(Arc::new(
        driver_spi::reference::ReferenceDriver::with_backend(backend.clone()),
    ))
    .store(file.open().await)
    .model("model-1")
    .workspace("/work/project")
    .run_service(other)
    .build()
    .unwrap();
    agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap();
    agent2.close().await;

    // Without a tuple, the same service name, MCP key and provider type do not make a restart
    // compatible: only the exact data counts.
    let agent3 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::exact(3))],
    );
    agent3.thread("x").run("first").await.unwrap();
    agent3.close().await;
    let agent4 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::exact(4))],
    );
    let err = agent4
        .thread("x")
        .resume_only()
        .run("second")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Incompatible { .. }), "{err}");
}

#[tokio::test]
async fn provider_order_does_not_change_compatibility() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let named = |g: u16, service: &str| {
        let mut spec = ProviderSpec::semantic(g);
        spec.service = service.into();
        spec.compat = Some((
            format!("com.example.{service}"),
            semantic_fingerprint("1", "tenant-a"),
        ));
        RotatingProvider::new(spec)
    };
    let agent1 = host(
        file.open().await,
        &backend,
        &[named(1, "ui"), named(1, "search")],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;
    // The restarted host lists its providers the other way round.
    let agent2 = host(
        file.open().await,
        &backend,
        &[named(2, "search"), named(2, "ui")],
    );
    let resumed = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap();
    assert_eq!(resumed.session, SessionOutcome::Resumed);
    // The concrete request keeps the current provider order.
    let services: Vec<String> = backend
        .last_request()
        .unwrap()
        .request()
        .runtime
        .services
        .iter()
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(services, ["search", "ui"]);
}
