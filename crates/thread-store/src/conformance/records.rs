//! The clauses about records: resolve, the one write (`finalize`) and its conditions, a
//! dropped write, archive and rebind, round trips and pages.

use super::*;

pub(super) async fn ts01_resolve_missing(h: &Harness, ns: &str) -> Check {
    let missing_key = format!("{ns}missing");
    expect_bound(h, &missing_key, None, "a missing key resolved to a record").await?;
    ensure!(
        by_key_any(h, &missing_key).await?.is_none(),
        "a missing key resolved to a record with include_archived"
    );
    let id = RecordId::generate();
    ensure!(
        ok!(h.store.resolve(&Query::id(id.clone())).await, "resolve").is_none(),
        "a missing id resolved to a record"
    );
    ensure!(
        by_id_any(h, &id).await?.is_none(),
        "a missing id resolved with include_archived"
    );
    let page = ok!(h.store.list(&ListQuery::prefix(ns)).await, "list");
    ensure!(
        page.records.is_empty() && page.next.is_none(),
        "an empty prefix listed records"
    );
    ensure!(
        ok!(h.store.delete(&missing_key).await, "delete") == 0,
        "deleting a missing key reported removed records"
    );
    Ok(())
}

pub(super) async fn ts02_stale_finalize(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let target = format!("{ns}lease");
    let original = sample(&key, 1);
    seed(h, &original).await?;

    // Stale token: the same owner re-acquired, rotating the token.
    let old = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let new = acquire(h, &target, "owner-a", LONG, "re-acquire").await?;
    let mut update = original.clone();
    update.state.resume_id = "must-not-appear".to_owned();
    let replacement = sample(&key, 2);
    let attempts: Vec<(&str, FinalizeRequest)> = vec![
        (
            "stale token (in-place update)",
            FinalizeRequest::new(update.clone())
                .holding(old.clone())
                .release_leases(),
        ),
        (
            "stale token (replace, archive, rebind)",
            turn(replacement.clone(), old.clone()).archive_previous(original.id.clone()),
        ),
        (
            "foreign owner with the current token",
            FinalizeRequest::new(update.clone()).holding(Lease {
                owner: "owner-b".to_owned(),
                ..new.clone()
            }),
        ),
        (
            "one current and one never-acquired lease",
            turn(replacement.clone(), new.clone()).holding(Lease {
                target: format!("{ns}never"),
                owner: "owner-a".to_owned(),
                token: new.token,
            }),
        ),
    ];
    for (what, request) in attempts {
        refused_writes_nothing(h, what, &request, &key, Some(&original)).await?;
        expect_current(h, &new, &format!("{what}: the current lease was released")).await?;
    }

    // Expired: the lease ran out before finalize.
    let ttl = h.short_ttl();
    let short_target = format!("{ns}short");
    let short = acquire(h, &short_target, "owner-a", ttl, "acquire").await?;
    h.outlast(ttl).await;
    let request = turn(replacement, short).archive_previous(original.id.clone());
    refused_writes_nothing(h, "expired lease", &request, &key, Some(&original)).await
}

/// What a TS-03 iteration observed after dropping the finalize future.
#[derive(Debug, PartialEq, Eq)]
enum Applied {
    Nothing,
    All,
}

pub(super) async fn ts03_dropped_finalize(h: &Harness, ns: &str) -> Check {
    let mut seen = BTreeSet::new();
    for (i, polls) in [0usize, 1, 2, 3, 4, 5, 6, 8, 12, 20, 50, 200]
        .into_iter()
        .enumerate()
    {
        let key = format!("{ns}thread-{i}");
        let target = format!("{ns}lease-{i}");
        let old = sample(&key, 1);
        seed(h, &old).await?;
        let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;
        let new = sample(&key, 2);
        let request = turn(new.clone(), lease.clone()).archive_previous(old.id.clone());
        let mut completed = None;
        {
            let mut fut = std::pin::pin!(h.store.finalize(&request));
            for _ in 0..polls {
                let step = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
                if let Poll::Ready(result) = step {
                    completed = Some(result);
                    break;
                }
                tokio::time::sleep(Duration::from_micros(100)).await;
            }
        }
        if let Some(result) = &completed {
            ensure!(
                result.is_ok(),
                "polls={polls}: the finalize failed: {result:?}"
            );
        }
        // Let work already handed to a backend (a blocking thread, a sent COMMIT) finish.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let observe = || async {
            let page = h
                .store
                .list(&ListQuery::prefix(&key).including_archived())
                .await
                .map_err(|e| format!("list failed: {e}"))?;
            let bound = by_key(h, &key).await?;
            Ok::<_, String>((page.records, bound))
        };
        let (records, bound) = observe().await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
        ensure!(
            observe().await? == (records.clone(), bound.clone()),
            "polls={polls}: the state kept changing after the future was dropped"
        );
        let current = is_current(h, &lease).await?;
        let mut archived_old = old.clone();
        archived_old.status = RecordStatus::Archived;
        let applied = if records == vec![old.clone()] && bound.as_ref() == Some(&old) && current {
            Applied::Nothing
        } else {
            let mut expected = vec![archived_old, new.clone()];
            expected.sort_by(|a, b| a.id.cmp(&b.id));
            ensure!(
                records == expected && bound.as_ref() == Some(&new) && !current,
                "polls={polls}: partial write: records (id, status) = {:?}, bound = {:?}, lease current = {current}",
                records
                    .iter()
                    .map(|r| (r.id.as_str(), r.status))
                    .collect::<Vec<_>>(),
                bound.as_ref().map(|r| r.id.as_str())
            );
            Applied::All
        };
        if completed.is_some() {
            ensure!(
                applied == Applied::All,
                "polls={polls}: a completed finalize wrote nothing"
            );
        }
        if polls == 0 {
            ensure!(applied == Applied::Nothing, "a never-polled finalize wrote");
        }
        seen.insert(format!("{applied:?}"));
    }
    ensure!(
        seen.len() == 2,
        "expected both untouched and fully applied outcomes across drop points, saw {seen:?}"
    );
    Ok(())
}

pub(super) async fn ts04_archive_rebind(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}thread");
    let old = sample(&key, 1);
    seed(h, &old).await?;
    let lease = acquire(h, &format!("{ns}lease"), "owner-a", LONG, "acquire").await?;
    let new = sample(&key, 2);
    let request = turn(new.clone(), lease).archive_previous(old.id.clone());
    finalize_ok(h, &request, "finalize (archive and rebind)").await?;
    let why = "the key does not resolve to the new record";
    expect_bound(h, &key, Some(&new), why).await?;
    ensure!(
        by_key_any(h, &key).await?.as_ref() == Some(&new),
        "the key with include_archived does not resolve to the new record"
    );
    ensure!(
        ok!(h.store.resolve(&Query::id(old.id.clone())).await, "resolve").is_none(),
        "the archived record is visible by id without include_archived"
    );
    let mut archived = old.clone();
    archived.status = RecordStatus::Archived;
    ensure!(
        by_id_any(h, &old.id).await?.as_ref() == Some(&archived),
        "the archived record is not resolvable by id with include_archived, or changed"
    );
    let active = ok!(h.store.list(&ListQuery::prefix(&key)).await, "list");
    ensure!(
        active.records == vec![new.clone()],
        "list shows archived records by default"
    );
    let all = ok!(
        h.store
            .list(&ListQuery::prefix(&key).including_archived())
            .await,
        "list"
    );
    ensure!(
        all.records.len() == 2,
        "list with archived records shows {} records",
        all.records.len()
    );

    // Archiving without a rebind leaves the key bound to a record it then hides.
    let third = sample(&key, 3);
    let request = FinalizeRequest::new(third.clone()).archive_previous(new.id.clone());
    finalize_ok(h, &request, "finalize (archive without rebind)").await?;
    let why = "a key bound to an archived record resolved without include_archived";
    expect_bound(h, &key, None, why).await?;
    let mut archived_new = new.clone();
    archived_new.status = RecordStatus::Archived;
    ensure!(
        by_key_any(h, &key).await?.as_ref() == Some(&archived_new),
        "a key bound to an archived record did not resolve with include_archived"
    );
    ensure!(
        by_id_any(h, &third.id).await?.as_ref() == Some(&third),
        "the unbound record was not saved"
    );
    Ok(())
}

pub(super) async fn ts05_require_key_absent(h: &Harness, ns: &str) -> Check {
    let key = format!("{ns}parent");
    let parent = sample(&key, 1);
    seed(h, &parent).await?;
    let target = format!("{ns}lease");
    let lease = acquire(h, &target, "owner-a", LONG, "acquire").await?;
    let fork = sample(&key, 2);
    let request = turn(fork.clone(), lease.clone()).require_key_absent();
    let refused = h.store.finalize(&request).await;
    expect_err!(AlreadyExists, refused, "a fork to a bound key");
    ensure!(
        by_id_any(h, &fork.id).await?.is_none(),
        "the refused fork record was written"
    );
    expect_bound(h, &key, Some(&parent), "the bound record changed").await?;
    expect_current(h, &lease, "the refused finalize released its lease").await?;

    let new_key = format!("{ns}child");
    let child = sample(&new_key, 3);
    let request = turn(child.clone(), lease).require_key_absent();
    finalize_ok(h, &request, "finalize (fork to an absent key)").await?;
    let why = "the fork is not bound to its key";
    expect_bound(h, &new_key, Some(&child), why).await?;
    expect_bound(h, &key, Some(&parent), "the parent changed").await?;
    Ok(())
}

pub(super) async fn ts12_round_trip(h: &Harness, ns: &str) -> Check {
    let mut records = Vec::new();
    let mut plain = sample(&format!("{ns}plain"), 9);
    plain.state.display_id = None;
    plain.state.data.clear();
    plain.compatibility.components = Breakdown::new();
    records.push(plain);

    let mut rich = sample(&format!("{ns}ünïcødé/键/🧵 with space"), 200);
    rich.driver_type = "driver \"quoted\" 'single'".to_owned();
    rich.agent = String::new();
    rich.session_codec = "codec\twith\ttabs".to_owned();
    rich.state.resume_id = String::new();
    rich.state.display_id = Some(String::new());
    rich.state.data.insert(String::new(), String::new());
    rich.state.data.insert(
        "json-ish".to_owned(),
        "{\"a\":[1,2,{\"b\":null}]}".to_owned(),
    );
    rich.state.data.insert(
        "newline\nkey".to_owned(),
        "line1\r\nline2\u{0}nul\\slash".to_owned(),
    );
    rich.state
        .data
        .insert("big".to_owned(), "x".repeat(64 * 1024));
    rich.state
        .data
        .insert("emoji".to_owned(), "🧵🪡".to_owned());
    rich.compatibility.scheme_version = u32::MAX;
    rich.compatibility.fingerprint = Fingerprint::from_bytes([0xff; 32]);
    for i in 0..20u8 {
        rich.compatibility.components.insert_or_replace(
            component(&format!("component-{i}")),
            Fingerprint::from_bytes([i; 32]),
        );
    }
    rich.created_at = Timestamp::from_millis(i64::MIN + 1);
    rich.updated_at = Timestamp::from_millis(i64::MAX);
    records.push(rich);

    let mut archived = sample(&format!("{ns}archived"), 3);
    archived.status = RecordStatus::Archived;
    records.push(archived);

    for record in &records {
        let mut request = FinalizeRequest::new(record.clone());
        if record.status == RecordStatus::Active {
            request = request.rebind_key();
        }
        finalize_ok(h, &request, "finalize (round trip)").await?;
        ensure!(
            by_id_any(h, &record.id).await?.as_ref() == Some(record),
            "resolve by id did not round-trip {:?}",
            record.key
        );
        if record.status == RecordStatus::Active {
            ensure!(
                by_key(h, &record.key).await?.as_ref() == Some(record),
                "resolve by key did not round-trip {:?}",
                record.key
            );
        }
        let page = ok!(
            h.store
                .list(&ListQuery::prefix(&record.key).including_archived())
                .await,
            "list"
        );
        ensure!(
            page.records == vec![record.clone()],
            "list did not round-trip {:?}",
            record.key
        );
    }

    // An in-place update replaces every field but the id and key.
    let mut updated = records[0].clone();
    updated.state.resume_id = "resume-updated".to_owned();
    updated.state.data.insert("turn".to_owned(), "2".to_owned());
    updated.updated_at = Timestamp::from_millis(1_900_000_000_000);
    updated.compatibility.scheme_version = 2;
    let request = FinalizeRequest::new(updated.clone());
    finalize_ok(h, &request, "finalize (in-place update)").await?;
    let why = "the in-place update did not round-trip";
    expect_bound(h, &updated.key, Some(&updated), why).await?;
    Ok(())
}

pub(super) async fn ts13_list_pages(h: &Harness, ns: &str) -> Check {
    let prefix = format!("{ns}list_%/");
    let mut all = Vec::new();
    for (i, suffix) in ["a", "b", "b/sub", "c", "d_%", "e", "f"]
        .into_iter()
        .enumerate()
    {
        let key = format!("{prefix}{suffix}");
        let n = u8::try_from(i).unwrap_or(0);
        let first = sample(&key, n);
        seed(h, &first).await?;
        all.push(first.clone());
        if i % 2 == 0 {
            let second = sample(&key, n + 100);
            let request = FinalizeRequest::new(second.clone())
                .archive_previous(first.id.clone())
                .rebind_key();
            finalize_ok(h, &request, "finalize (archive and rebind)").await?;
            if let Some(r) = all.last_mut() {
                r.status = RecordStatus::Archived;
            }
            all.push(second);
        }
    }
    // The prefix itself is a key; neighbours outside it must not appear.
    let exact = sample(&prefix, 50);
    seed(h, &exact).await?;
    all.push(exact);
    for outside in [
        format!("{ns}list_%"),
        format!("{ns}list_x/a"),
        format!("{ns}list_%0"),
    ] {
        seed(h, &sample(&outside, 60)).await?;
    }
    all.sort_by(|a, b| (&a.key, &a.id).cmp(&(&b.key, &b.id)));
    let active: Vec<ThreadRecord> = all
        .iter()
        .filter(|r| r.status == RecordStatus::Active)
        .cloned()
        .collect();

    for include_archived in [false, true] {
        let expected = if include_archived { &all } else { &active };
        for limit in [1u32, 2, 3, 100] {
            let mut query = ListQuery::prefix(&prefix).limit(limit);
            if include_archived {
                query = query.including_archived();
            }
            let mut got = Vec::new();
            let mut pages = 0;
            loop {
                let page = ok!(h.store.list(&query).await, "list");
                pages += 1;
                ensure!(
                    page.records.len() <= limit as usize,
                    "a page exceeds its limit"
                );
                ensure!(pages <= expected.len() + 1, "paging does not terminate");
                got.extend(page.records);
                match page.next {
                    Some(cursor) => query = query.after(cursor),
                    None => break,
                }
            }
            ensure!(
                &got == expected,
                "limit {limit}, archived {include_archived}: paged listing differs from the expected {} records (got {})",
                expected.len(),
                got.len()
            );
        }
    }

    // A page cursor stays valid while records are added before and after it.
    let query = ListQuery::prefix(&prefix).limit(3);
    let first = ok!(h.store.list(&query).await, "list");
    let Some(cursor) = first.next.clone() else {
        return Err("the first page of a long listing has no cursor".to_owned());
    };
    seed(h, &sample(&format!("{prefix}0-before"), 70)).await?;
    let late = sample(&format!("{prefix}z-after"), 71);
    seed(h, &late).await?;
    let mut rest = Vec::new();
    let mut q = query.after(cursor);
    loop {
        let page = ok!(h.store.list(&q).await, "list");
        rest.extend(page.records);
        match page.next {
            Some(c) => q = q.after(c),
            None => break,
        }
    }
    let mut expected_rest: Vec<ThreadRecord> = active[3..].to_vec();
    expected_rest.push(late);
    ensure!(
        rest == expected_rest,
        "pages after a cursor changed when records were added around it"
    );
    ensure!(
        first.records.iter().all(|r| !rest.contains(r)),
        "a record appeared on two pages"
    );
    Ok(())
}

/// The keys of a listing, in order.
async fn listed_keys(h: &Harness, query: ListQuery, what: &str) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut query = query;
    loop {
        let page = ok!(h.store.list(&query).await, what);
        keys.extend(page.records.iter().map(|r| r.key.clone()));
        match page.next {
            Some(next) => query = query.after(next),
            None => return Ok(keys),
        }
    }
}

pub(super) async fn ts20_namespace(h: &Harness, ns: &str) -> Check {
    // Namespaces of this clause only: clauses may share one database.
    let (alice, bob) = (format!("user:alice-{ns}"), format!("user:bob-{ns}"));
    let a1 = sample(&format!("{ns}a1"), 1).owned_by(alice.clone());
    let a2 = sample(&format!("{ns}a2"), 2).owned_by(alice.clone());
    let b1 = sample(&format!("{ns}b1"), 3).owned_by(bob.clone());
    let mut none = sample(&format!("{ns}none"), 4);
    none.namespace = None;
    for record in [&a1, &a2, &b1, &none] {
        seed(h, record).await?;
        ensure!(
            by_id_any(h, &record.id).await?.as_ref() == Some(record),
            "the owning namespace of {:?} did not round-trip",
            record.key
        );
    }
    // An archived record of alice's: listed with archived records only.
    let mut old = sample(&format!("{ns}a2"), 5).owned_by(alice.clone());
    old.status = RecordStatus::Archived;
    finalize_ok(h, &FinalizeRequest::new(old), "finalize (archived)").await?;

    let keys = |names: &[&str]| names.iter().map(|n| format!("{ns}{n}")).collect::<Vec<_>>();
    let of = |owner: &str| ListQuery::prefix(ns).namespace(owner).limit(1);
    let listed = listed_keys(h, of(&alice), "list alice's").await?;
    ensure!(
        listed == keys(&["a1", "a2"]),
        "alice's listing is {listed:?}"
    );
    let listed = listed_keys(h, of(&alice).including_archived(), "list alice's, archived").await?;
    ensure!(
        listed == keys(&["a1", "a2", "a2"]),
        "alice's listing with archived records is {listed:?}"
    );
    let listed = listed_keys(h, of(&bob), "list bob's").await?;
    ensure!(listed == keys(&["b1"]), "bob's listing is {listed:?}");
    let listed = listed_keys(h, of("user:nobody"), "list nobody's").await?;
    ensure!(
        listed.is_empty(),
        "a namespace owning nothing lists {listed:?}"
    );
    let listed = listed_keys(h, ListQuery::prefix(ns).limit(2), "list all").await?;
    ensure!(
        listed == keys(&["a1", "a2", "b1", "none"]),
        "the listing of every owner is {listed:?}"
    );

    // An in-place update may give an unowned record its owner (a claim); it round-trips.
    let claimed = none.clone().owned_by(bob.clone());
    finalize_ok(
        h,
        &FinalizeRequest::new(claimed.clone()),
        "finalize (claim)",
    )
    .await?;
    expect_bound(
        h,
        &claimed.key,
        Some(&claimed),
        "the claim did not round-trip",
    )
    .await?;
    let listed = listed_keys(h, of(&bob), "list bob's after the claim").await?;
    ensure!(
        listed == keys(&["b1", "none"]),
        "bob's listing is {listed:?}"
    );

    // An empty or NUL-holding namespace is refused and writes nothing.
    for bad in ["", "user:a\u{0}b"] {
        let record = sample(&format!("{ns}bad"), 6).owned_by(bad);
        expect_err!(
            InvalidInput,
            h.store
                .finalize(&FinalizeRequest::new(record.clone()).rebind_key())
                .await,
            "a record namespace {bad:?}"
        );
        expect_bound(h, &record.key, None, "a refused record was written").await?;
        expect_err!(
            InvalidInput,
            h.store.list(&ListQuery::prefix(ns).namespace(bad)).await,
            "a list namespace {bad:?}"
        );
    }
    Ok(())
}
