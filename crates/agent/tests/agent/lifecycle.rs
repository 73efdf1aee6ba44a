//! Cleanup and failure paths: providers are detached on every path, nothing is persisted
//! unless the run succeeded with a valid checkpoint, and teardown is bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent::{Agent, SessionOutcome, ThreadError};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use driver_spi::{FailureKind, ResumeRejectReason};
use run_service::{RunAttachment, RunId, RunServiceError, RunServiceProvider, async_trait};
use thread_store::memory::MemoryStore;

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, host, host_with};

/// Records the order of attach and detach calls across providers.
#[derive(Debug)]
struct Ordered {
    name: &'static str,
    log: Arc<std::sync::Mutex<Vec<String>>>,
    fail_attach: bool,
    hang_detach: bool,
}

#[async_trait]
impl RunServiceProvider for Ordered {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("attach {}", self.name));
        if self.fail_attach {
            return Err(RunServiceError::new(
                "no port left; token=tok-CANARY-attach",
            ));
        }
        Ok(RunAttachment::default())
    }
    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("detach {}", self.name));
        if self.hang_detach {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

fn ordered(name: &'static str, log: &Arc<std::sync::Mutex<Vec<String>>>) -> Ordered {
    Ordered {
        name,
        log: log.clone(),
        fail_attach: false,
        hang_detach: false,
    }
}

fn agent_with(providers: Vec<Arc<dyn RunServiceProvider>>, backend: &ReferenceBackend) -> Agent {
    let mut b = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()));
    for p in providers {
        b = b.run_service(p);
    }
    b.teardown_budget(Duration::from_millis(200))
        .build()
        .unwrap()
}

/// `AgentBuilder::provider`, the name of `run_service` before issue 40, still adds a
/// run-service provider, so a host's code keeps compiling (with a deprecation warning).
#[tokio::test]
async fn the_deprecated_provider_method_still_adds_a_run_service_provider() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let backend = ReferenceBackend::new();
    #[allow(deprecated, reason = "the alias under test")]
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(MemoryStore::new()))
        .provider(Arc::new(ordered("old", &log)))
        .build()
        .unwrap();
    agent.thread("t").run("x").await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["attach old", "detach old"]);
}

#[tokio::test]
async fn a_failing_provider_unwinds_earlier_ones_in_reverse_and_redacts() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let backend = ReferenceBackend::new();
    let agent = agent_with(
        vec![
            Arc::new(ordered("a", &log)),
            Arc::new(ordered("b", &log)),
            Arc::new(Ordered {
                fail_attach: true,
                ..ordered("c", &log)
            }),
            Arc::new(ordered("d", &log)),
        ],
        &backend,
    );
    let err = agent.thread("t").run("x").await.unwrap_err();
    assert!(
        matches!(err, ThreadError::RunService { index: 2, .. }),
        "{err}"
    );
    assert!(
        !err.to_string().contains("tok-CANARY-attach"),
        "provider text is redacted: {err}"
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["attach a", "attach b", "attach c", "detach b", "detach a"]
    );
    assert_eq!(backend.request_count(), 0);
}

#[tokio::test]
async fn validation_failure_detaches_everything_and_never_launches() {
    let backend = ReferenceBackend::new();
    let one = RotatingProvider::new(ProviderSpec::semantic(1));
    let mut spec = ProviderSpec::semantic(2);
    spec.compat = Some(("com.example.other".into(), "   ".into()));
    spec.service = "other".into();
    let two = RotatingProvider::new(spec);
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        &[one.clone(), two.clone()],
    );
    let err = agent.thread("t").run("x").await.unwrap_err();
    assert!(matches!(err, ThreadError::InvalidAttachment(_)), "{err}");
    assert_eq!((one.live_runs(), two.live_runs()), (0, 0));
    assert_eq!(backend.request_count(), 0);
    assert!(agent.thread("t").checkpoint().await.unwrap().is_none());
}

#[tokio::test]
async fn a_hung_provider_cannot_stall_teardown_or_close() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let backend = ReferenceBackend::new();
    let agent = agent_with(
        vec![Arc::new(Ordered {
            hang_detach: true,
            ..ordered("hung", &log)
        })],
        &backend,
    );
    let started = Instant::now();
    agent.thread("t").run("x").await.unwrap();
    agent.close().await;
    agent.close().await; // idempotent
    // Bounded by the 200 ms budget, not by the provider (which never returns).
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(
        agent.thread("t").run("y").await,
        Err(ThreadError::Closed)
    ));
}

#[tokio::test]
async fn driver_failure_persists_nothing_and_reports_redacted() {
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
    );
    backend.push_behavior(Behavior::Fail(FailureKind::RateLimited));
    let err = agent.thread("t").run("x").await.unwrap_err();
    assert!(
        matches!(
            err,
            ThreadError::Driver {
                kind: FailureKind::RateLimited,
                ..
            }
        ),
        "{err}"
    );
    assert!(agent.thread("t").checkpoint().await.unwrap().is_none());
    backend.push_behavior(Behavior::FailedResponse(FailureKind::Process));
    let err = agent.thread("t").run("x").await.unwrap_err();
    assert!(
        matches!(
            err,
            ThreadError::Driver {
                kind: FailureKind::Process,
                ..
            }
        ),
        "{err}"
    );
    assert!(agent.thread("t").checkpoint().await.unwrap().is_none());
    assert_eq!(provider.live_runs(), 0);
}

#[tokio::test]
async fn resume_rejection_restarts_or_refuses_by_mode() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    let first = agent.thread("t").run("one").await.unwrap();
    let before = agent.thread("t").checkpoint().await.unwrap().unwrap();

    backend.push_behavior(Behavior::RejectResume(ResumeRejectReason::Expired));
    let err = agent
        .thread("t")
        .resume_only()
        .run("two")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ThreadError::ResumeRejected {
                reason: ResumeRejectReason::Expired
            }
        ),
        "{err}"
    );
    assert_eq!(
        agent.thread("t").checkpoint().await.unwrap().unwrap(),
        before,
        "nothing persisted"
    );

    backend.push_behavior(Behavior::RejectResume(ResumeRejectReason::UnknownSession));
    let restarted = agent.thread("t").run("three").await.unwrap();
    assert_eq!(restarted.session, SessionOutcome::RestartedAfterRejection);
    let after = agent.thread("t").checkpoint().await.unwrap().unwrap();
    assert_ne!(
        after.record_id, before.record_id,
        "a new record replaced the archived one"
    );
    assert_ne!(Some(after.record_id), first.record_id);
}

#[tokio::test]
async fn store_required_and_bad_keys_are_typed() {
    let backend = ReferenceBackend::new();
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .build()
        .unwrap();
    assert!(matches!(
        agent.thread("t").run("x").await,
        Err(ThreadError::StoreRequired)
    ));
    let agent = host(Arc::new(MemoryStore::new()), &backend, &[]);
    for key in ["", "  ", "a\0b", &"k".repeat(600)] {
        assert!(
            matches!(
                agent.thread(key).run("x").await,
                Err(ThreadError::InvalidKey { .. })
            ),
            "{key:?}"
        );
    }
    assert_eq!(backend.request_count(), 0);
}

#[tokio::test]
async fn providers_are_deduplicated_and_attach_in_order() {
    let backend = ReferenceBackend::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host_with(
        Arc::new(MemoryStore::new()),
        &backend,
        &[provider.clone(), provider.clone()],
        |b| b,
    );
    agent.thread("t").run("x").await.unwrap();
    assert_eq!(
        provider.attached.load(Ordering::SeqCst),
        1,
        "the same provider attaches once"
    );
    assert_eq!(provider.detached.load(Ordering::SeqCst), 1);
    drop(calls);
}

#[tokio::test]
async fn a_stream_numbers_events_and_ends_with_one_terminal() {
    let backend = ReferenceBackend::new();
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    backend.push_behavior(Behavior::CallTool {
        name: "ask_user".into(),
        arguments: "{\"q\":1}".into(),
        result: "ok".into(),
    });
    let mut stream = agent.thread("t").stream("x").unwrap();
    let mut events = Vec::new();
    while let Some(e) = stream.next_event().await {
        let terminal = e.kind.is_terminal();
        events.push(e);
        if terminal {
            break;
        }
    }
    let result = stream.result().await.unwrap();
    events.extend(result.events);
    assert!(matches!(events[0].kind, agent::ThreadEventKind::RunStarted));
    assert_eq!(events.iter().filter(|e| e.kind.is_terminal()).count(), 1);
    assert!(events.last().unwrap().kind.is_terminal());
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "core-assigned, gapless sequence numbers");
    }
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, agent::ThreadEventKind::ToolCallStarted { .. }))
    );
}

#[tokio::test]
async fn close_closes_every_provider_once() {
    #[derive(Debug, Default)]
    struct Closable(AtomicUsize);
    #[async_trait]
    impl RunServiceProvider for Closable {
        async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
            Ok(RunAttachment::default())
        }
        async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
            Ok(())
        }
        async fn close(&self) -> Result<(), RunServiceError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    let backend = ReferenceBackend::new();
    let provider = Arc::new(Closable::default());
    let agent = agent_with(vec![provider.clone()], &backend);
    agent.thread("t").run("x").await.unwrap();
    assert_eq!(provider.0.load(Ordering::SeqCst), 0);
    agent.close().await;
    agent.close().await;
    assert_eq!(provider.0.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_driver_without_resume_cannot_run_threads() {
    let backend = ReferenceBackend::new();
    let stateless = test_support::host::Reshaped::new(&backend, |mut d| {
        d.capabilities.resume = false;
        d
    });
    let agent = Agent::builder(stateless)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let err = agent.thread("t").run("x").await.unwrap_err();
    assert!(matches!(err, ThreadError::Unsupported(_)), "{err}");
    assert_eq!(backend.request_count(), 0);
}

#[tokio::test]
async fn a_stored_state_the_codec_rejects_is_refused_before_the_driver_runs() {
    use thread_store::{FinalizeRequest, Query, ThreadStore};
    let backend = ReferenceBackend::new();
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let agent = host(store.clone(), &backend, &[]);
    agent.thread("t").run("one").await.unwrap();
    let mut record = store.resolve(&Query::key("t")).await.unwrap().unwrap();
    record.state.resume_id = "ref\u{7}session".into();
    store.finalize(&FinalizeRequest::new(record)).await.unwrap();
    let before = backend.request_count();
    let err = agent
        .thread("t")
        .resume_only()
        .run("two")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ThreadError::ResumeRejected {
                reason: ResumeRejectReason::InvalidState
            }
        ),
        "{err}"
    );
    assert_eq!(backend.request_count(), before);
}

#[tokio::test]
async fn a_fork_holds_the_parent_lease_too() {
    let backend = ReferenceBackend::new();
    let agent = host(Arc::new(MemoryStore::new()), &backend, &[]);
    agent.thread("parent").run("one").await.unwrap();
    backend.push_behavior(Behavior::Stall);
    let parent_run = agent.thread("parent").stream("two").unwrap();
    backend.wait_for_stalled(1).await;
    let err = agent
        .thread("parent")
        .fork("child")
        .run("branch")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ThreadError::Busy { key } if key == "parent"),
        "{err}"
    );
    backend.release_stalled();
    parent_run.result().await.unwrap();
    // The child's lease was released with the parent's refusal: the fork now goes through.
    agent
        .thread("parent")
        .fork("child")
        .run("branch")
        .await
        .unwrap();
}
