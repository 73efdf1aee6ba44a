//! SQLite: the adapter in each execution mode beside a bare loop issuing its statements on
//! one rusqlite connection, the cost of thread hops, and the disk's commit rate.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use thread_store::sqlite::{Execution, SqliteConfig, SqliteStore, Synchronous};
use thread_store::{ThreadStore, Timestamp};

use crate::report::{Measurement, Report};
use crate::workloads::{self, SAMPLES, median, sample};
use crate::{adapter_turn, seed};

const KEY: &str = "bench/thread-0000";
const TARGET: &str = "thread:bench/thread-0000";
const OWNER: &str = "bench-host";

const SELECT_BY_KEY: &str = "SELECT t.id, t.key, t.status, t.format, t.driver_type, t.agent, \
    t.fingerprint, t.scheme_version, t.components, t.codec, t.state, t.created_at, t.updated_at \
    FROM bindings b JOIN threads t ON t.id = b.record_id WHERE b.key = ?1";

fn raw_sqlite(path: &Path, sync: Synchronous) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let sync = match sync {
        Synchronous::Full => "FULL",
        _ => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};"
    ))
    .unwrap();
    conn
}

#[derive(Clone)]
struct Row {
    cols: [String; 13],
}

fn bare_sqlite_turn(conn: &mut Connection, n: u64) {
    let now = Timestamp::now().as_millis();
    // Acquire.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let _holder: Option<(String, i64)> = tx
        .prepare_cached("SELECT owner, expires_at FROM leases WHERE target = ?1")
        .unwrap()
        .query_row(params![TARGET], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .unwrap();
    let token: i64 = tx
        .prepare_cached("UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last")
        .unwrap()
        .query_row([], |r| r.get(0))
        .unwrap();
    tx.prepare_cached(
        "INSERT INTO leases (target, owner, token, expires_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, token = excluded.token, \
         expires_at = excluded.expires_at",
    )
    .unwrap()
    .execute(params![TARGET, OWNER, token, now + 60_000])
    .unwrap();
    tx.commit().unwrap();
    // Resolve.
    let mut row = conn
        .prepare_cached(SELECT_BY_KEY)
        .unwrap()
        .query_row(params![KEY], |r| {
            Ok(Row {
                cols: [
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get::<_, i64>(3)?.to_string(),
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get::<_, i64>(7)?.to_string(),
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get::<_, i64>(11)?.to_string(),
                    r.get::<_, i64>(12)?.to_string(),
                ],
            })
        })
        .unwrap();
    row.cols[12] = (now + i64::try_from(n).unwrap()).to_string();
    // Finalize and release.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let ok: Option<i64> = tx
        .prepare_cached(
            "SELECT 1 FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3 AND expires_at > ?4",
        )
        .unwrap()
        .query_row(params![TARGET, OWNER, token, now], |r| r.get(0))
        .optional()
        .unwrap();
    assert!(ok.is_some());
    let c = &row.cols;
    let saved: Option<i64> = tx
        .prepare_cached(
            "INSERT INTO threads (id, key, status, format, driver_type, agent, fingerprint, \
             scheme_version, components, codec, state, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, format = excluded.format, \
             driver_type = excluded.driver_type, agent = excluded.agent, \
             fingerprint = excluded.fingerprint, scheme_version = excluded.scheme_version, \
             components = excluded.components, codec = excluded.codec, state = excluded.state, \
             created_at = excluded.created_at, updated_at = excluded.updated_at \
             WHERE threads.key = excluded.key RETURNING 1",
        )
        .unwrap()
        .query_row(
            params![
                c[0],
                c[1],
                c[2],
                c[3].parse::<i64>().unwrap(),
                c[4],
                c[5],
                c[6],
                c[7].parse::<i64>().unwrap(),
                c[8],
                c[9],
                c[10],
                c[11].parse::<i64>().unwrap(),
                c[12].parse::<i64>().unwrap()
            ],
            |r| r.get(0),
        )
        .optional()
        .unwrap();
    assert!(saved.is_some());
    tx.prepare_cached("DELETE FROM leases WHERE target = ?1 AND owner = ?2 AND token = ?3")
        .unwrap()
        .execute(params![TARGET, OWNER, token])
        .unwrap();
    tx.commit().unwrap();
}

/// The literal commit bound: an empty `BEGIN IMMEDIATE; COMMIT`. SQLite writes nothing for a
/// transaction that changed nothing, so this measures locking, not the disk.
fn empty_commit(conn: &mut Connection) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    tx.commit().unwrap();
}

/// The disk's commit bound: the smallest commit that reaches the WAL (one row changed).
fn minimal_commit(conn: &mut Connection) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    tx.prepare_cached("UPDATE bench_tick SET n = n + 1 WHERE id = 1")
        .unwrap()
        .execute([])
        .unwrap();
    tx.commit().unwrap();
}

/// A store at `path` with Threads `0..64` seeded.
pub(crate) async fn seeded(path: &Path, sync: Synchronous, execution: Execution) -> SqliteStore {
    let store = SqliteStore::open(
        SqliteConfig::new(path)
            .synchronous(sync)
            .execution(execution),
    )
    .await
    .unwrap();
    seed(&store, 64).await;
    store
}

/// A connection owned by a dedicated thread, driven over a channel: the other way to keep
/// blocking calls off the runtime, measured to choose between it and `spawn_blocking`.
struct Dedicated {
    tx: std::sync::mpsc::Sender<(u64, tokio::sync::oneshot::Sender<()>)>,
}

impl Dedicated {
    fn new(mut conn: Connection) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<(u64, tokio::sync::oneshot::Sender<()>)>();
        std::thread::spawn(move || {
            while let Ok((n, done)) = rx.recv() {
                if n != u64::MAX {
                    bare_sqlite_turn(&mut conn, n);
                }
                let _ = done.send(());
            }
        });
        Self { tx }
    }

    /// One turn as three round trips (acquire, resolve, finalize), like the adapter makes.
    async fn turn(&self, n: u64) {
        for step in 0..3 {
            let (done, wait) = tokio::sync::oneshot::channel();
            // Only the last step does the work: the first two measure the hop alone.
            self.tx
                .send((if step == 2 { n } else { u64::MAX }, done))
                .unwrap();
            wait.await.unwrap();
        }
    }
}

pub(crate) async fn bench(report: &mut Report, dir: &Path, sync: Synchronous) {
    let label = match sync {
        Synchronous::Full => "FULL",
        _ => "NORMAL",
    };
    let adapter = Arc::new(
        seeded(
            &dir.join(format!("adapter-{label}.db")),
            sync,
            Execution::default(),
        )
        .await,
    );
    let pool = seeded(
        &dir.join(format!("pool-{label}.db")),
        sync,
        Execution::BlockingPool,
    )
    .await;
    let mut bare = Vec::new();
    for name in ["bare", "pooled", "dedicated"] {
        let path = dir.join(format!("{name}-{label}.db"));
        drop(seeded(&path, sync, Execution::default()).await);
        bare.push(raw_sqlite(&path, sync));
    }
    let dedicated = Dedicated::new(bare.pop().unwrap());
    let pooled = Arc::new(Mutex::new(bare.pop().unwrap()));
    let mut bare = bare.pop().unwrap();
    let bound_path = dir.join(format!("bound-{label}.db"));
    drop(seeded(&bound_path, sync, Execution::default()).await);
    let mut bound = raw_sqlite(&bound_path, sync);
    bound
        .execute_batch(
            "CREATE TABLE bench_tick (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
             INSERT INTO bench_tick VALUES (1, 0);",
        )
        .unwrap();

    let mut s: [Vec<Duration>; 7] = Default::default();
    for _ in 0..SAMPLES {
        s[0].push(sample(|n| adapter_turn(adapter.as_ref(), 0, n)).await);
        s[6].push(sample(|n| adapter_turn(&pool, 0, n)).await);
        s[1].push(
            sample(|n| {
                bare_sqlite_turn(&mut bare, n);
                std::future::ready(())
            })
            .await,
        );
        s[2].push(
            sample(|n| {
                let pooled = Arc::clone(&pooled);
                async move {
                    // Three hops to the blocking pool, as the adapter made; one does the work.
                    for step in 0..3 {
                        let pooled = Arc::clone(&pooled);
                        tokio::task::spawn_blocking(move || {
                            if step == 2 {
                                bare_sqlite_turn(&mut pooled.lock().unwrap(), n);
                            }
                        })
                        .await
                        .unwrap();
                    }
                }
            })
            .await,
        );
        s[3].push(sample(|n| dedicated.turn(n)).await);
        s[4].push(
            sample(|_| {
                empty_commit(&mut bound);
                std::future::ready(())
            })
            .await,
        );
        s[5].push(
            sample(|_| {
                minimal_commit(&mut bound);
                std::future::ready(())
            })
            .await,
        );
    }
    let [a, b, p, d, e, m, i] = s.map(median);
    let vs_bare = |x: Duration| x.as_secs_f64() / b.as_secs_f64();
    let commits = 1.0 / m.as_secs_f64();
    let vs_commit = |x: Duration| 100.0 / x.as_secs_f64() / commits;
    let sqlite = Measurement::new("sqlite", "default", label);
    report.push(sqlite.clone().named("adapter turn").sequential(
        a,
        &format!(
            "`Execution::InPlace`; {:.2}× the bare loop; {:.0}% of the one-row commit rate",
            vs_bare(a),
            vs_commit(a)
        ),
    ));
    report.push(
        Measurement::new("sqlite", "blocking-pool", label)
            .named("adapter turn")
            .sequential(
                i,
                &format!(
                    "`Execution::BlockingPool`; {:.2}× the bare loop; {:.0}% of the one-row commit rate",
                    vs_bare(i),
                    vs_commit(i)
                ),
            ),
    );
    let bare_row = Measurement::new("bare-sqlite", "-", label);
    report.push(bare_row.clone().named("bare rusqlite turn").sequential(
        b,
        &format!(
            "the adapter's statements inline on one thread, two synced commits at FULL; {:.0}% of the one-row commit rate",
            vs_commit(b)
        ),
    ));
    report.push(
        bare_row
            .clone()
            .named("bare turn, 3 spawn_blocking hops")
            .sequential(
                p,
                &format!(
                    "{:.2}× the bare loop: the cost of leaving the runtime",
                    vs_bare(p)
                ),
            ),
    );
    report.push(
        bare_row
            .clone()
            .named("bare turn, 3 dedicated-thread hops")
            .sequential(d, &format!("{:.2}× the bare loop", vs_bare(d))),
    );
    report.push(
        bare_row
            .clone()
            .named("empty BEGIN IMMEDIATE/COMMIT")
            .sequential(
                e,
                "writes nothing to the disk (SQLite skips an empty commit)",
            ),
    );
    report.push(
        bare_row
            .named("one-row commit")
            .sequential(m, "the disk's commit rate in this mode"),
    );
    let rr = workloads::sequential(adapter.as_ref(), 16).await;
    report.push(sqlite.clone().named("16 Threads, round robin").sequential(
        rr,
        &format!("{:.0}% of the one-row commit rate", vs_commit(rr)),
    ));
    let shared: Arc<dyn ThreadStore> = adapter.clone();
    for threads in [16, 64] {
        let before = adapter.group_commit_stats();
        let c = workloads::concurrent(&shared, threads).await;
        let after = adapter.group_commit_stats();
        let per_commit =
            (after.writes - before.writes) as f64 / (after.commits - before.commits).max(1) as f64;
        report.push(
            sqlite
                .clone()
                .named(&format!("{threads} Threads at once"))
                .concurrent(
                    threads,
                    c,
                    &format!(
                        "{:.2}× the one-row commit rate; {per_commit:.1} writes per commit",
                        c.turns_per_s / commits
                    ),
                ),
        );
    }
}
