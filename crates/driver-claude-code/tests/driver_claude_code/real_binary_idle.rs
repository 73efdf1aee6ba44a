//! The hosted-tools endpoint keeps serving Claude Code across an idle gap longer than any MCP
//! session limit, within one run: Claude Code never re-initializes an MCP session, so a reaped
//! session would cost it its tools for the rest of the run.
//!
//! Needs `CLAUDE_BIN` (visible `SKIPPED` locally, a failure under CI).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use compat_fingerprint::{Fingerprint, Kind};
use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
use driver_spi::{CollectingSink, Driver, DriverEvent, ProfilePayload, Request, RuntimePayload};
use hosted_tools::{HostedTool, HostedToolsProvider, SessionMode, ToolOutput, ToolSet};
use run_service::{RunId, RunServiceProvider, SecretString};
use runtime_env::{HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::anthropic::MockAnthropic;
use test_kit::{Reply, Script};

/// The model waits three times this long between the two calls.
const IDLE_LIMIT: Duration = Duration::from_millis(700);

/// One Claude Code run: the model calls `ping`, waits past the idle limit, calls `ping`
/// again, then answers. How many calls reached the tool, and the tool results' error flags.
async fn run_with_gap(bin: &std::path::Path, sessions: SessionMode) -> (usize, Vec<bool>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let ping = HostedTool::new(
        "ping",
        "Answers pong.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        move |_call| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text("pong"))
            }
        },
    )
    .with_revision("1");
    let tools = HostedToolsProvider::new(ToolSet::new([ping]).unwrap()).with_session_mode(sessions);
    let attachment = tools.attach_run(&RunId::new("idle-run")).await.unwrap();
    let model = MockAnthropic::start(
        Script::new()
            .then(Reply::tool_call(
                "agent-tools",
                "ping",
                json!({"text": "one"}),
            ))
            .then(
                Reply::tool_call("agent-tools", "ping", json!({"text": "two"}))
                    .delayed(IDLE_LIMIT * 3),
            )
            .then(Reply::text("Both calls done.")),
    )
    .unwrap();
    let env = RuntimeEnv::builder(
        dir.path().join("rt"),
        "user:idle".parse().unwrap(),
        dir.path().join("workspace"),
    )
    .host_env(HostEnv::from_vars([(
        "PATH",
        std::env::var("PATH").unwrap_or_default(),
    )]))
    .secret(
        "ANTHROPIC_API_KEY",
        SecretString::from("sk-ant-idle-test-key"),
    )
    .runtimes([&driver_claude_code::RUNTIME.descriptor])
    .build()
    .unwrap();
    let driver = ClaudeCodeDriver::new(
        Arc::new(env),
        ClaudeCodeOptions::new()
            .with_binary(bin)
            .with_model("claude-mock")
            .with_base_url(model.base_url())
            .with_max_retries(0),
    );
    const K: Kind = Kind::new("driver-claude-code idle test 2026-11-30 profile v1");
    let profile = ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("a")),
        Fingerprint::of(K, |e| e.str("s")),
    );
    let mcp: Vec<_> = attachment
        .services
        .iter()
        .filter_map(|s| s.mcp.clone())
        .collect();
    let request = Request::new(RunId::new("idle-run"), "Call ping twice.", profile)
        .with_runtime(RuntimePayload::from_services(attachment.services.clone()))
        .with_mcp(mcp)
        .with_workspace(dir.path().join("workspace").to_str().unwrap());
    let sink = Arc::new(CollectingSink::new());
    let response = driver.run(request, sink.clone()).await.unwrap();
    assert!(response.is_clean(), "{response:?}");
    assert_eq!(response.output, "Both calls done.");
    let errors = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            DriverEvent::ToolCallResult { is_error, .. } => Some(is_error),
            _ => None,
        })
        .collect();
    tools.close().await.unwrap();
    (served.load(Ordering::SeqCst), errors)
}

#[test]
fn claude_keeps_its_hosted_tools_across_an_idle_gap() {
    let Some(bin) = test_kit::real_cli::binary(
        "CLAUDE_BIN",
        "hosted tools across an idle gap, against the real claude",
    ) else {
        return;
    };
    // The default endpoint: both calls succeed within one run.
    let (served, errors) = test_kit::real_cli::block_on(run_with_gap(&bin, SessionMode::default()));
    assert_eq!(served, 2, "both calls reached the tool");
    assert_eq!(errors, [false, false]);
    // No control run against a stateful endpoint here: Claude Code 2.1.197 kept its tools
    // even when the session idle limit was shorter than the gap (it re-initializes, or its
    // open stream keeps the session alive). The trap is shown with a client that never
    // re-initializes in the hosted-tools tests (`idle.rs`).
}
