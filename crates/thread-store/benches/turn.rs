//! Throughput of one Thread turn (acquire lease, resolve, finalize-and-release) per adapter,
//! each beside a bare loop issuing the same statements directly through rusqlite or
//! tokio-postgres, and, for SQLite, the disk's commit bound in the same durability mode.
//!
//! Run: `THREAD_STORE_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test \
//!       cargo bench -p thread-store --bench turn`
//!
//! Adapter and bare samples alternate, so a noisy neighbour slows both alike. Each sample
//! runs turns for about `SAMPLE` and yields the mean time per turn; the report shows medians.
#![allow(clippy::unwrap_used, reason = "bench")]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use thread_store::memory::MemoryStore;
use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::sqlite::{Execution, SqliteConfig, SqliteStore, Synchronous};
use thread_store::{
    Compatibility, FinalizeRequest, Query, SessionState, ThreadRecord, ThreadStore, Timestamp,
};

const SAMPLES: usize = 11;
const SAMPLE: Duration = Duration::from_millis(250);
const TTL: Duration = Duration::from_secs(60);
const KEY: &str = "bench/thread";
const TARGET: &str = "thread:bench/thread";
const OWNER: &str = "bench-host";

fn record() -> ThreadRecord {
    let mut components = Breakdown::new();
    for name in ["model", "instructions", "tools", "workspace"] {
        components.insert_or_replace(
            ComponentName::new(name).unwrap(),
            Fingerprint::from_bytes([7; 32]),
        );
    }
    let mut state = SessionState {
        resume_id: "0190c2b4-resume".to_owned(),
        display_id: Some("display".to_owned()),
        ..SessionState::default()
    };
    state.data.insert("guard".to_owned(), "g".repeat(64));
    state
        .data
        .insert("model".to_owned(), "model-name".to_owned());
    ThreadRecord::new(
        KEY,
        "codex",
        "agent:bench",
        Compatibility {
            fingerprint: Fingerprint::from_bytes([9; 32]),
            scheme_version: 1,
            components,
        },
        "codex-v1",
        state,
        Timestamp::now(),
    )
}

/// One turn through the trait: two durable commits (acquire, finalize-and-release).
async fn adapter_turn(store: &dyn ThreadStore, n: u64) {
    let lease = store.acquire_lease(TARGET, OWNER, TTL).await.unwrap();
    let mut record = store.resolve(&Query::key(KEY)).await.unwrap().unwrap();
    record.state.data.insert("turn".to_owned(), n.to_string());
    record.updated_at = Timestamp::now();
    store
        .finalize(&FinalizeRequest::new(record).holding(lease).release_leases())
        .await
        .unwrap();
}

/// Times `turn` for about `SAMPLE`; returns the mean time per turn.
async fn sample<F, Fut>(mut turn: F) -> Duration
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < SAMPLE || n < 5 {
        turn(n).await;
        n += 1;
    }
    start.elapsed() / u32::try_from(n).unwrap()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

fn per_sec(d: Duration) -> f64 {
    1.0 / d.as_secs_f64()
}

fn row(name: &str, d: Duration, note: &str) {
    println!(
        "| {name} | {:.1} µs | {:.0} /s | {note} |",
        d.as_secs_f64() * 1e6,
        per_sec(d)
    );
}

// ---------------------------------------------------------------------------------------------
// SQLite: the bare loop issues the adapter's statements on one rusqlite connection.

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

async fn seeded_sqlite(path: &Path, sync: Synchronous) -> SqliteStore {
    seeded_sqlite_with(path, sync, Execution::BlockingPool).await
}

async fn seeded_sqlite_with(path: &Path, sync: Synchronous, execution: Execution) -> SqliteStore {
    let store = SqliteStore::open(
        SqliteConfig::new(path)
            .synchronous(sync)
            .execution(execution),
    )
    .await
    .unwrap();
    store
        .finalize(&FinalizeRequest::new(record()).rebind_key())
        .await
        .unwrap();
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

async fn bench_sqlite(dir: &Path, sync: Synchronous, label: &str) {
    let adapter = seeded_sqlite(&dir.join(format!("adapter-{label}.db")), sync).await;
    let in_place = seeded_sqlite_with(
        &dir.join(format!("in-place-{label}.db")),
        sync,
        Execution::InPlace,
    )
    .await;
    let mut bare = Vec::new();
    for name in ["bare", "pooled", "dedicated"] {
        let path = dir.join(format!("{name}-{label}.db"));
        drop(seeded_sqlite(&path, sync).await);
        bare.push(raw_sqlite(&path, sync));
    }
    let dedicated = Dedicated::new(bare.pop().unwrap());
    let pooled = Arc::new(Mutex::new(bare.pop().unwrap()));
    let mut bare = bare.pop().unwrap();
    let bound_path = dir.join(format!("bound-{label}.db"));
    drop(seeded_sqlite(&bound_path, sync).await);
    let mut bound = raw_sqlite(&bound_path, sync);
    bound
        .execute_batch(
            "CREATE TABLE bench_tick (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
             INSERT INTO bench_tick VALUES (1, 0);",
        )
        .unwrap();

    let mut s: [Vec<Duration>; 7] = Default::default();
    for _ in 0..SAMPLES {
        s[0].push(sample(|n| adapter_turn(&adapter, n)).await);
        s[6].push(sample(|n| adapter_turn(&in_place, n)).await);
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
                    // Three hops to the blocking pool, as the adapter makes; one does the work.
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
    row(
        &format!("SQLite {label}: adapter turn, `Execution::BlockingPool` (default)"),
        a,
        &format!("**{:.2}× the bare loop** (target ≤ 1.30×)", vs_bare(a)),
    );
    row(
        &format!("SQLite {label}: adapter turn, `Execution::InPlace`"),
        i,
        &format!("**{:.2}× the bare loop** (target ≤ 1.30×)", vs_bare(i)),
    );
    row(
        &format!("SQLite {label}: bare rusqlite turn"),
        b,
        "same statements, inline on one thread",
    );
    row(
        &format!("SQLite {label}: bare turn, 3 spawn_blocking hops"),
        p,
        &format!(
            "{:.2}× the bare loop: the cost of leaving the runtime",
            vs_bare(p)
        ),
    );
    row(
        &format!("SQLite {label}: bare turn, 3 dedicated-thread hops"),
        d,
        &format!("{:.2}× the bare loop", vs_bare(d)),
    );
    row(
        &format!("SQLite {label}: empty BEGIN IMMEDIATE/COMMIT"),
        e,
        "writes nothing to the disk (SQLite skips an empty commit)",
    );
    let bound_turns = per_sec(m) / 2.0;
    row(
        &format!("SQLite {label}: one-row commit"),
        m,
        &format!(
            "disk commit bound ÷ 2 commits = {bound_turns:.0} turns/s; **adapter reaches {:.0}% \
             (in place {:.0}%)** (bare loop {:.0}%; target ≥ 90% at FULL)",
            100.0 * per_sec(a) / bound_turns,
            100.0 * per_sec(i) / bound_turns,
            100.0 * per_sec(b) / bound_turns
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: the bare loop issues the adapter's statements on one tokio-postgres client.

struct BarePg {
    client: tokio_postgres::Client,
    acquire: tokio_postgres::Statement,
    by_key: tokio_postgres::Statement,
    lock: tokio_postgres::Statement,
    upsert: tokio_postgres::Statement,
    release: tokio_postgres::Statement,
}

async fn bare_pg(url: &str, s: &str) -> BarePg {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let s = format!("\"{s}\"");
    let acquire = client
        .prepare(&format!(
            "INSERT INTO {s}.leases AS l (target, owner, token, expires_at) \
             VALUES ($1, $2, nextval('{s}.lease_tokens'), now() + $3::float8 * interval '1 millisecond') \
             ON CONFLICT (target) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token, \
             expires_at = EXCLUDED.expires_at \
             WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner RETURNING token"
        ))
        .await
        .unwrap();
    let by_key = client
        .prepare(&format!(
            "SELECT t.id, t.key, t.status, t.format, t.driver_type, t.agent, t.fingerprint, \
             t.scheme_version, t.components, t.codec, t.state, t.created_at, t.updated_at \
             FROM {s}.bindings b JOIN {s}.threads t ON t.id = b.record_id WHERE b.key = $1"
        ))
        .await
        .unwrap();
    let lock = client
        .prepare(&format!(
            "SELECT target, owner, token, expires_at > now() FROM {s}.leases \
             WHERE target = ANY($1::text[]) ORDER BY target FOR UPDATE"
        ))
        .await
        .unwrap();
    let upsert = client
        .prepare(&format!(
            "INSERT INTO {s}.threads AS t (id, key, status, format, driver_type, agent, \
             fingerprint, scheme_version, components, codec, state, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
             ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, format = EXCLUDED.format, \
             driver_type = EXCLUDED.driver_type, agent = EXCLUDED.agent, \
             fingerprint = EXCLUDED.fingerprint, scheme_version = EXCLUDED.scheme_version, \
             components = EXCLUDED.components, codec = EXCLUDED.codec, state = EXCLUDED.state, \
             created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at \
             WHERE t.key = EXCLUDED.key RETURNING 1"
        ))
        .await
        .unwrap();
    let release = client
        .prepare(&format!(
            "DELETE FROM {s}.leases l \
             USING unnest($1::text[], $2::text[], $3::bigint[]) AS h(target, owner, token) \
             WHERE l.target = h.target AND l.owner = h.owner AND l.token = h.token"
        ))
        .await
        .unwrap();
    BarePg {
        client,
        acquire,
        by_key,
        lock,
        upsert,
        release,
    }
}

async fn bare_pg_turn(pg: &mut BarePg, n: u64) {
    let ttl = 60_000f64;
    let token: i64 = pg
        .client
        .query_one(&pg.acquire, &[&TARGET, &OWNER, &ttl])
        .await
        .unwrap()
        .get(0);
    let r = pg.client.query_one(&pg.by_key, &[&KEY]).await.unwrap();
    let id: String = r.get(0);
    let key: String = r.get(1);
    let status: String = r.get(2);
    let format: i64 = r.get(3);
    let driver: String = r.get(4);
    let agent: String = r.get(5);
    let fp: String = r.get(6);
    let scheme: i64 = r.get(7);
    let components: String = r.get(8);
    let codec: String = r.get(9);
    let state: String = r.get(10);
    let created: i64 = r.get(11);
    let updated: i64 = Timestamp::now().as_millis() + i64::try_from(n).unwrap();
    let tx = pg.client.transaction().await.unwrap();
    let locked = tx.query(&pg.lock, &[&vec![TARGET]]).await.unwrap();
    assert_eq!(locked.len(), 1);
    let saved = tx
        .query_opt(
            &pg.upsert,
            &[
                &id,
                &key,
                &status,
                &format,
                &driver,
                &agent,
                &fp,
                &scheme,
                &components,
                &codec,
                &state,
                &created,
                &updated,
            ],
        )
        .await
        .unwrap();
    assert!(saved.is_some());
    tx.execute(&pg.release, &[&vec![TARGET], &vec![OWNER], &vec![token]])
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

async fn bench_postgres(url: &str) {
    let schema = format!(
        "ts_bench_{}",
        thread_store::RecordId::generate()
            .as_str()
            .replace('-', "_")
    );
    let adapter =
        PostgresStore::connect(PostgresConfig::from_url(url, &schema).unwrap().pool_size(1))
            .await
            .unwrap();
    adapter
        .finalize(&FinalizeRequest::new(record()).rebind_key())
        .await
        .unwrap();
    let mut bare = bare_pg(url, &schema).await;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(sample(|n| adapter_turn(&adapter, n)).await);
        // Inline rather than `sample`: the turn borrows `bare` mutably across awaits.
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < SAMPLE || n < 5 {
            bare_pg_turn(&mut bare, n).await;
            n += 1;
        }
        b.push(start.elapsed() / u32::try_from(n).unwrap());
    }
    let (a, b) = (median(a), median(b));
    row(
        "PostgreSQL: adapter turn",
        a,
        &format!(
            "{:.2}× the bare loop (target ≤ 1.30×)",
            a.as_secs_f64() / b.as_secs_f64()
        ),
    );
    row(
        "PostgreSQL: bare tokio-postgres turn",
        b,
        "same statements, one connection",
    );
    bare.client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench` passes `--bench`. Run any other way (`cargo test --benches`), this only
    // checks that a turn works on the memory and SQLite adapters.
    if !std::env::args().any(|a| a == "--bench") {
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let sqlite = seeded_sqlite(&dir.path().join("smoke.db"), Synchronous::Normal).await;
            let memory = MemoryStore::new();
            memory
                .finalize(&FinalizeRequest::new(record()).rebind_key())
                .await
                .unwrap();
            for n in 0..3 {
                adapter_turn(&memory, n).await;
                adapter_turn(&sqlite, n).await;
            }
        });
        println!("turn bench: smoke run passed; use `cargo bench` to measure");
        return;
    }
    rt.block_on(async {
        println!("| measurement | median per turn | turns per second | note |");
        println!("|---|---|---|---|");
        let memory = MemoryStore::new();
        memory
            .finalize(&FinalizeRequest::new(record()).rebind_key())
            .await
            .unwrap();
        let mut m = Vec::new();
        for _ in 0..SAMPLES {
            m.push(sample(|n| adapter_turn(&memory, n)).await);
        }
        row("memory: adapter turn", median(m), "no I/O");

        // On the disk that holds the target directory, not a tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        bench_sqlite(dir.path(), Synchronous::Normal, "NORMAL").await;
        bench_sqlite(dir.path(), Synchronous::Full, "FULL").await;

        match std::env::var("THREAD_STORE_POSTGRES_URL") {
            Ok(url) => bench_postgres(&url).await,
            Err(_) => println!("SKIPPED PostgreSQL: THREAD_STORE_POSTGRES_URL is not set"),
        }
    });
}
