//! The two ways of taking turns: one at a time (over one or several Threads, in round robin),
//! and many Threads at once, each its own task.

use std::sync::Arc;
use std::time::{Duration, Instant};

use thread_store::ThreadStore;

use crate::adapter_turn;

pub(crate) const SAMPLES: usize = 11;
pub(crate) const SAMPLE: Duration = Duration::from_millis(250);
/// Concurrent samples are longer: every task must take many turns in each.
const CONCURRENT_SAMPLES: usize = 5;
const CONCURRENT_SAMPLE: Duration = Duration::from_millis(1000);

/// Times `turn` for about [`SAMPLE`]; returns the mean time per turn.
pub(crate) async fn sample<F, Fut>(mut turn: F) -> Duration
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

pub(crate) fn median<T: PartialOrd + Copy>(mut xs: Vec<T>) -> T {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// Turns one at a time over Threads `0..threads` in round robin (one Thread: the same one
/// every turn): the median of the samples' mean time per turn.
pub(crate) async fn sequential(store: &dyn ThreadStore, threads: usize) -> Duration {
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        samples.push(sample(|n| adapter_turn(store, n as usize % threads, n)).await);
    }
    median(samples)
}

/// What [`concurrent`] measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Concurrent {
    /// Turns completed per second by all Threads together (the median over samples).
    pub(crate) turns_per_s: f64,
    /// The median time of one turn.
    pub(crate) median_latency: Duration,
}

/// Threads `0..threads` each take turns in their own task, all at once.
pub(crate) async fn concurrent(store: &Arc<dyn ThreadStore>, threads: usize) -> Concurrent {
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    for round in 0..CONCURRENT_SAMPLES {
        let start = Instant::now();
        let tasks: Vec<_> = (0..threads)
            .map(|thread| {
                let store = Arc::clone(store);
                tokio::spawn(async move {
                    let mut times = Vec::new();
                    let mut n = (round * 1_000_000) as u64;
                    while start.elapsed() < CONCURRENT_SAMPLE {
                        let turn = Instant::now();
                        adapter_turn(store.as_ref(), thread, n).await;
                        times.push(turn.elapsed());
                        n += 1;
                    }
                    times
                })
            })
            .collect();
        let mut turns = 0usize;
        for task in tasks {
            let times = task.await.unwrap();
            turns += times.len();
            latencies.extend(times);
        }
        rates.push(turns as f64 / start.elapsed().as_secs_f64());
    }
    Concurrent {
        turns_per_s: median(rates),
        median_latency: median(latencies),
    }
}
