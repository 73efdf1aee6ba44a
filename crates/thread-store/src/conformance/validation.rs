//! The clause about input the stores refuse.

use super::*;

pub(super) async fn ts15_invalid(h: &Harness, ns: &str) -> Check {
    let expect_invalid = |what: &str, result: Result<(), StoreError>| -> Check {
        match result {
            Err(StoreError::InvalidInput { .. }) => Ok(()),
            other => Err(format!("{what}: expected InvalidInput, got {other:?}")),
        }
    };
    let target = format!("{ns}lease");
    expect_invalid(
        "zero TTL",
        h.store
            .acquire_lease(&target, "owner-a", Duration::ZERO)
            .await
            .map(drop),
    )?;
    expect_invalid(
        "empty target",
        h.store.acquire_lease("", "owner-a", LONG).await.map(drop),
    )?;
    expect_invalid(
        "empty owner",
        h.store.acquire_lease(&target, "", LONG).await.map(drop),
    )?;
    expect_invalid(
        "NUL in target",
        h.store
            .acquire_lease("a\u{0}b", "owner-a", LONG)
            .await
            .map(drop),
    )?;
    expect_invalid(
        "list limit 0",
        h.store
            .list(&ListQuery::prefix(ns).limit(0))
            .await
            .map(drop),
    )?;

    let key = format!("{ns}thread");
    let record = sample(&key, 1);
    seed(h, &record).await?;
    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );

    // The same id under another key.
    let mut moved = record.clone();
    moved.key = format!("{ns}elsewhere");
    expect_invalid(
        "an id that belongs to another key",
        h.store
            .finalize(
                &FinalizeRequest::new(moved.clone())
                    .holding(lease.clone())
                    .rebind_key()
                    .release_leases(),
            )
            .await,
    )?;
    ensure!(
        by_key(h, &moved.key).await?.is_none(),
        "a refused move bound the other key"
    );
    ensure!(
        by_id_any(h, &record.id).await?.as_ref() == Some(&record),
        "a refused move changed the record"
    );
    ensure!(
        is_current(h, &lease).await?,
        "a refused finalize released its lease"
    );

    let mut empty_key = sample(&key, 2);
    empty_key.key = String::new();
    expect_invalid(
        "an empty key",
        h.store.finalize(&FinalizeRequest::new(empty_key)).await,
    )?;
    let mut nul_agent = sample(&key, 2);
    nul_agent.agent = "a\u{0}b".to_owned();
    expect_invalid(
        "a NUL in the agent",
        h.store.finalize(&FinalizeRequest::new(nul_agent)).await,
    )?;

    // Archiving a record that does not exist writes nothing, the new record included.
    let orphan = sample(&key, 3);
    match h
        .store
        .finalize(
            &FinalizeRequest::new(orphan.clone())
                .holding(lease.clone())
                .archive_previous(RecordId::generate())
                .rebind_key()
                .release_leases(),
        )
        .await
    {
        Err(StoreError::NotFound { .. }) => {}
        other => {
            return Err(format!(
                "archiving a missing record: expected NotFound, got {other:?}"
            ));
        }
    }
    ensure!(
        by_id_any(h, &orphan.id).await?.is_none(),
        "a refused finalize saved its record"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&record),
        "a refused finalize rebound the key"
    );
    ensure!(
        is_current(h, &lease).await?,
        "a refused finalize released its lease"
    );
    Ok(())
}
