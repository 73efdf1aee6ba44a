//! Runs the run-service conformance kit against the hosted-tools provider, Thread runs
//! (`RS-06`) included: one `#[test]` per implementation, listed in `cargo xtask conformance`.
#![allow(clippy::unwrap_used, reason = "tests")]

use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
use run_service::RunServiceProvider;
use run_service::conformance::{KitOptions, check_provider};

#[tokio::test]
async fn hosted_tools_provider() {
    let echo = HostedTool::new(
        "echo",
        "Echoes its arguments.",
        serde_json::json!({"type": "object"}),
        |call| async move { Ok(ToolOutput::json(serde_json::Value::Object(call.arguments))) },
    )
    .with_revision("1");
    let provider = HostedToolsProvider::new(ToolSet::new([echo]).unwrap());
    let report = check_provider(&provider, &KitOptions::default())
        .await
        .unwrap();
    assert_eq!(report.clauses_passed, 6);
    assert!(report.opted_in, "the provider declares a semantic identity");
    provider.close().await.unwrap();
}
