//! The clauses about `delete`: the erase and its fence.

use super::*;

pub(super) async fn ts14_delete(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}doomed");
    let other_key = format!("{ns}doomed-not");
    let old = sample(&key, 1);
    seed(h, &old).await?;
    let new = sample(&key, 2);
    let request = FinalizeRequest::new(new.clone())
        .archive_previous(old.id.clone())
        .rebind_key();
    finalize_ok(h, &request, "finalize (archive and rebind)").await?;
    let other = sample(&other_key, 3);
    seed(h, &other).await?;
    let lease = acquire(h, &format!("{ns}lease"), "owner-a", LONG, "acquire").await?;

    let removed = ok!(h.store.delete(&key).await, "delete");
    ensure!(
        removed == 2,
        "delete reported {removed} records removed, expected 2"
    );
    ensure!(
        by_key_any(h, &key).await?.is_none(),
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
    expect_bound(h, &other_key, Some(&other), "delete touched another key").await?;
    expect_current(h, &lease, "delete touched a lease").await?;
    ensure!(
        ok!(h.store.delete(&key).await, "delete again") == 0,
        "a second delete removed records"
    );
    let again = sample(&key, 4);
    let request = FinalizeRequest::new(again.clone())
        .require_key_absent()
        .rebind_key();
    finalize_ok(h, &request, "finalize (re-create a deleted key)").await?;
    let why = "a deleted key could not be re-created";
    expect_bound(h, &key, Some(&again), why).await?;
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
    let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let first = sample(&key, 1);
    // Without release_leases: the holder keeps its lease for the next turn.
    let request = FinalizeRequest::new(first.clone())
        .holding(lease.clone())
        .rebind_key();
    finalize_ok(h, &request, "finalize (first turn)").await?;
    let other_lease = acquire(h, &other_target, "owner-b", LONG, "acquire (other key)").await?;

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
        &turn(second.clone(), lease.clone()),
        &key,
        None,
    )
    .await?;
    ensure!(
        by_id_any(h, &first.id).await?.is_none(),
        "a finalize under a pre-delete lease brought back the erased record"
    );
    let why = "delete or the refused finalize touched the lease";
    expect_current(h, &lease, why).await?;

    // One stale lease among fresh ones is enough to refuse.
    let extra_target = format!("{ns}lease-extra");
    let fresh_extra = acquire(h, &extra_target, "owner-a", LONG, "acquire (extra)").await?;
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
    let request = turn(other.clone(), other_lease);
    let what = "finalize (another key, lease older than the delete)";
    finalize_ok(h, &request, what).await?;
    expect_bound(h, &other_key, Some(&other), "delete fenced another key").await?;

    // A lease acquired after the delete writes the key again.
    ok!(h.store.release_lease(&lease).await, "release");
    let fresh = acquire(h, &target, "owner-a", LONG, "acquire (after the delete)").await?;
    let request = turn(second.clone(), fresh.clone())
        .holding(fresh_extra)
        .require_key_absent();
    finalize_ok(h, &request, "finalize (lease acquired after the delete)").await?;
    let why = "a lease acquired after the delete could not re-create the key";
    expect_bound(h, &key, Some(&second), why).await?;
    let why = "the re-creating finalize did not release its lease";
    expect_released(h, &fresh, why).await
}
