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

/// Tasks per race worker process, each its own lease owner.
const RACE_TASKS: usize = 4;
/// Threads the race is over: every task takes turns on each of them in round robin, so
/// finalizes of different Threads run at once and are group-committed.
const RACE_KEYS: usize = 2;

/// [`RACE_TASKS`] concurrent tasks, each running `TURNS` Thread turns (acquire, retrying on
/// Busy; resolve; finalize with release) over the [`RACE_KEYS`] keys in turn. Prints
/// `TURN <key> <counter read> <token>` for each turn, then the group-commit statistics.
#[test]
#[ignore = "child-process worker of sqlite_processes_race_for_one_thread_lease"]
fn child_worker_race() {
    let Ok(db) = std::env::var(DB_ENV) else {
        return;
    };
    let owner = std::env::var(OWNER_ENV).unwrap();
    let turns: usize = std::env::var(TURNS_ENV).unwrap().parse().unwrap();
    runtime().block_on(async {
        let store = Arc::new(open_sqlite(db.as_ref(), Arc::new(SystemClock)).await);
        let mut tasks = Vec::new();
        for task in 0..RACE_TASKS {
            let (store, owner) = (Arc::clone(&store), format!("{owner}-{task}"));
            tasks.push(tokio::spawn(async move {
                let mut lines = Vec::new();
                let mut busy = 0u64;
                for turn in 0..turns {
                    let k = (turn + task) % RACE_KEYS;
                    let (key, target) = (format!("{RACE_KEY}/{k}"), format!("{RACE_TARGET}/{k}"));
                    let lease = loop {
                        match store
                            .acquire_lease(&target, &owner, Duration::from_secs(30))
                            .await
                        {
                            Ok(lease) => break lease,
                            Err(StoreError::Busy { .. }) => {
                                busy += 1;
                                tokio::time::sleep(Duration::from_micros(200)).await;
                            }
                            Err(e) => panic!("acquire failed: {e}"),
                        }
                    };
                    let current = store.resolve(&Query::key(key.clone())).await.unwrap();
                    let read = current.as_ref().map_or(0, counter_of);
                    let next = match current {
                        Some(mut existing) => {
                            existing
                                .state
                                .data
                                .insert("counter".into(), (read + 1).to_string());
                            existing
                        }
                        None => record(&key, 1),
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
                    lines.push(format!("TURN {k} {read} {}", lease.token));
                    tokio::task::yield_now().await;
                }
                (lines, busy)
            }));
        }
        let mut busy = 0;
        for task in tasks {
            let (lines, b) = task.await.unwrap();
            for line in lines {
                println!("{line}");
            }
            busy += b;
        }
        println!("BUSY {busy}");
        let stats = store.group_commit_stats();
        println!(
            "STATS {} finalizes in {} commits, largest batch {}",
            stats.finalizes, stats.commits, stats.largest_batch
        );
    });
}

/// Two processes of [`RACE_TASKS`] tasks each race for the leases of [`RACE_KEYS`] Threads, at
/// `synchronous=FULL` with group commit: every turn has exactly one winner (each counter value
/// of each key is read exactly once, so no checkpoint was lost or doubled), and each key's
/// winners hold ever fresher fencing tokens.
#[test]
fn sqlite_processes_race_for_one_thread_lease() {
    const TURNS_EACH: usize = 25;
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
    let mut turns: Vec<Vec<(u64, u64)>> = vec![Vec::new(); RACE_KEYS];
    let mut busy = 0u64;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a race worker failed: {:?}",
            out.status
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let mut reported = 0;
        for line in stdout.lines() {
            // libtest prints "test <name> ... " before the worker's first line.
            let line = ["TURN ", "BUSY ", "STATS "]
                .iter()
                .find_map(|tag| line.find(tag).map(|at| &line[at..]))
                .unwrap_or("");
            let mut parts = line.split_whitespace();
            match parts.next() {
                Some("TURN") => {
                    let key: usize = parts.next().unwrap().parse().unwrap();
                    let read: u64 = parts.next().unwrap().parse().unwrap();
                    let token: u64 = parts.next().unwrap().parse().unwrap();
                    turns[key].push((read, token));
                    reported += 1;
                }
                Some("BUSY") => busy += parts.next().unwrap().parse::<u64>().unwrap(),
                Some("STATS") => println!("worker group commit: {line}"),
                _ => {}
            }
        }
        assert_eq!(
            reported,
            TURNS_EACH * RACE_TASKS,
            "a worker did not report every turn"
        );
    }
    let total = 2 * TURNS_EACH * RACE_TASKS;
    let finals = runtime().block_on(async {
        let store = open_sqlite(&db, Arc::new(SystemClock)).await;
        let mut finals = Vec::new();
        for k in 0..RACE_KEYS {
            let key = format!("{RACE_KEY}/{k}");
            finals.push(counter_of(
                &store.resolve(&Query::key(key)).await.unwrap().unwrap(),
            ));
        }
        finals
    });
    for (k, mut key_turns) in turns.into_iter().enumerate() {
        // Exactly one winner per turn of this key: every counter value read exactly once.
        key_turns.sort_unstable();
        let reads: Vec<u64> = key_turns.iter().map(|t| t.0).collect();
        let expected: Vec<u64> = (0..key_turns.len() as u64).collect();
        assert_eq!(reads, expected, "key {k}: lost or doubled checkpoints");
        assert!(
            key_turns.windows(2).all(|w| w[0].1 < w[1].1),
            "key {k}: fencing tokens did not increase from turn to turn"
        );
        assert_eq!(finals[k], key_turns.len() as u64, "key {k}: final counter");
    }
    println!("{total} turns, {busy} Busy refusals");
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
