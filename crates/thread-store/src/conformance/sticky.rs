//! The clauses about sticky leases: a finalize that renews the held leases instead of
//! releasing them (TS-21), and the release that ends a sticky lease, as a host's close does
//! (TS-22).

use super::*;

/// Who holds `target` now, and for how long (`None`: free or expired).
async fn holder(h: &Harness, target: &str) -> Result<Option<(String, Duration)>, String> {
    let held = ok!(h.store.lease_holder(target).await, "lease_holder");
    Ok(held.map(|l| (l.owner, l.expires_in)))
}

/// A turn that keeps its lease: `record` saved and bound under `lease`, renewed to `ttl`.
fn sticky_turn(record: ThreadRecord, lease: Lease, ttl: Duration) -> FinalizeRequest {
    FinalizeRequest::new(record)
        .holding(lease)
        .rebind_key()
        .renew_leases(ttl)
}

pub(super) async fn ts21_renew_in_finalize(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let target = format!("{ns}lease");
    let ttl = h.short_ttl();
    let lease = acquire(h, &target, "owner-a", ttl, "acquire").await?;
    let first = sample(&key, 1);
    finalize_ok(
        h,
        &sticky_turn(first.clone(), lease.clone(), LONG),
        "finalize-and-renew",
    )
    .await?;
    expect_bound(h, &key, Some(&first), "the renewing finalize did not save").await?;
    // Held by its owner, for longer than before, and refused to everyone else.
    let Some((owner, expires_in)) = holder(h, &target).await? else {
        return Err(format!(
            "the renewed lease is not held ({} line {})",
            file!(),
            line!()
        ));
    };
    ensure!(owner == "owner-a", "the renewed lease is held by {owner:?}");
    ensure!(
        expires_in > ttl,
        "the renewed expiry ({expires_in:?} left) is not past the acquired TTL {ttl:?}"
    );
    let refused = h.store.acquire_lease(&target, "owner-b", LONG).await;
    expect_err!(Busy, refused, "another owner's acquire of a renewed lease");
    // Past the TTL it was acquired with, the lease still holds, under the same token: the
    // next turn finalizes under it without an acquire.
    h.outlast(ttl).await;
    let refused = h.store.acquire_lease(&target, "owner-b", LONG).await;
    expect_err!(Busy, refused, "another owner's acquire after the first TTL");
    let second = ThreadRecord {
        updated_at: Timestamp::from_millis(1_800_000_000_000),
        turns: 2,
        ..first.clone()
    };
    let request = sticky_turn(second.clone(), lease.clone(), LONG);
    finalize_ok(h, &request, "a second turn under the renewed lease").await?;
    expect_bound(h, &key, Some(&second), "the second turn was not saved").await?;

    // Renewing and releasing at once, or renewing to an invalid TTL, is refused.
    for (what, bad) in [
        ("renew and release", request.clone().release_leases()),
        (
            "a zero renew TTL",
            request.clone().renew_leases(Duration::ZERO),
        ),
        (
            "a renew TTL past the maximum",
            request.clone().renew_leases(crate::MAX_LEASE_TTL * 2),
        ),
    ] {
        expect_err!(InvalidInput, h.store.finalize(&bad).await, "{what}");
    }

    // Taken over (a same-owner re-acquire stands for any new holder): the stale holder's
    // renewing finalize writes nothing and renews nothing.
    let current = acquire(h, &target, "owner-a", ttl, "re-acquire").await?;
    let stale = sticky_turn(sample(&key, 3), lease.clone(), LONG);
    refused_writes_nothing(h, "a stale renewing finalize", &stale, &key, Some(&second)).await?;
    match holder(h, &target).await? {
        None => {}
        Some((owner, left)) => ensure!(
            owner == "owner-a" && left <= ttl,
            "a stale renewing finalize renewed the current lease: {owner:?}, {left:?} left"
        ),
    }
    // Expired and taken by another owner: the same.
    h.outlast(ttl).await;
    let other = acquire(h, &target, "owner-b", ttl, "acquire over expired").await?;
    let stale = sticky_turn(sample(&key, 4), current, LONG);
    refused_writes_nothing(
        h,
        "an expired renewing finalize",
        &stale,
        &key,
        Some(&second),
    )
    .await?;
    match holder(h, &target).await? {
        None => {}
        Some((owner, left)) => ensure!(
            owner == "owner-b" && left <= ttl,
            "an expired holder's renewing finalize renewed another owner's lease: \
             {owner:?}, {left:?} left"
        ),
    }
    ok!(h.store.release_lease(&other).await, "release");
    Ok(())
}

pub(super) async fn ts22_release_sticky(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let target = format!("{ns}lease");
    let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let record = sample(&key, 1);
    let kept = sticky_turn(record.clone(), lease.clone(), LONG);
    finalize_ok(h, &kept, "finalize-and-renew").await?;
    // The host closes: its release frees the Thread at once, for a greater token.
    ok!(h.store.release_lease(&lease).await, "release on close");
    ensure!(
        holder(h, &target).await?.is_none(),
        "a released sticky lease is still reported held"
    );
    let next = acquire(h, &target, "owner-b", LONG, "acquire after close").await?;
    ensure!(
        next.token > lease.token,
        "the next host's token {} is not above the closed host's {}",
        next.token,
        lease.token
    );
    // The closed host's lease is gone for good: renewing under it writes nothing.
    let stale = sticky_turn(sample(&key, 2), lease, LONG);
    refused_writes_nothing(
        h,
        "a renewing finalize after close",
        &stale,
        &key,
        Some(&record),
    )
    .await?;
    // A sticky lease also ends with a turn that releases it (a host whose runtime no longer
    // holds the Thread).
    let update = ThreadRecord {
        updated_at: Timestamp::from_millis(1_800_000_000_000),
        ..record
    };
    let kept = sticky_turn(update.clone(), next.clone(), LONG);
    finalize_ok(h, &kept, "the next host's renewing finalize").await?;
    let done = FinalizeRequest::new(update)
        .holding(next.clone())
        .release_leases();
    finalize_ok(h, &done, "a releasing finalize of a sticky lease").await?;
    expect_released(h, &next, "a releasing finalize left the sticky lease held").await?;
    acquire(
        h,
        &target,
        "owner-c",
        LONG,
        "acquire after a releasing finalize",
    )
    .await?;
    Ok(())
}
