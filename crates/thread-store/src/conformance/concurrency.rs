//! The clauses about concurrency: racing acquirers, batched finalizes, a killed holder.

use std::sync::Arc;

use super::{
    Check, Factory, Harness, LONG, acquire, by_key, expect_bound, expect_current, expect_released,
    finalize_ok, sample, seed, turn,
};
use crate::{FinalizeRequest, StoreError};

pub(super) async fn ts11_one_winner(h: &Harness, ns: &str) -> Check {
    const ACQUIRERS: usize = 8;
    for round in 0..5 {
        let target = Arc::new(format!("{ns}lease-{round}"));
        let barrier = Arc::new(tokio::sync::Barrier::new(ACQUIRERS));
        let mut tasks = Vec::new();
        for n in 0..ACQUIRERS {
            let (store, target, barrier) = (
                Arc::clone(&h.store),
                Arc::clone(&target),
                Arc::clone(&barrier),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .acquire_lease(&target, &format!("owner-{n}"), LONG)
                    .await
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            match task.await {
                Ok(Ok(lease)) => winners.push(lease),
                Ok(Err(StoreError::Busy { .. })) => {}
                Ok(Err(e)) => return Err(format!("round {round}: an acquirer failed: {e}")),
                Err(e) => return Err(format!("round {round}: an acquirer task failed: {e}")),
            }
        }
        ensure!(
            winners.len() == 1,
            "round {round}: {} winners",
            winners.len()
        );
        let why = format!("round {round}: the winner's lease is not current");
        expect_current(h, &winners[0], &why).await?;
    }
    Ok(())
}

/// Many Threads finalize at once, as a host serving many users does; a store may commit them
/// together (SQLite's group commit does), but each request's conditions are its own. In every
/// round one writer presents a lease that was taken over and another asks for an absent key
/// that is bound: both fail with their own error and write nothing, and every other writer's
/// record is saved and its lease released.
pub(super) async fn ts18_batch_isolation(h: &Harness, ns: &str) -> Check {
    const WRITERS: usize = 16;
    for round in 0..4usize {
        let stale = (round * 5) % WRITERS;
        let bound = (stale + 7) % WRITERS;
        let key = |n: usize| format!("{ns}r{round}/thread-{n}");
        let mut seeded = sample(&key(bound), 200);
        seeded.state.resume_id = "seeded".to_owned();
        seed(h, &seeded).await?;
        let mut requests = Vec::new();
        let mut leases = Vec::new();
        for n in 0..WRITERS {
            let target = format!("{ns}r{round}/lease-{n}");
            let lease = acquire(h, &target, "writer", LONG, "acquire").await?;
            if n == stale {
                ok!(h.store.release_lease(&lease).await, "release");
                acquire(h, &target, "usurper", LONG, "the usurper's acquire").await?;
            }
            let mut request = turn(sample(&key(n), n as u8), lease.clone());
            if n == bound {
                request = request.require_key_absent();
            }
            requests.push(request);
            leases.push(lease);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(WRITERS));
        let mut tasks = Vec::new();
        for request in requests.clone() {
            let (store, barrier) = (Arc::clone(&h.store), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store.finalize(&request).await
            }));
        }
        for (n, task) in tasks.into_iter().enumerate() {
            let result = match task.await {
                Ok(result) => result,
                Err(e) => return Err(format!("round {round}: writer {n}'s task failed: {e}")),
            };
            let saved = by_key(h, &key(n)).await?;
            if n == stale {
                ensure!(
                    matches!(result, Err(StoreError::LeaseLost { .. })),
                    "round {round}: the stale writer got {result:?}, not LeaseLost"
                );
                ensure!(
                    saved.is_none(),
                    "round {round}: the stale writer's record was saved"
                );
            } else if n == bound {
                ensure!(
                    matches!(result, Err(StoreError::AlreadyExists { .. })),
                    "round {round}: the bound key's writer got {result:?}, not AlreadyExists"
                );
                ensure!(
                    saved.as_ref() == Some(&seeded),
                    "round {round}: the bound key's record was replaced"
                );
                let why = format!("round {round}: the refused writer's lease was released");
                expect_current(h, &leases[n], &why).await?;
            } else {
                ensure!(
                    result.is_ok(),
                    "round {round}: writer {n} failed beside the failing ones: {result:?}"
                );
                ensure!(
                    saved.as_ref() == Some(&requests[n].record),
                    "round {round}: writer {n}'s record is not what it saved"
                );
                let why = format!("round {round}: writer {n}'s lease was not released");
                expect_released(h, &leases[n], &why).await?;
            }
        }
    }
    Ok(())
}

/// A process takes a Thread's lease and dies before its finalize: no release, no write, its
/// store handle gone (a SIGKILL). Through another handle on the same storage, the lease keeps
/// others out until it expires; the next holder gets a greater token; the dead holder's lease,
/// presented later, writes nothing, even after the new holder has finished.
pub(super) async fn ts19_killed_holder(factory: &dyn Factory, h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let key = format!("{ns}thread");
    let ttl = h.short_ttl();
    let doomed = ok!(
        factory.reopen(h).await,
        "reopening the store (the doomed process)"
    );
    let what = "the doomed process's acquire";
    let dead = acquire(&doomed, &target, "doomed-host", ttl, what).await?;
    drop(doomed);
    let survivor = ok!(
        factory.reopen(h).await,
        "reopening the store (the survivor)"
    );
    let early = survivor
        .store
        .acquire_lease(&target, "survivor-host", ttl)
        .await;
    ensure!(
        matches!(early, Err(StoreError::Busy { .. })),
        "the dead holder's lease did not keep the survivor out before it expired: {early:?}"
    );
    h.outlast(ttl).await;
    let what = "the survivor's acquire after expiry";
    let lease = acquire(&survivor, &target, "survivor-host", LONG, what).await?;
    ensure!(
        lease.token > dead.token,
        "the survivor's token {} is not above the dead holder's {}",
        lease.token,
        dead.token
    );
    let ghost = h
        .store
        .finalize(
            &FinalizeRequest::new(sample(&key, 1))
                .holding(dead.clone())
                .rebind_key(),
        )
        .await;
    ensure!(
        matches!(ghost, Err(StoreError::LeaseLost { .. })),
        "the dead holder's finalize got {ghost:?}, not LeaseLost"
    );
    let record = sample(&key, 2);
    let request = turn(record.clone(), lease);
    finalize_ok(&survivor, &request, "the survivor's finalize").await?;
    let late = h
        .store
        .finalize(
            &FinalizeRequest::new(sample(&key, 3))
                .holding(dead)
                .rebind_key(),
        )
        .await;
    ensure!(
        matches!(late, Err(StoreError::LeaseLost { .. })),
        "the dead holder's finalize after the survivor's got {late:?}, not LeaseLost"
    );
    let why = "the survivor's record is not what is stored";
    expect_bound(h, &key, Some(&record), why).await
}
