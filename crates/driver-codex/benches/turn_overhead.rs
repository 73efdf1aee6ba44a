//! Benchmark: the Codex driver's own work per turn, spawn excluded. One iteration builds the
//! argv of a resumed turn with three MCP servers and a model provider (plan, guard check,
//! `-c` rendering) and translates a 10-event transcript with one MCP tool call (JSON parsing,
//! event mapping, redaction of nothing).
//!
//! With `CODEX_BIN` set it also measures the cold start of a real `codex exec` text turn
//! through the driver (spawn, Codex start-up, one model request to a loopback mock, exit),
//! in a fresh session each time and a namespace that already exists.
//!
//! Run with `CODEX_BIN=… cargo bench -p driver-codex --bench turn_overhead`. Results go to
//! docs/benchmarks.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use compat_fingerprint::{Fingerprint, Kind};
use driver_cli::{Dialect, Tracked, Translator};
use driver_codex::{CodexDriver, CodexOptions, CommonOptions, ModelProvider};
use driver_spi::{
    ProfilePayload, Request, RuntimePayload, SessionContext, SessionGuard, SessionState,
};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
use runtime_env::{HostEnv, RuntimeEnv};

const TRANSCRIPT: &[&str] = &[
    r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Calling the tool**"}}"#,
    r#"{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"agent-tools","tool":"ping","arguments":{"text":"one"},"result":null,"error":null,"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"agent-tools","tool":"ping","arguments":{"text":"one"},"result":{"content":[{"type":"text","text":"pong: one"}],"structured_content":null},"error":null,"status":"completed"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"The tool answered pong: one."}}"#,
    r#"{"type":"item.started","item":{"id":"item_3","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"ls","aggregated_output":"Cargo.toml\nsrc\n","exit_code":0,"status":"completed"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Done."}}"#,
    r#"{"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":1200,"output_tokens":60}}"#,
];

fn cold_start(bin: &std::path::Path) {
    use driver_spi::{CollectingSink, Driver};
    let model = test_kit::responses::MockResponses::start(
        test_kit::Script::new().with_default(test_kit::Reply::text("OK")),
    )
    .expect("mock");
    let base = tempfile::tempdir().expect("temp dir");
    let work = tempfile::tempdir().expect("temp dir");
    let env = RuntimeEnv::builder(
        base.path().join("rt"),
        "user:bench".parse().expect("ns"),
        work.path(),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret("MOCK_KEY", secrecy::SecretString::from("k"))
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .expect("runtime env");
    let driver = CodexDriver::new(
        Arc::new(env),
        CodexOptions::new()
            .with_binary(bin)
            .with_model("mock-model")
            .with_model_provider(
                ModelProvider::new("mock", model.base_url()).with_env_key("MOCK_KEY"),
            ),
    );
    const K: Kind = Kind::new("driver-codex bench 2026-11-30 profile v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut samples: Vec<f64> = (0..8)
        .map(|i| {
            let request = Request::new(RunId::new(format!("cold-{i}")), "Say OK.", profile);
            let start = Instant::now();
            let response = runtime
                .block_on(driver.run(request, Arc::new(CollectingSink::new())))
                .expect("a codex turn");
            assert!(response.is_clean());
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    // The first turn also unpacks Codex's files into the namespace.
    let first = samples.remove(0);
    samples.sort_by(f64::total_cmp);
    println!(
        "codex exec cold start (one text turn, fresh session, existing namespace), 7 turns: \
         median {:.0} ms, min {:.0} ms, max {:.0} ms; first turn in a new namespace {first:.0} ms",
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1]
    );
}

fn main() {
    let base = tempfile::tempdir().expect("temp dir");
    let work = tempfile::tempdir().expect("temp dir");
    let env = RuntimeEnv::builder(
        base.path().join("rt"),
        "user:bench".parse().expect("ns"),
        work.path(),
    )
    .host_env(HostEnv::from_vars([("PATH", "/usr/bin:/bin")]))
    .runtimes([&driver_codex::RUNTIME.descriptor])
    .build()
    .expect("runtime env");
    let driver = CodexDriver::new(
        Arc::new(env),
        CodexOptions::new()
            .with_model("gpt-bench")
            .with_model_provider(
                ModelProvider::new("gateway", "http://127.0.0.1:9/v1").with_env_key("GATEWAY_KEY"),
            ),
    );
    const K: Kind = Kind::new("driver-codex bench 2026-11-30 profile v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    );
    let services: Vec<ServiceRef> = (0..3)
        .map(|i| {
            let url = format!("http://127.0.0.1:{}/mcp/run-{i}", 41000 + i);
            let var = format!("SERVICE_{i}_TOKEN");
            let mcp = McpServer::streamable_http(format!("service-{i}"), &url)
                .with_bearer_token_env(&var);
            ServiceRef::new(format!("service-{i}"), "Service")
                .with_url(url)
                .with_mcp(mcp)
                .with_secret_env(EnvBinding::new(var, format!("secret-{i}-0123456789abcdef")))
        })
        .collect();
    let mcp: Vec<McpServer> = services.iter().filter_map(|s| s.mcp.clone()).collect();
    let mut state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
    SessionGuard::new(profile.session_compatibility, None).write_to(&mut state);
    let request = Request::new(RunId::new("bench-run"), "Call the tool.", profile)
        .with_runtime(RuntimePayload::from_services(services))
        .with_mcp(mcp)
        .with_session(SessionContext::continue_only(state));
    assert!(driver.command_line(&request).is_ok());

    let turn = || {
        let argv = driver.command_line(black_box(&request)).expect("argv");
        // The translator the driver would use for this request (the crate keeps its type
        // private; the dialect hands one out).
        let mut translator =
            Tracked::new(driver.dialect().translator(&request, request.redactor()));
        let mut events = 0usize;
        for line in TRANSCRIPT {
            let value: serde_json::Value = serde_json::from_str(black_box(line)).expect("json");
            events += translator.translate(&value).expect("event").len();
        }
        black_box((argv, events, translator.output().len()))
    };
    for _ in 0..2_000 {
        turn();
    }
    let mut samples: Vec<u128> = (0..20_000)
        .map(|_| {
            let start = Instant::now();
            turn();
            start.elapsed().as_nanos()
        })
        .collect();
    samples.sort_unstable();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize] as f64 / 1000.0;
    println!(
        "codex turn overhead (argv + 10-event transcript), 20000 samples: median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
        pct(0.5),
        pct(0.9),
        pct(0.99)
    );
    match std::env::var_os("CODEX_BIN") {
        Some(bin) => cold_start(std::path::Path::new(&bin)),
        None => println!("SKIPPED codex cold start: CODEX_BIN is not set"),
    }
}
