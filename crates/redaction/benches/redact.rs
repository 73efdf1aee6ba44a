//! Redaction throughput on a 1 MiB JSONL event log: clean text (the common case, no
//! allocation), text with a token every 50 lines, and a redactor that also knows 8 secret
//! values. Prints the median of 31 runs.
//!
//! Run with `cargo bench -p redaction --bench redact`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use redaction::{Redactor, redact};
use secrecy::SecretString;

const RUNS: usize = 31;

fn log(with_tokens: bool) -> String {
    let mut s = String::new();
    let mut i = 0usize;
    while s.len() < 1 << 20 {
        if with_tokens && i.is_multiple_of(50) {
            s.push_str(&format!(
                "{{\"type\":\"tool.call\",\"headers\":{{\"Authorization\":\"Bearer tok{i:08}abcdef\"}},\"body\":\"access_token=at{i}&x=1\",\"key\":\"sk-proj-{i:020}\"}}\n"
            ));
        } else {
            s.push_str(&format!(
                "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"item_{i}\",\"type\":\"command_execution\",\"command\":\"bash -lc 'ls -la src/'\",\"aggregated_output\":\"total 8\\ndrwxr-xr-x 2 user staff 64 main.rs lib.rs\",\"exit_code\":0,\"status\":\"completed\"}}}}\n"
            ));
        }
        i += 1;
    }
    s
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn report(name: &str, bytes: usize, d: Duration) {
    let mib_s = bytes as f64 / (1 << 20) as f64 / d.as_secs_f64();
    println!(
        "{name:<34} median {:>8.3} ms  {mib_s:>8.1} MiB/s",
        d.as_secs_f64() * 1e3
    );
}

fn main() {
    let clean = log(false);
    let dirty = log(true);
    let redactor = Redactor::with_secrets(
        (0..8).map(|i| SecretString::from(format!("opaque-secret-value-{i}"))),
    );
    report(
        "redact, clean 1 MiB",
        clean.len(),
        median(|| {
            black_box(redact(black_box(&clean)));
        }),
    );
    report(
        "redact, token every 50 lines",
        dirty.len(),
        median(|| {
            black_box(redact(black_box(&dirty)));
        }),
    );
    report(
        "Redactor + 8 secrets, clean",
        clean.len(),
        median(|| {
            black_box(redactor.redact(black_box(&clean)));
        }),
    );
    report(
        "Redactor + 8 secrets, tokens",
        dirty.len(),
        median(|| {
            black_box(redactor.redact(black_box(&dirty)));
        }),
    );
}
