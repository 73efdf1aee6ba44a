//! What both real-CLI scenarios ([`restart`](crate::restart), [`resident`](crate::resident))
//! build their hosts from: the hosted `ping` tool that records its calls, and an agent over a
//! driver, a provider and the test directory's SQLite store.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agent::Agent;
use agent::tools::{HostedTool, ToolOutput};
use driver_spi::Driver;
use run_service::RunServiceProvider;
use serde_json::json;
use thread_store::sqlite::{SqliteConfig, SqliteStore};

/// Tool calls that reached a hosted `ping` handler: `(host, text)`, in arrival order.
pub(crate) type Calls = Arc<Mutex<Vec<(String, String)>>>;

/// Host `label`'s hosted `ping` tool at `revision`: it answers `pong from <label>: <text>`
/// and records `(label, text)` in `calls`.
pub(crate) fn ping_tool(label: &'static str, revision: &'static str, calls: &Calls) -> HostedTool {
    let calls = calls.clone();
    HostedTool::new(
        "ping",
        "Answers pong with the text it was given.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        move |call| {
            let calls = calls.clone();
            async move {
                let text = call.arguments["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((label.to_owned(), text.clone()));
                Ok(ToolOutput::text(format!("pong from {label}: {text}")))
            }
        },
    )
    .with_revision(revision)
}

/// An agent over `driver` and `provider`, with the SQLite store `<dir>/threads.sqlite` and
/// the workspace `<dir>/workspace`.
pub(crate) async fn agent(
    dir: &Path,
    driver: Arc<dyn Driver>,
    provider: Arc<dyn RunServiceProvider>,
) -> Agent {
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .expect("the SQLite store opens");
    let workspace = dir.join("workspace");
    Agent::builder(driver)
        .store(Arc::new(store))
        .run_service(provider)
        .workspace(workspace.to_str().expect("a UTF-8 path"))
        .build()
        .expect("the agent builds")
}

/// The last tool call that reached a handler.
pub(crate) fn last_call(calls: &Calls) -> Option<(String, String)> {
    calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .last()
        .cloned()
}
