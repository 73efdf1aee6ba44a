//! Several OS processes on one SQLite file: a lease race with no lost or doubled checkpoint,
//! and a lease holder killed with SIGKILL whose token can no longer write.
//!
//! The children are this test binary itself, started with `--ignored --exact` on a worker
//! test and told what to do through environment variables. Run directly, the workers do
//! nothing.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use thread_store::{
    FinalizeRequest, Lease, ManualClock, Query, StoreError, SystemClock, ThreadStore,
};

use crate::{counter_of, open_sqlite, record, runtime};

const DB_ENV: &str = "THREAD_STORE_TEST_WORKER_DB";
const OWNER_ENV: &str = "THREAD_STORE_TEST_WORKER_OWNER";
const TURNS_ENV: &str = "THREAD_STORE_TEST_WORKER_TURNS";
const RACE_KEY: &str = "race/thread";
const RACE_TARGET: &str = "thread:race/thread";
const KILLED_TARGET: &str = "thread:killed";
const KILLED_KEY: &str = "killed/thread";
const KILLED_TTL: Duration = Duration::from_secs(30);

fn worker(test: &str, db: &std::path::Path, owner: &str, turns: usize) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(DB_ENV, db)
    .env(OWNER_ENV, owner)
    .env(TURNS_ENV, turns.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    cmd
}

/// One Thread turn per loop, `TURNS` times: acquire (retrying on Busy), resolve, finalize
/// with release. Prints `TURN <counter read> <token>` for each.
#[test]
#[ignore = "child-process worker of sqlite_processes_race_for_one_thread_lease"]
fn child_worker_race() {
    let Ok(db) = std::env::var(DB_ENV) else {
        return;
    };
    let owner = std::env::var(OWNER_ENV).unwrap();
    let turns: usize = std::env::var(TURNS_ENV).unwrap().parse().unwrap();
    runtime().block_on(async {
        let store = open_sqlite(db.as_ref(), Arc::new(SystemClock)).await;
        let mut busy = 0u64;
        let mut done = 0;
        while done < turns {
            let lease = match store
                .acquire_lease(RACE_TARGET, &owner, Duration::from_secs(30))
                .await
            {
                Ok(lease) => lease,
                Err(StoreError::Busy { .. }) => {
                    busy += 1;
                    tokio::time::sleep(Duration::from_micros(200)).await;
                    continue;
                }
                Err(e) => panic!("acquire failed: {e}"),
            };
            let current = store.resolve(&Query::key(RACE_KEY)).await.unwrap();
            let read = current.as_ref().map_or(0, counter_of);
            let next = match current {
                Some(mut existing) => {
                    existing
                        .state
                        .data
                        .insert("counter".into(), (read + 1).to_string());
                    existing
                }
                None => record(RACE_KEY, 1),
            };
            store
                .finalize(
                    &FinalizeRequest::new(next)
                        .holding(lease.clone())
                        .rebind_key()
                        .release_leases(),
                )
                .await
                .unwrap();
            println!("TURN {read} {}", lease.token);
            done += 1;
            tokio::task::yield_now().await;
        }
        println!("BUSY {busy}");
    });
}

#[test]
fn sqlite_processes_race_for_one_thread_lease() {
    const TURNS_EACH: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("race.sqlite3");
    let children: Vec<_> = ["proc-a", "proc-b"]
        .into_iter()
        .map(|owner| {
            worker("processes::child_worker_race", &db, owner, TURNS_EACH)
                .spawn()
                .unwrap()
        })
        .collect();
    let mut turns = Vec::new();
    let mut busy = 0u64;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a race worker failed: {:?}",
            out.status
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let before = turns.len();
        for line in stdout.lines() {
            // libtest prints "test <name> ... " before the worker's first line.
            let line = ["TURN ", "BUSY "]
                .iter()
                .find_map(|tag| line.find(tag).map(|at| &line[at..]))
                .unwrap_or("");
            let mut parts = line.split_whitespace();
            match parts.next() {
                Some("TURN") => {
                    let read: u64 = parts.next().unwrap().parse().unwrap();
                    let token: u64 = parts.next().unwrap().parse().unwrap();
                    turns.push((read, token));
                }
                Some("BUSY") => busy += parts.next().unwrap().parse::<u64>().unwrap(),
                _ => {}
            }
        }
        assert_eq!(
            turns.len() - before,
            TURNS_EACH,
            "a worker did not report every turn"
        );
    }
    // Exactly one process won each round: every counter value was read exactly once, so no
    // checkpoint was lost (a value read twice) or doubled (a value skipped).
    turns.sort_unstable();
    let reads: Vec<u64> = turns.iter().map(|t| t.0).collect();
    let expected: Vec<u64> = (0..2 * TURNS_EACH as u64).collect();
    assert_eq!(reads, expected, "lost or doubled checkpoints");
    // Each round's winner held a fresher fencing token than the round before.
    assert!(
        turns.windows(2).all(|w| w[0].1 < w[1].1),
        "fencing tokens did not increase from round to round"
    );
    let final_counter = runtime().block_on(async {
        let store = open_sqlite(&db, Arc::new(SystemClock)).await;
        counter_of(&store.resolve(&Query::key(RACE_KEY)).await.unwrap().unwrap())
    });
    assert_eq!(final_counter, 2 * TURNS_EACH as u64);
    println!("{} turns, {busy} Busy refusals", turns.len());
}

/// Takes the lease on [`KILLED_TARGET`], prints `LEASE <token>`, and waits to be killed.
#[test]
#[ignore = "child-process worker of sqlite_killed_holder_is_fenced_out"]
fn child_worker_hold() {
    let Ok(db) = std::env::var(DB_ENV) else {
        return;
    };
    let owner = std::env::var(OWNER_ENV).unwrap();
    runtime().block_on(async {
        let store = open_sqlite(db.as_ref(), Arc::new(SystemClock)).await;
        let lease = store
            .acquire_lease(KILLED_TARGET, &owner, KILLED_TTL)
            .await
            .unwrap();
        println!("LEASE {}", lease.token);
        tokio::time::sleep(Duration::from_secs(120)).await;
    });
}

#[test]
fn sqlite_killed_holder_is_fenced_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("killed.sqlite3");
    let mut child = worker("processes::child_worker_hold", &db, "doomed-host", 0)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let dead_token: u64 = BufReader::new(stdout)
        .lines()
        .map(Result::unwrap)
        .find_map(|line| {
            let at = line.find("LEASE ")?;
            Some(line[at + "LEASE ".len()..].trim().parse().unwrap())
        })
        .expect("the holder printed its lease");
    child.kill().unwrap(); // SIGKILL on Unix: no cleanup runs in the child.
    let status = child.wait().unwrap();
    assert!(!status.success(), "the holder was not killed");

    // This host's clock is manual, starting at the real time the holder used.
    let clock = ManualClock::starting_now();
    runtime().block_on(async {
        let store = open_sqlite(&db, Arc::new(clock.clone())).await;
        let dead = Lease {
            target: KILLED_TARGET.to_owned(),
            owner: "doomed-host".to_owned(),
            token: dead_token,
        };
        // Until the TTL runs out, the dead holder's lease still stands.
        assert!(matches!(
            store
                .acquire_lease(KILLED_TARGET, "survivor", KILLED_TTL)
                .await,
            Err(StoreError::Busy { .. })
        ));
        clock.advance(KILLED_TTL + Duration::from_secs(1));
        let survivor = store
            .acquire_lease(KILLED_TARGET, "survivor", KILLED_TTL)
            .await
            .unwrap();
        assert!(survivor.token > dead_token, "the new token is not higher");

        // A finalize carrying the dead owner's token (say, from a paused twin) writes nothing.
        let zombie = record(KILLED_KEY, 99);
        let refused = store
            .finalize(
                &FinalizeRequest::new(zombie.clone())
                    .holding(dead.clone())
                    .rebind_key()
                    .release_leases(),
            )
            .await;
        assert!(
            matches!(refused, Err(StoreError::LeaseLost { .. })),
            "{refused:?}"
        );
        assert_eq!(store.resolve(&Query::key(KILLED_KEY)).await.unwrap(), None);
        assert_eq!(
            store
                .resolve(&Query::id(zombie.id.clone()).including_archived())
                .await
                .unwrap(),
            None
        );
        // Nor can the dead owner's lease be renewed, and the survivor's lease is untouched.
        assert!(matches!(
            store.renew_lease(&dead, KILLED_TTL).await,
            Err(StoreError::LeaseLost { .. })
        ));
        store.renew_lease(&survivor, KILLED_TTL).await.unwrap();
        let mine = record(KILLED_KEY, 1);
        store
            .finalize(
                &FinalizeRequest::new(mine.clone())
                    .holding(survivor)
                    .rebind_key()
                    .release_leases(),
            )
            .await
            .unwrap();
        assert_eq!(
            store.resolve(&Query::key(KILLED_KEY)).await.unwrap(),
            Some(mine)
        );
    });
}
