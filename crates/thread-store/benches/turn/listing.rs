//! `list` at scale: 10,000 Threads under one prefix and 10,000 under the next, read in pages
//! of 100. A page must cost the same wherever it sits, the last one included (whose index scan
//! used to read on through the other prefix to the end of the table), and walking every page
//! must not grow memory.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use thread_store::postgres::{PostgresConfig, PostgresStore};
use thread_store::sqlite::{SqliteConfig, SqliteStore};
use thread_store::{FinalizeRequest, ListQuery, PageCursor, ThreadStore};

use crate::record;
use crate::report::{Measurement, Report};
use crate::workloads::{SAMPLES, median};

const PER_PREFIX: usize = 10_000;
const PAGE: u32 = 100;
const PREFIX: &str = "scale/a/";

/// Saves 10,000 records under `scale/a/` and 10,000 under `scale/b/`, 64 writers at once.
async fn fill(store: &Arc<dyn ThreadStore>) {
    let writers: Vec<_> = (0..64)
        .map(|w| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                for n in (w..2 * PER_PREFIX).step_by(64) {
                    let prefix = if n < PER_PREFIX { "a" } else { "b" };
                    let key = format!("scale/{prefix}/thread-{:05}", n % PER_PREFIX);
                    store
                        .finalize(&FinalizeRequest::new(record(&key)).rebind_key())
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
}

/// The resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn page(store: &dyn ThreadStore, after: &Option<PageCursor>) -> Option<PageCursor> {
    let mut query = ListQuery::prefix(PREFIX).limit(PAGE);
    if let Some(cursor) = after {
        query = query.after(cursor.clone());
    }
    let page = store.list(&query).await.unwrap();
    assert_eq!(page.records.len(), PAGE as usize);
    page.next
}

/// Measures a store [`fill`]ed already.
async fn measure(
    report: &mut Report,
    store: &Arc<dyn ThreadStore>,
    adapter: &'static str,
    sync: &'static str,
) {
    // Walk every page once, keeping each page's cursor.
    let rss_before = rss_kib();
    let mut cursors = vec![None];
    loop {
        let next = page(store.as_ref(), cursors.last().unwrap()).await;
        match next {
            Some(cursor) => cursors.push(Some(cursor)),
            None => break,
        }
    }
    let rss_growth = rss_kib().saturating_sub(rss_before);
    assert_eq!(cursors.len(), PER_PREFIX / PAGE as usize);
    let mut first = Duration::ZERO;
    let last_index = cursors.len() - 1;
    for (name, index) in [
        ("first", 0),
        ("middle", last_index / 2),
        ("last", last_index),
    ] {
        let mut samples = Vec::new();
        for _ in 0..SAMPLES {
            let start = Instant::now();
            for _ in 0..20 {
                page(store.as_ref(), &cursors[index]).await;
            }
            samples.push(start.elapsed() / 20);
        }
        let per_page = median(samples);
        if index == 0 {
            first = per_page;
        }
        let mut note = format!(
            "{:.2}× the first page",
            per_page.as_secs_f64() / first.as_secs_f64()
        );
        if index == last_index {
            note.push_str(&format!(
                "; walking all {} pages grew RSS by {rss_growth} KiB",
                cursors.len()
            ));
        }
        report.push(
            Measurement::new(adapter, "default", sync)
                .named(&format!(
                    "list: {name} page of 100, 10,000 under the prefix, 10,000 after it"
                ))
                .sequential(per_page, "")
                .note(note),
        );
    }
}

pub(crate) async fn bench_sqlite(report: &mut Report, dir: &Path) {
    let store: Arc<dyn ThreadStore> = Arc::new(
        SqliteStore::open(SqliteConfig::new(dir.join("listing.db")))
            .await
            .unwrap(),
    );
    fill(&store).await;
    measure(report, &store, "sqlite", "NORMAL").await;
}

pub(crate) async fn bench_postgres(report: &mut Report, url: &str) {
    let schema = format!(
        "ts_bench_list_{}",
        thread_store::RecordId::generate()
            .as_str()
            .replace('-', "_")
    );
    let store: Arc<dyn ThreadStore> = Arc::new(
        PostgresStore::connect(PostgresConfig::from_url(url, &schema).unwrap())
            .await
            .unwrap(),
    );
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Statistics, as autovacuum keeps them on a live table: without any, the planner guesses
    // a handful of rows and reads the whole range into a sort instead of seeking.
    fill(&store).await;
    client
        .batch_execute(&format!("ANALYZE \"{schema}\".threads"))
        .await
        .unwrap();
    measure(report, &store, "postgres", "pg").await;
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}
