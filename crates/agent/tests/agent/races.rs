//! Race tests: concurrent attachment, close during a run and restart, process replacement,
//! and two hosts racing for one Thread lease.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agent::{SessionOutcome, ThreadError};
use driver_spi::reference::{Behavior, ReferenceBackend};
use thread_store::memory::MemoryStore;

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, host};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_attachment_gives_each_run_its_own_endpoint() {
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    *provider.attach_delay.lock().unwrap() = Some(Duration::from_millis(5));
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
    );
    let runs: Vec<_> = (0..16)
        .map(|i| {
            let agent = agent.clone();
            tokio::spawn(async move { agent.thread(format!("t{i}")).run("hi").await })
        })
        .collect();
    for run in runs {
        run.await.unwrap().unwrap();
    }
    assert_eq!(provider.attached.load(Ordering::SeqCst), 16);
    assert_eq!(provider.detached.load(Ordering::SeqCst), 16);
    assert_eq!(provider.live_runs(), 0);
    // Every run got a distinct endpoint, and every Thread the same fingerprint.
    let mut urls: Vec<_> = backend
        .requests()
        .iter()
        .map(|r| r.request().runtime.services[0].url.clone())
        .collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), 16);
    let mut fingerprints = Vec::new();
    for i in 0..16 {
        fingerprints.push(
            agent
                .thread(format!("t{i}"))
                .checkpoint()
                .await
                .unwrap()
                .unwrap()
                .fingerprint,
        );
    }
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_a_run_cancels_it_and_a_restart_resumes() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent1 = host(file.open().await, &backend, std::slice::from_ref(&provider));
    agent1.thread("t").run("first").await.unwrap();
    let stored = agent1.thread("t").checkpoint().await.unwrap().unwrap();

    backend.push_behavior(Behavior::Stall);
    let stream = agent1.thread("t").stream("second").unwrap();
    backend.wait_for_stalled(1).await;
    agent1.close().await;
    let err = stream.result().await.unwrap_err();
    assert!(matches!(err, ThreadError::Cancelled), "{err}");
    assert_eq!(provider.live_runs(), 0, "detached on cancel");
    assert_eq!(
        agent1.thread("t").checkpoint().await.unwrap().unwrap(),
        stored,
        "nothing persisted"
    );

    // A restarted host takes the lease at once (it was released) and resumes.
    let agent2 = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(2))],
    );
    let resumed = agent2.thread("t").resume_only().run("third").await.unwrap();
    assert_eq!(resumed.session, SessionOutcome::Resumed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_replacement_never_dispatches_with_stale_credentials() {
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
    );
    // Two Threads, interleaved turns, a fresh token on every attach.
    let mut run_ids = Vec::new();
    for turn in 0..4 {
        let (ta, tb) = (agent.thread("a"), agent.thread("b"));
        let (a, b) = tokio::join!(ta.run(format!("a{turn}")), tb.run(format!("b{turn}")));
        run_ids.push(a.unwrap().run_id);
        run_ids.push(b.unwrap().run_id);
    }
    let stats = backend.process_stats();
    // Each Thread: one spawn, then a replacement on each of its 3 resumed turns.
    assert_eq!(stats.replaced, 6, "{stats:?}");
    assert_eq!(
        stats.reused, 0,
        "a rotated credential never reuses a process: {stats:?}"
    );
    for run in &run_ids {
        assert_eq!(
            backend.deliveries_of(run),
            1,
            "each prompt delivered exactly once"
        );
    }
    // Every request carried exactly the token its own attach minted.
    for recorded in backend.requests() {
        let env = recorded.secret_env_names()[0].to_owned();
        let port: u32 = env.rsplit('_').next().unwrap().parse().unwrap();
        let n = port - u32::from(ProviderSpec::semantic(1).base_port);
        assert_eq!(
            recorded.expose_secret_env(&env).unwrap(),
            provider.allocation(n).token
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_racing_for_one_thread_lease_have_exactly_one_winner() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let host_a = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(1))],
    );
    let host_b = host(
        file.open().await,
        &backend,
        &[RotatingProvider::new(ProviderSpec::semantic(2))],
    );
    host_a.thread("t").run("seed").await.unwrap();
    for round in 0..8 {
        // The winner stalls in the driver until the loser has come back Busy.
        backend.push_behavior(Behavior::Stall);
        let mut a = tokio::spawn(
            host_a
                .thread("t")
                .stream(format!("a{round}"))
                .unwrap()
                .result(),
        );
        let mut b = tokio::spawn(
            host_b
                .thread("t")
                .stream(format!("b{round}"))
                .unwrap()
                .result(),
        );
        let (first_done, other) = tokio::select! {
            r = &mut a => (r.unwrap(), b),
            r = &mut b => (r.unwrap(), a),
        };
        assert!(
            matches!(first_done, Err(ThreadError::Busy { .. })),
            "round {round}: {first_done:?}"
        );
        // Release the winner only once it really sits in the driver.
        backend.wait_for_stalled(1).await;
        backend.release_stalled();
        let winner = other.await.unwrap();
        assert!(winner.is_ok(), "round {round}: {winner:?}");
    }
    assert_eq!(backend.pending_behaviors(), 0);
}
