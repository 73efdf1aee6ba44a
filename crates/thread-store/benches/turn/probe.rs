//! `--probe`: where a sequential SQLite turn's time goes, call by call (acquire, resolve,
//! finalize), at NORMAL and at FULL. A diagnostic, not a recorded measurement.
use std::time::{Duration, Instant};
use thread_store::sqlite::{Execution, Synchronous};
use thread_store::{FinalizeRequest, Query, ThreadStore, Timestamp};

pub(crate) async fn probe(dir: &std::path::Path) {
    for sync in [Synchronous::Normal, Synchronous::Full] {
        let store = crate::sqlite::seeded(
            &dir.join(format!("probe-{sync:?}.db")),
            sync,
            Execution::default(),
        )
        .await;
        let (mut a, mut r, mut f) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let n = 3000u32;
        for i in 0..n {
            let t = Instant::now();
            let lease = store
                .acquire_lease("thread:bench/thread-0000", "o", crate::TTL)
                .await
                .unwrap();
            a += t.elapsed();
            let t = Instant::now();
            let mut record = store
                .resolve(&Query::key("bench/thread-0000"))
                .await
                .unwrap()
                .unwrap();
            r += t.elapsed();
            record.state.data.insert("turn".to_owned(), i.to_string());
            record.updated_at = Timestamp::now();
            let t = Instant::now();
            store
                .finalize(&FinalizeRequest::new(record).holding(lease).release_leases())
                .await
                .unwrap();
            f += t.elapsed();
        }
        println!(
            "{sync:?}: acquire {:?} resolve {:?} finalize {:?}",
            a / n,
            r / n,
            f / n
        );
    }
}
