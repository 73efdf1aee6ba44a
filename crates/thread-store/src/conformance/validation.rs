//! The clause about input the stores refuse.

use super::*;

pub(super) async fn ts15_invalid(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    expect_err!(
        InvalidInput,
        h.store
            .acquire_lease(&target, "owner-a", Duration::ZERO)
            .await,
        "zero TTL"
    );
    expect_err!(
        InvalidInput,
        h.store.acquire_lease("", "owner-a", LONG).await,
        "empty target"
    );
    expect_err!(
        InvalidInput,
        h.store.acquire_lease(&target, "", LONG).await,
        "empty owner"
    );
    expect_err!(
        InvalidInput,
        h.store.acquire_lease("a\u{0}b", "owner-a", LONG).await,
        "NUL in target"
    );
    expect_err!(
        InvalidInput,
        h.store.list(&ListQuery::prefix(ns).limit(0)).await,
        "list limit 0"
    );

    let key = format!("{ns}thread");
    let record = sample(&key, 1);
    seed(h, &record).await?;
    let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;

    // The same id under another key.
    let mut moved = record.clone();
    moved.key = format!("{ns}elsewhere");
    expect_err!(
        InvalidInput,
        h.store.finalize(&turn(moved.clone(), lease.clone())).await,
        "an id that belongs to another key"
    );
    expect_bound(h, &moved.key, None, "a refused move bound the other key").await?;
    ensure!(
        by_id_any(h, &record.id).await?.as_ref() == Some(&record),
        "a refused move changed the record"
    );
    expect_current(h, &lease, "a refused move released its lease").await?;

    let mut empty_key = sample(&key, 2);
    empty_key.key = String::new();
    expect_err!(
        InvalidInput,
        h.store.finalize(&FinalizeRequest::new(empty_key)).await,
        "an empty key"
    );
    let mut nul_agent = sample(&key, 2);
    nul_agent.agent = "a\u{0}b".to_owned();
    expect_err!(
        InvalidInput,
        h.store.finalize(&FinalizeRequest::new(nul_agent)).await,
        "a NUL in the agent"
    );

    // Archiving a record that does not exist writes nothing, the new record included.
    let orphan = sample(&key, 3);
    let request = turn(orphan.clone(), lease.clone()).archive_previous(RecordId::generate());
    let refused = h.store.finalize(&request).await;
    expect_err!(NotFound, refused, "archiving a missing record");
    ensure!(
        by_id_any(h, &orphan.id).await?.is_none(),
        "a refused finalize saved its record"
    );
    let why = "a refused archive of a missing record rebound the key";
    expect_bound(h, &key, Some(&record), why).await?;
    let why = "a refused archive of a missing record released its lease";
    expect_current(h, &lease, why).await
}
