//! The clauses about leases: busy, fencing tokens, renewal, release and `lease_holder`.

use super::*;

pub(super) async fn ts06_busy(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    match h.store.acquire_lease(&target, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => return Err(format!("expected Busy, got {other:?}")),
    }
    ensure!(
        is_current(h, &a).await?,
        "a Busy refusal disturbed the holder"
    );
    ok!(h.store.release_lease(&a).await, "release");
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire after release"
    );
    ensure!(
        b.owner == "owner-b" && b.target == target,
        "the lease names the wrong owner or target"
    );
    Ok(())
}

pub(super) async fn ts07_token_increases(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let ttl = h.short_ttl();
    let t1 = ok!(
        h.store.acquire_lease(&target, "owner-a", ttl).await,
        "acquire"
    )
    .token;
    let t2 = ok!(
        h.store.acquire_lease(&target, "owner-a", ttl).await,
        "re-acquire"
    )
    .token;
    ensure!(
        t2 > t1,
        "same-owner re-acquire: token {t2} is not above {t1}"
    );
    h.outlast(ttl).await;
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire over expired"
    );
    ensure!(
        b.token > t2,
        "acquire over an expired lease: token {} is not above {t2}",
        b.token
    );
    ok!(h.store.release_lease(&b).await, "release");
    let t4 = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire after release"
    )
    .token;
    ensure!(
        t4 > b.token,
        "acquire after release: token {t4} is not above {}",
        b.token
    );
    let other = ok!(
        h.store
            .acquire_lease(&format!("{ns}other"), "owner-c", LONG)
            .await,
        "acquire another target"
    );
    ensure!(
        other.token > t4,
        "tokens are not store-wide increasing: {} after {t4}",
        other.token
    );
    Ok(())
}

pub(super) async fn ts08_renew(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let first = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    let renewed = ok!(h.store.renew_lease(&first, LONG).await, "renew");
    ensure!(renewed == first, "renew changed the lease: {renewed:?}");
    let second = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "re-acquire"
    );
    expect_lease_lost(
        "renew with a stale token",
        h.store.renew_lease(&first, LONG).await,
    )?;
    ensure!(
        is_current(h, &second).await?,
        "the current lease is not renewable"
    );
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
    let lease = ok!(
        h.store.acquire_lease(&short_target, "owner-a", ttl).await,
        "acquire"
    );
    if let TimeControl::Manual(clock) = &h.time {
        clock.advance(ttl * 2 / 3);
        ok!(
            h.store.renew_lease(&lease, ttl).await,
            "renew before expiry"
        );
        clock.advance(ttl * 2 / 3);
        match h.store.acquire_lease(&short_target, "owner-b", ttl).await {
            Err(StoreError::Busy { .. }) => {}
            other => {
                return Err(format!(
                    "a renewed lease expired at its old deadline: {other:?}"
                ));
            }
        }
    }
    h.outlast(ttl).await;
    expect_lease_lost("renew after expiry", h.store.renew_lease(&lease, ttl).await)?;
    Ok(())
}

pub(super) async fn ts09_release_idempotent(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let a = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
    ok!(h.store.release_lease(&a).await, "release");
    ok!(h.store.release_lease(&a).await, "second release");
    let b = ok!(
        h.store.acquire_lease(&target, "owner-b", LONG).await,
        "acquire after release"
    );
    ok!(h.store.release_lease(&a).await, "stale release");
    ensure!(
        is_current(h, &b).await?,
        "a stale release freed another owner's lease"
    );
    match h.store.acquire_lease(&target, "owner-a", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => {
            return Err(format!(
                "after a stale release: expected Busy, got {other:?}"
            ));
        }
    }
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
    let l1 = ok!(h.store.acquire_lease(&t1, "owner-a", LONG).await, "acquire");
    let l2 = ok!(h.store.acquire_lease(&t2, "owner-a", LONG).await, "acquire");
    let l3 = ok!(h.store.acquire_lease(&t3, "owner-a", LONG).await, "acquire");
    let record = sample(&key, 1);
    ok!(
        h.store
            .finalize(
                &FinalizeRequest::new(record.clone())
                    .holding(l1)
                    .holding(l2)
                    .rebind_key()
                    .release_leases()
            )
            .await,
        "finalize"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&record),
        "the record was not saved"
    );
    ok!(
        h.store.acquire_lease(&t1, "owner-b", LONG).await,
        "acquire a released lease (1)"
    );
    ok!(
        h.store.acquire_lease(&t2, "owner-b", LONG).await,
        "acquire a released lease (2)"
    );
    match h.store.acquire_lease(&t3, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => {
            return Err(format!(
                "a lease not in the request was released: {other:?}"
            ));
        }
    }
    // Without the release option, validated leases stay held.
    let update = ThreadRecord {
        updated_at: Timestamp::from_millis(1_800_000_000_000),
        ..record
    };
    ok!(
        h.store
            .finalize(&FinalizeRequest::new(update.clone()).holding(l3.clone()))
            .await,
        "finalize without release"
    );
    ensure!(
        by_key(h, &key).await?.as_ref() == Some(&update),
        "the in-place update was not saved"
    );
    ensure!(
        is_current(h, &l3).await?,
        "a finalize without release_leases released a lease"
    );
    Ok(())
}

pub(super) async fn ts17_lease_holder(h: &Harness, ns: &str) -> Check {
    let target = format!("{ns}lease");
    let free = ok!(h.store.lease_holder(&target).await, "lease_holder (free)");
    ensure!(free.is_none(), "a free target reported a holder: {free:?}");

    let lease = ok!(
        h.store.acquire_lease(&target, "owner-a", LONG).await,
        "acquire"
    );
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
    ensure!(
        is_current(h, &lease).await?,
        "lease_holder disturbed the holder"
    );
    match h.store.acquire_lease(&target, "owner-b", LONG).await {
        Err(StoreError::Busy { .. }) => {}
        other => return Err(format!("expected Busy after lease_holder, got {other:?}")),
    }

    ok!(h.store.release_lease(&lease).await, "release");
    let released = ok!(
        h.store.lease_holder(&target).await,
        "lease_holder (released)"
    );
    ensure!(
        released.is_none(),
        "a released lease was reported: {released:?}"
    );

    let ttl = h.short_ttl();
    ok!(
        h.store.acquire_lease(&target, "owner-c", ttl).await,
        "acquire (short)"
    );
    h.outlast(ttl).await;
    let expired = ok!(
        h.store.lease_holder(&target).await,
        "lease_holder (expired)"
    );
    ensure!(
        expired.is_none(),
        "an expired lease was reported: {expired:?}"
    );
    Ok(())
}
