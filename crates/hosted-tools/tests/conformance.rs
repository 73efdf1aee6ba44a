//! Runs the run-service conformance kit against the hosted-tools provider, Thread runs
//! (`RS-06`) included: one `#[test]` per implementation, listed in `cargo xtask conformance`.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
use run_service::conformance;
use run_service::{RunId, RunServiceProvider};

#[tokio::test]
async fn hosted_tools_provider() {
    let echo = HostedTool::new(
        "echo",
        "Echoes its arguments.",
        serde_json::json!({"type": "object"}),
        |call| async move { Ok(ToolOutput::json(serde_json::Value::Object(call.arguments))) },
    )
    .with_revision("1");
    let provider = Arc::new(HostedToolsProvider::new(ToolSet::new([echo]).unwrap()));
    // One provider serves every run of a host: it is its own factory.
    let shared: Arc<dyn RunServiceProvider> = provider.clone();
    let report = conformance::run(&shared).await;
    println!("{report}");
    report.assert_passed();
    let attachment = provider.attach_run(&RunId::new("opt-in")).await.unwrap();
    assert!(
        attachment.resume_compatibility.is_some(),
        "the provider declares a semantic identity"
    );
    provider.detach_run(&RunId::new("opt-in")).await.unwrap();
    provider.close().await.unwrap();
}
