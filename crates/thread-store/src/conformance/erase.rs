//! The clauses about `delete`: the erase and its fence.

use super::*;

pub(super) async fn ts14_delete(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}doomed");
    let other_key = format!("{ns}doomed-not");
    let old = sample(&key, 1);
    seed(h, &old).await?;
    let new = sample(&key, 2);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(new.clone())
                    .archive_previous(old.id.clone())
                    .rebind_key()
            )
            .await,
        "finalize"
    );
    let other = sample(&other_key, 3);
    seed(h, &other).await?;
    let lease = ok!(
        h.store
            .acquire_lease(&format!("{ns}lease"), "owner-a", LONG)
            .await,
        "acquire"
    );

    let removed = ok!(h.store.delete(&key).await, "delete");
    ensure!(
        removed == 2,
        "delete reported {removed} records removed, expected 2"
    );
    ensure!(
        ok!(
            h.store
                .resolve(&Query::key(&key).including_archived())
                .await,
            "resolve"
        )
        .is_none(),
        "the deleted key still resolves"
    );
    ensure!(
        by_id_any(h, &old.id).await?.is_none(),
        "the deleted archived record still resolves"
    );
    ensure!(
        by_id_any(h, &new.id).await?.is_none(),
        "the deleted active record still resolves"
    );
    let page = ok!(
        h.store
            .list(&ListQuery::prefix(ns).including_archived())
            .await,
        "list"
    );
    ensure!(
        page.records == vec![other.clone()],
        "after delete, list shows {:?}",
        page.records.len()
    );
    ensure!(
        by_key(h, &other_key).await?.as_ref() == Some(&other),
        "delete touched another key"
    );
    ensure!(is_current(h, &lease).await?, "delete touched a lease");
    ensure!(
        ok!(h.store.delete(&key).await, "delete again") == 0,
        "a second delete removed records"
    );
    let again = sample(&key, 4);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(again.clone())
                    .require_key_absent()
                    .rebind_key()
            )
            .await,
        "finalize (re-create a deleted key)"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&again),
        "a deleted key could not be re-created"
    );
    Ok(())
}

/// A lease holder's finalize must not undo an erase: once `delete` ran, a finalize of that key
/// that presents a lease acquired before the delete is `LeaseLost` and writes nothing, while
/// other keys, and leases acquired after the delete, are unaffected.
pub(super) async fn ts16_delete_fences(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}erased");
    let target = format!("{ns}lease");
    let other_key = format!("{ns}kept");
    let other_target = format!("{ns}lease-kept");

    // The holder runs a turn and keeps its lease for the next one.
    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let first = sample(&key, 1);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(first.clone())
                    .holding(lease.clone())
                    .rebind_key()
            )
            .await,
        "finalize (first turn)"
    );
    let other_lease = ok!(
        h.store.acquire_lease(&other_target, "owner-b", LONG).await,
        "acquire (other key)"
    );

    let removed = ok!(h.store.delete(&key).await, "delete");
    ensure!(
        removed == 1,
        "delete reported {removed} records, expected 1"
    );

    // The holder's next turn, under the lease it took before the delete, is refused.
    let second = sample(&key, 2);
    refused_writes_nothing(
        h,
        "a finalize under a lease older than the delete",
        &FinalizeRequest::new(second.clone())
            .holding(lease.clone())
            .rebind_key()
            .release_leases(),
        &key,
        None,
    )
    .await?;
    ensure!(
        by_id_any(h, &first.id).await?.is_none(),
        "a finalize under a pre-delete lease brought back the erased record"
    );
    ensure!(
        is_current(h, &lease).await?,
        "delete or the refused finalize touched the lease"
    );

    // One stale lease among fresh ones is enough to refuse.
    let fresh_extra = ok!(
        h.store
            .acquire_lease(&format!("{ns}lease-extra"), "owner-a", LONG)
            .await,
        "acquire (extra)"
    );
    refused_writes_nothing(
        h,
        "a finalize holding one pre-delete lease",
        &FinalizeRequest::new(second.clone())
            .holding(fresh_extra.clone())
            .holding(lease.clone())
            .rebind_key(),
        &key,
        None,
    )
    .await?;

    // Another key is not fenced, even under a lease older than the delete.
    let other = sample(&other_key, 3);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(other.clone())
                    .holding(other_lease)
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (another key, lease older than the delete)"
    );
    ensure!(
        by_key(h, &other_key).await?.as_ref() == Some(&other),
        "delete fenced another key"
    );

    // A lease acquired after the delete writes the key again.
    ok!(h.store.release_lease(&lease).await, "release");
    let fresh = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire (after the delete)"
    );
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(second.clone())
                    .holding(fresh.clone())
                    .holding(fresh_extra)
                    .require_key_absent()
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize (lease acquired after the delete)"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&second),
        "a lease acquired after the delete could not re-create the key"
    );
    ensure!(
        !is_current(h, &fresh).await?,
        "the re-creating finalize did not release its lease"
    );
    Ok(())
}
