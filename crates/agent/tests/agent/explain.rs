//! `Thread::explain`: the dry run of the compatibility decision agrees with what the following
//! run does, in the compatible and the incompatible case, and takes no lease, runs no driver
//! and writes nothing.

use std::time::Duration;

use agent::{SessionOutcome, ThreadError, Verdict};
use driver_spi::reference::ReferenceBackend;

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, host, semantic_fingerprint};

#[tokio::test]
async fn explain_agrees_with_the_following_run_and_changes_nothing() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host(file.open().await, &backend, std::slice::from_ref(&provider));

    // Nothing stored: a run would start; resume-only would be refused as not found.
    let explained = agent.thread("t").explain().await.unwrap();
    assert_eq!(
        explained.verdict,
        Verdict::Start {
            replaces: None,
            changes: vec![]
        }
    );
    let err = agent.thread("t").resume_only().explain().await.unwrap_err();
    assert!(matches!(err, ThreadError::NotFound { .. }), "{err}");
    assert_eq!(backend.request_count(), 0, "no driver ran");
    assert_eq!(
        agent.thread("t").checkpoint().await.unwrap(),
        None,
        "nothing written"
    );
    assert_eq!(provider.live_runs(), 0, "the providers were detached");

    let first = agent.thread("t").run("first").await.unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    let stored = agent.thread("t").checkpoint().await.unwrap().unwrap();
    assert_eq!(
        explained.fingerprint, stored.fingerprint,
        "what the run stored"
    );

    // Compatible: resume that record; the run does.
    let explained = agent.thread("t").resume_only().explain().await.unwrap();
    assert_eq!(
        explained.verdict,
        Verdict::Resume {
            record: stored.record_id.clone()
        }
    );
    let requests = backend.request_count();
    assert_eq!(
        agent.thread("t").checkpoint().await.unwrap().unwrap(),
        stored
    );
    let second = agent.thread("t").resume_only().run("second").await.unwrap();
    assert_eq!(second.session, SessionOutcome::Resumed);
    assert_eq!(backend.request_count(), requests + 1);
    // The record counts turns: 1 after the first run, 2 after the resume.
    let store = file.open().await;
    let turns = |key: &'static str| {
        let store = store.clone();
        async move {
            store
                .resolve(&thread_store::Query::key(key))
                .await
                .unwrap()
                .unwrap()
                .turns
        }
    };
    assert_eq!(turns("t").await, 2);

    // A fork would fork the stored record.
    let fork = agent.thread("t").fork("t2").explain().await.unwrap();
    let current = agent.thread("t").checkpoint().await.unwrap().unwrap();
    assert_eq!(
        fork.verdict,
        Verdict::Fork {
            parent: current.record_id
        }
    );
    // A fork continues the parent's count.
    agent.thread("t").fork("t2").run("branch").await.unwrap();
    assert_eq!(turns("t2").await, 3);
    assert_eq!(turns("t").await, 2);
    agent.close().await;
}

#[tokio::test]
async fn explain_names_the_drift_a_resume_only_run_is_refused_for() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let agent1 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    agent1.thread("t").run("first").await.unwrap();
    agent1.close().await;

    // After a restart the provider's semantics changed (a new tool revision).
    let changed = RotatingProvider::new(
        ProviderSpec::semantic(2).with_fingerprint(semantic_fingerprint("2", "tenant-a")),
    );
    let agent2 = host(file.open().await, &backend, &[changed]);
    let before = backend.request_count();
    let explained = agent2
        .thread("t")
        .resume_only()
        .explain()
        .await
        .unwrap_err();
    let refused = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap_err();
    let (Some(explained), Some(refused)) = (explained.incompatibility(), refused.incompatibility())
    else {
        panic!("both must be Incompatible")
    };
    assert_eq!(explained.changes(), refused.changes());
    assert!(explained.names_prefix("attachment.semantic:"));
    assert_eq!(backend.request_count(), before, "no driver ran");

    // Without resume-only a run would start over, archiving the record, for the same drift;
    // and it does.
    let stored = agent2.thread("t").checkpoint().await.unwrap().unwrap();
    let explained = agent2.thread("t").explain().await.unwrap();
    let Verdict::Start { replaces, changes } = explained.verdict else {
        panic!("expected Start, got {:?}", explained.verdict)
    };
    assert_eq!(replaces, Some(stored.record_id));
    let run = agent2.thread("t").run("again").await.unwrap();
    assert_eq!(run.session, SessionOutcome::Restarted { changes });
    agent2.close().await;
}

#[tokio::test]
async fn explain_takes_no_lease_and_answers_while_a_run_holds_one() {
    let file = SqliteFile::new();
    let store = file.open().await;
    let backend = ReferenceBackend::new();
    let agent = host(store.clone(), &backend, &[]);
    agent.thread("t").run("first").await.unwrap();

    // Another host holds the Thread's lease: a run is busy, an explanation is not.
    let lease = store
        .acquire_lease("thread:t", "other-host", Duration::from_secs(60))
        .await
        .unwrap();
    let explained = agent.thread("t").resume_only().explain().await.unwrap();
    assert!(matches!(explained.verdict, Verdict::Resume { .. }));
    let busy = agent.thread("t").resume_only().run("x").await.unwrap_err();
    assert!(matches!(busy, ThreadError::Busy { .. }), "{busy}");
    store.release_lease(&lease).await.unwrap();

    // And explain left no lease behind: the run proceeds.
    agent.thread("t").explain().await.unwrap();
    let run = agent.thread("t").resume_only().run("y").await.unwrap();
    assert_eq!(run.session, SessionOutcome::Resumed);
    agent.close().await;
}
