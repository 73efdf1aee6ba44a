//! Secret hygiene of host-defined tools under TRACE logging: the bearer token never reaches the
//! thread store (raw SQLite bytes, WAL included), the run's events, errors, results or logs.
//!
//! A binary of its own with one test: a tracing subscriber is process-global state (callsite
//! interest), so a concurrent test in the same process could make the capture miss events.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use agent::ThreadError;
use driver_spi::reference::{Behavior, ReferenceBackend};
use thread_store::ThreadStore;
use thread_store::sqlite::{SqliteConfig, SqliteStore};

use test_support::tools::{
    Decl, V1, call_lookup, connect, endpoint, lookup, read_until_tool_events, tool_host,
};

async fn open(dir: &std::path::Path) -> Arc<dyn ThreadStore> {
    Arc::new(
        SqliteStore::open(SqliteConfig::new(dir.join("threads.db")))
            .await
            .unwrap(),
    )
}

/// A `MakeWriter` that appends everything to one shared buffer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn sqlite_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Secret hygiene: the bearer token never reaches the thread store (raw SQLite bytes including
/// the WAL), the run's events, errors, results or TRACE-level logs.
#[tokio::test]
async fn the_token_never_reaches_the_store_events_errors_or_traces() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(capture.clone())
        .finish();
    // A current-thread test, alone in its binary: every task (server, runs, client) logs into
    // this subscriber, and no other test races the callsite registrations.
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let backend = ReferenceBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tokens = Vec::new();
    let mut texts = Vec::new();

    let agent1 = tool_host(open(dir.path()).await, &backend, lookup(&V1, &runs));
    backend.push_behavior(Behavior::Stall);
    let mut stream = agent1.thread("t").stream("first").unwrap();
    backend.wait_for_stalled(1).await;
    let ep = endpoint(&backend.last_request().unwrap());
    tokens.push(ep.token.clone());
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    call_lookup(&client, "7").await;
    call_lookup(&client, "x7").await;
    let seen = read_until_tool_events(&mut stream, 6).await;
    backend.release_stalled();
    let result = stream.result().await.unwrap();
    client.cancel().await.unwrap();
    for event in seen.iter().chain(&result.events) {
        texts.push(serde_json::to_string(event).unwrap());
        texts.push(format!("{event:?}"));
    }
    texts.push(format!("{result:?}"));
    texts.push(format!("{agent1:?}"));
    agent1.close().await;

    // A restart (new token), then an incompatible catalog: the error must not leak either.
    let agent2 = tool_host(open(dir.path()).await, &backend, lookup(&V1, &runs));
    let resumed = agent2
        .thread("t")
        .resume_only()
        .run("second")
        .await
        .unwrap();
    tokens.push(endpoint(&backend.last_request().unwrap()).token);
    texts.push(format!("{resumed:?}"));
    agent2.close().await;
    let changed = Decl {
        revision: Some("2"),
        required: V1.required,
    };
    let agent3 = tool_host(open(dir.path()).await, &backend, lookup(&changed, &runs));
    let err = agent3
        .thread("t")
        .resume_only()
        .run("third")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Incompatible { .. }), "{err}");
    texts.push(err.to_string());
    texts.push(format!("{err:?}"));
    agent3.close().await;

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("tool call served"),
        "the capture saw the server traces"
    );
    assert!(logs.contains(" TRACE "), "the capture ran at TRACE level");
    let store = sqlite_bytes(dir.path());
    assert!(!store.is_empty());
    let resume_id = agent3
        .thread("t")
        .checkpoint()
        .await
        .unwrap()
        .unwrap()
        .resume_id;
    assert!(
        contains(&store, &resume_id),
        "the raw bytes hold the stored thread"
    );
    assert_eq!(tokens.len(), 2);
    assert_ne!(tokens[0], tokens[1]);
    for token in &tokens {
        assert_eq!(token.len(), 64);
        assert!(!contains(&store, token), "token in the SQLite files");
        assert!(!logs.contains(token.as_str()), "token in the traces");
        for text in &texts {
            assert!(!text.contains(token.as_str()), "token in {text}");
        }
    }
}
