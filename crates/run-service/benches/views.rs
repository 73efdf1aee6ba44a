//! Benchmark: validate and build both views for 10 attachments × 3 services and 10 MCP servers.
//!
//! Run with `cargo bench -p run-service --bench views`. Prints the median of many batches;
//! the target (recorded in docs/benchmarks.md) is under 20 µs for both views together.

use std::hint::black_box;
use std::time::Instant;

use run_service::{
    EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef, build_views,
    validate_run,
};

fn run_fixture() -> Vec<RunAttachment> {
    (0..10u16)
        .map(|a| {
            let services = (0..3u16).map(move |s| {
                let port = 4000 + a * 10 + s;
                let url = format!("http://127.0.0.1:{port}/svc");
                let mut service =
                    ServiceRef::new(format!("svc-{a}-{s}"), format!("Service {a}.{s}"))
                        .with_url(&url)
                        .with_port(port)
                        .with_reuse_key(format!("run/{a}/{s}"))
                        .with_metadata("tier", "gold")
                        .with_secret_env(EnvBinding::new(format!("TOKEN_{a}_{s}"), "secret-value"));
                if s == 0 {
                    service = service.with_mcp(
                        McpServer::streamable_http(format!("mcp-{a}"), &url)
                            .with_bearer_token_env(format!("TOKEN_{a}_{s}")),
                    );
                }
                service
            });
            let attachment = RunAttachment::new(services);
            if a % 2 == 0 {
                attachment.with_resume_compatibility(RunServiceCompatibility::new(
                    format!("com.example.p{a}"),
                    "b3:sem",
                ))
            } else {
                attachment
            }
        })
        .collect()
}

/// Median, min and max nanoseconds per call of `f` over `batches` batches.
fn measure(mut f: impl FnMut()) -> (f64, f64, f64) {
    let iterations: u32 = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let batches = 51;
    for _ in 0..iterations {
        f(); // warm up caches and the allocator
    }
    let mut per_call: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    (per_call[batches / 2], per_call[0], per_call[batches - 1])
}

fn report(what: &str, (median, min, max): (f64, f64, f64)) {
    println!(
        "{what:<48} median {:>7.2} µs   min {:>7.2} µs   max {:>7.2} µs",
        median / 1000.0,
        min / 1000.0,
        max / 1000.0
    );
}

fn main() {
    let attachments = run_fixture();
    println!(
        "fixture: 10 attachments x 3 services (5 opted in), 10 MCP servers; 51 batches of 1000 calls"
    );
    report(
        "validate_run only",
        measure(|| {
            black_box(validate_run(black_box(&attachments), &[])).expect("fixture is valid")
        }),
    );
    report(
        "build_views (validate + both views + digests)",
        measure(|| {
            black_box(build_views(black_box(&attachments), &[]).expect("fixture is valid"));
        }),
    );
}
