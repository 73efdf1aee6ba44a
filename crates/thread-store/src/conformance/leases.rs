//! The clauses about leases: busy, fencing tokens, renewal, release and `lease_holder`.

use super::*;

pub(super) async fn ts06_busy(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let refused = h.store.acquire_lease(&target, "owner-b", LONG).await;
    expect_err!(Busy, refused, "another owner's acquire");
    expect_current(h, &a, "a Busy refusal disturbed the holder").await?;
    ok!(h.store.release_lease(&a).await, "release");
    let b = acquire(h, &target, "owner-b", LONG, "acquire after release").await?;
    ensure!(
        b.owner == "owner-b" && b.target == target,
        "the lease names the wrong owner or target"
    );
    Ok(())
}

pub(super) async fn ts07_token_increases(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let ttl = h.short_ttl();
    let t1 = acquire(h, &target, "owner-a", ttl, "acquire").await?.token;
    let t2 = acquire(h, &target, "owner-a", ttl, "re-acquire")
        .await?
        .token;
    ensure!(
        t2 > t1,
        "same-owner re-acquire: token {t2} is not above {t1}"
    );
    h.outlast(ttl).await;
    let b = acquire(h, &target, "owner-b", LONG, "acquire over expired").await?;
    ensure!(
        b.token > t2,
        "acquire over an expired lease: token {} is not above {t2}",
        b.token
    );
    ok!(h.store.release_lease(&b).await, "release");
    let t4 = acquire(h, &target, "owner-a", LONG, "acquire after release")
        .await?
        .token;
    ensure!(
        t4 > b.token,
        "acquire after release: token {t4} is not above {}",
        b.token
    );
    let other_target = format!("{ns}other");
    let other = acquire(h, &other_target, "owner-c", LONG, "acquire another target").await?;
    ensure!(
        other.token > t4,
        "tokens are not store-wide increasing: {} after {t4}",
        other.token
    );
    Ok(())
}

pub(super) async fn ts08_renew(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let first = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let renewed = ok!(h.store.renew_lease(&first, LONG).await, "renew");
    ensure!(renewed == first, "renew changed the lease: {renewed:?}");
    let second = acquire(h, &target, "owner-a", LONG, "re-acquire").await?;
    expect_lease_lost(
        "renew with a stale token",
        h.store.renew_lease(&first, LONG).await,
    )?;
    expect_current(h, &second, "the current lease is not renewable").await?;
    let foreign = Lease {
        owner: "owner-b".to_owned(),
        ..second.clone()
    };
    expect_lease_lost(
        "renew by another owner",
        h.store.renew_lease(&foreign, LONG).await,
    )?;
    ok!(h.store.release_lease(&second).await, "release");
    expect_lease_lost(
        "renew after release",
        h.store.renew_lease(&second, LONG).await,
    )?;

    // Renewal extends expiry; an expired lease cannot be renewed.
    let ttl = h.short_ttl();
    let short_target = format!("{ns}short");
    let lease = acquire(h, &short_target, "owner-a", ttl, "acquire").await?;
    if let TimeControl::Manual(clock) = &h.time {
        clock.advance(ttl * 2 / 3);
        ok!(
            h.store.renew_lease(&lease, ttl).await,
            "renew before expiry"
        );
        clock.advance(ttl * 2 / 3);
        let refused = h.store.acquire_lease(&short_target, "owner-b", ttl).await;
        expect_err!(Busy, refused, "a renewed lease at its old deadline");
    }
    h.outlast(ttl).await;
    expect_lease_lost("renew after expiry", h.store.renew_lease(&lease, ttl).await)?;
    Ok(())
}

pub(super) async fn ts09_release_idempotent(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    ok!(h.store.release_lease(&a).await, "release");
    ok!(h.store.release_lease(&a).await, "second release");
    let b = acquire(h, &target, "owner-b", LONG, "acquire after release").await?;
    ok!(h.store.release_lease(&a).await, "stale release");
    expect_current(h, &b, "a stale release freed another owner's lease").await?;
    let refused = h.store.acquire_lease(&target, "owner-a", LONG).await;
    expect_err!(Busy, refused, "after a stale release");
    let never = Lease {
        target: format!("{ns}never"),
        owner: "owner-a".to_owned(),
        token: 1,
    };
    ok!(
        h.store.release_lease(&never).await,
        "release of a never-acquired lease"
    );
    Ok(())
}

pub(super) async fn ts10_finalize_release(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let (t1, t2, t3) = (format!("{ns}l1"), format!("{ns}l2"), format!("{ns}l3"));
    let l1 = acquire(h, &t1, "owner-a", LONG, "acquire").await?;
    let l2 = acquire(h, &t2, "owner-a", LONG, "acquire").await?;
    let l3 = acquire(h, &t3, "owner-a", LONG, "acquire").await?;
    let record = sample(&key, 1);
    let request = turn(record.clone(), l1).holding(l2);
    finalize_ok(h, &request, "finalize (releasing two of three leases)").await?;
    expect_bound(h, &key, Some(&record), "the record was not saved").await?;
    acquire(h, &t1, "owner-b", LONG, "acquire a released lease (1)").await?;
    acquire(h, &t2, "owner-b", LONG, "acquire a released lease (2)").await?;
    let refused = h.store.acquire_lease(&t3, "owner-b", LONG).await;
    expect_err!(Busy, refused, "a lease not in the request (must stay held)");
    // Without the release option, validated leases stay held.
    let update = ThreadRecord {
        updated_at: Timestamp::from_millis(1_800_000_000_000),
        ..record
    };
    let request = FinalizeRequest::new(update.clone()).holding(l3.clone());
    finalize_ok(h, &request, "finalize without release").await?;
    expect_bound(h, &key, Some(&update), "the in-place update was not saved").await?;
    let why = "a finalize without release_leases released a lease";
    expect_current(h, &l3, why).await
}

pub(super) async fn ts17_lease_holder(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    expect_no_holder(h, &target, "free").await?;

    let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let held = ok!(h.store.lease_holder(&target).await, "lease_holder (held)");
    let Some(held) = held else {
        return Err(format!(
            "a held lease was not reported ({} line {})",
            file!(),
            line!()
        ));
    };
    ensure!(
        held.owner == "owner-a",
        "the holder is {:?}, expected owner-a",
        held.owner
    );
    ensure!(
        held.expires_in > Duration::ZERO && held.expires_in <= LONG,
        "expires_in {:?} is outside (0, {LONG:?}]",
        held.expires_in
    );
    // Reading changed nothing: the holder still holds it, another owner is still refused.
    expect_current(h, &lease, "lease_holder disturbed the holder").await?;
    let refused = h.store.acquire_lease(&target, "owner-b", LONG).await;
    expect_err!(Busy, refused, "another owner's acquire after lease_holder");

    ok!(h.store.release_lease(&lease).await, "release");
    expect_no_holder(h, &target, "released").await?;

    let ttl = h.short_ttl();
    acquire(h, &target, "owner-c", ttl, "acquire (short)").await?;
    h.outlast(ttl).await;
    expect_no_holder(h, &target, "expired").await
}

/// `lease_holder` must report nobody on `target`, whose lease is `state` (free, released,
/// expired); TS-17 checks the three states alike.
async fn expect_no_holder(h: &Harness, target: &str, state: &str) -> Check {
    let holder = ok!(
        h.store.lease_holder(target).await,
        format!("lease_holder ({state})")
    );
    ensure!(
        holder.is_none(),
        "lease_holder reported a holder for a {state} lease: {holder:?}"
    );
    Ok(())
}
