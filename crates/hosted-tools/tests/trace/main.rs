//! Tool arguments and results never reach the host's `tracing` subscriber through rmcp, whose
//! service logs whole requests at DEBUG. A test binary of its own: it installs a global TRACE
//! subscriber.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::io::Write;
use std::sync::{Arc, Mutex};

use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use run_service::{ExposeSecret, RunId, RunServiceProvider};
use serde_json::json;

const CANARY: &str = "tool-argument-canary-6d2f";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn tool_arguments_and_results_never_reach_the_host_subscriber() {
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let echo = HostedTool::new(
            "echo",
            "Echoes.",
            json!({"type": "object"}),
            |call| async move {
                Ok(ToolOutput::text(format!(
                    "echo {}",
                    call.arguments["text"].as_str().unwrap_or_default()
                )))
            },
        )
        .with_revision("1");
        let provider = HostedToolsProvider::new(ToolSet::new([echo]).unwrap());
        let run = RunId::new("trace-run");
        let attachment = provider.attach_run(&run).await.unwrap();
        let service = &attachment.services[0];
        let url = service.url.clone().unwrap();
        let token = service.secret_env[0].value().expose_secret().to_owned();
        // The client stands for the agent CLI, a separate process: its own rmcp logging is
        // kept out of this process's subscriber (a thread and runtime of its own, with no
        // subscriber), so what the scan finds is the server's.
        let result = tokio::task::spawn_blocking(move || {
            let _silent =
                tracing::subscriber::set_default(tracing::subscriber::NoSubscriber::default());
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let transport = StreamableHttpClientTransport::from_config(
                        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
                    );
                    let client = ().serve(transport).await.unwrap();
                    let mut arguments = serde_json::Map::new();
                    arguments.insert("text".into(), CANARY.into());
                    let result = client
                        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
                        .await
                        .unwrap();
                    let _ = client.cancel().await;
                    format!("{result:?}")
                })
        })
        .await
        .unwrap();
        assert!(result.contains(CANARY), "the call really carried it");
        tracing::info!("host log line after the call");
        provider.close().await.unwrap();
    });
    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    assert!(
        text.contains("host log line after the call"),
        "the host's own logging still works"
    );
    assert!(
        text.contains("tool server"),
        "hosted-tools' own logging still reaches the host"
    );
    assert!(
        !text.contains(CANARY),
        "tool data reached the host's subscriber:\n{}",
        text.lines()
            .filter(|l| l.contains(CANARY))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    );
}
