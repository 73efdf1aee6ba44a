//! PostgreSQL: the adapter with one connection and with its default pool, a sticky turn on
//! the default pool (the lease kept between turns, renewed by each finalize), beside a bare
//! loop issuing its statements on one tokio-postgres client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::{ThreadStore, Timestamp};

use crate::report::{Measurement, Report};
use crate::workloads::{self, SAMPLES, median, sample};
use crate::{adapter_turn, seed, sticky_lease, sticky_turn};

const KEY: &str = "bench/thread-0000";
const TARGET: &str = "thread:bench/thread-0000";
const OWNER: &str = "bench-host";

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

pub(crate) async fn bench(report: &mut Report, url: &str) {
    let schema = format!(
        "ts_bench_{}",
        thread_store::RecordId::generate()
            .as_str()
            .replace('-', "_")
    );
    let config = PostgresConfig::from_url(url, &schema).unwrap();
    let single = PostgresStore::connect(config.clone().pool_size(1))
        .await
        .unwrap();
    seed(&single, 64).await;
    let pooled = Arc::new(PostgresStore::connect(config).await.unwrap());
    let mut bare = bare_pg(url, &schema).await;
    // Thread 1 stays leased to the bench host: its turns renew the lease as they finalize.
    let kept = sticky_lease(pooled.as_ref(), 1).await;
    let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(sample(|n| adapter_turn(&single, 0, n)).await);
        c.push(sample(|n| adapter_turn(pooled.as_ref(), 0, n)).await);
        d.push(sample(|n| sticky_turn(pooled.as_ref(), &kept, 1, n)).await);
        // Inline rather than `sample`: the turn borrows `bare` mutably across awaits.
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < workloads::SAMPLE || n < 5 {
            bare_pg_turn(&mut bare, n).await;
            n += 1;
        }
        b.push(start.elapsed() / u32::try_from(n).unwrap());
    }
    let (a, b, c, d) = (median(a), median(b), median(c), median(d));
    let vs_bare = |x: Duration| x.as_secs_f64() / b.as_secs_f64();
    report.push(
        Measurement::new("postgres", "single-connection", "pg")
            .named("adapter turn")
            .sequential(
                a,
                &format!("`pool_size(1)`; {:.2}× the bare loop", vs_bare(a)),
            ),
    );
    let pg = Measurement::new("postgres", "default", "pg");
    report.push(pg.clone().named("adapter turn").sequential(
        c,
        &format!("the default pool; {:.2}× the bare loop", vs_bare(c)),
    ));
    report.push(
        Measurement::new("postgres", "sticky", "pg")
            .named("sticky turn")
            .sequential(
                d,
                &format!(
                    "resolve + finalize-and-renew, no acquire; {:.2}× the default turn's rate",
                    c.as_secs_f64() / d.as_secs_f64()
                ),
            ),
    );
    report.push(
        Measurement::new("bare-postgres", "-", "pg")
            .named("bare tokio-postgres turn")
            .sequential(b, "the adapter's statements, one connection"),
    );
    let rr = workloads::sequential(pooled.as_ref(), 16).await;
    report.push(
        pg.clone()
            .named("16 Threads, round robin")
            .sequential(rr, "the default pool"),
    );
    let shared: Arc<dyn ThreadStore> = pooled.clone();
    for threads in [16, 64] {
        let m = workloads::concurrent(&shared, threads).await;
        report.push(
            pg.clone()
                .named(&format!("{threads} Threads at once"))
                .concurrent(
                    threads,
                    m,
                    &format!(
                        "the default pool; {:.2}× one connection, sequential",
                        m.turns_per_s * a.as_secs_f64()
                    ),
                ),
        );
    }
    bare.client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}
