//! `agentctl threads …` run as a real process against a SQLite store that an agent (reference
//! driver, a provider attaching a secret) wrote: list, paging, show, delete with and without a
//! lease, exit codes, and no secret in any output.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use agent::Agent;
use driver_spi::reference::ReferenceDriver;
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunId, RunServiceCompatibility, RunServiceError,
    RunServiceProvider, SemanticFingerprint, ServiceRef, TransportKind,
};
use thread_store::sqlite::{SqliteConfig, SqliteStore};
use thread_store::{FinalizeRequest, ThreadRecord, ThreadStore};

use crate::support::{self, assert_no_secret, sqlite_url};

const CANARY: &str = "sk-agentctl-CANARY-7c1e55";

/// A provider whose every attachment carries the canary as a secret env value.
struct SecretUi;

#[async_trait::async_trait]
impl RunServiceProvider for SecretUi {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let url = "http://127.0.0.1:4555/mcp";
        let service = ServiceRef::new("agent-ui", "Agent UI")
            .with_url(url)
            .with_mcp(McpServer::streamable_http("agent-ui", url).with_bearer_token_env("UI_TOKEN"))
            .with_secret_env(EnvBinding::new("UI_TOKEN", CANARY));
        let semantic = SemanticFingerprint::new()
            .service_role("agent-ui")
            .mcp_server("agent-ui", TransportKind::StreamableHttp, false)
            .finish();
        Ok(
            RunAttachment::new([service]).with_resume_compatibility(RunServiceCompatibility::new(
                "com.example.agent-ui",
                semantic,
            )),
        )
    }
    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        Ok(())
    }
}

async fn open(path: &Path) -> Arc<dyn ThreadStore> {
    Arc::new(SqliteStore::open(SqliteConfig::new(path)).await.unwrap())
}

/// Runs one turn on each key through a real agent.
async fn seed(path: &Path, keys: &[&str]) {
    seed_store(open(path).await, keys).await;
}

async fn seed_store(store: Arc<dyn ThreadStore>, keys: &[&str]) {
    // agentctl's default namespace, whose Threads its commands list, show and delete.
    let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
        .store(store)
        .namespace("default".parse().unwrap())
        .model("model-1")
        .run_service(Arc::new(SecretUi))
        .build()
        .unwrap();
    for key in keys {
        agent
            .thread(*key)
            .run(format!("hello {CANARY}"))
            .await
            .unwrap();
    }
    agent.close().await;
}

/// agentctl on the SQLite file `store`, `RUST_LOG` unset so no log line mixes into its output.
fn agentctl(store: &Path, args: &[&str]) -> Output {
    support::command()
        .arg("--store")
        .arg(sqlite_url(store))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The `key` of every row `threads list --json` printed, in order.
fn keys(output: &Output) -> Vec<String> {
    stdout(output)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn list_filters_by_prefix_as_a_table_and_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.sqlite3");
    seed(&db, &["support/1", "support/2", "billing/1"]).await;

    let table = agentctl(&db, &["threads", "list", "--prefix", "support/"]);
    assert!(table.status.success(), "{table:?}");
    let text = stdout(&table);
    let lines: Vec<_> = text.lines().collect();
    assert!(lines[0].starts_with("UPDATED"), "{text}");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].ends_with("  support/1") && lines[2].ends_with("  support/2"));
    assert!(lines[1].contains("reference") && lines[1].contains("active"));
    assert!(
        lines[0].contains("TURNS") && lines[1].contains("active        1  "),
        "{text}"
    );
    assert_no_secret(&table, CANARY);

    let json = agentctl(&db, &["threads", "list", "--json"]);
    assert!(json.status.success());
    let rows: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let keys: Vec<_> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["billing/1", "support/1", "support/2"]);
    assert!(rows[0]["fingerprint"].as_str().unwrap().len() > 12);
    assert!(rows[0]["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(rows[0]["turns"], 1);
    assert_no_secret(&json, CANARY);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_through_more_records_than_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.sqlite3");
    seed(&db, &["template"]).await;
    let store = open(&db).await;
    let template = store
        .resolve(&thread_store::Query::key("template"))
        .await
        .unwrap()
        .unwrap();
    // 10,000 records: twenty pages of 500.
    for n in 0..10_000 {
        let record = ThreadRecord::new(
            format!("bulk/{n:05}"),
            template.driver_type.clone(),
            template.agent.clone(),
            template.compatibility.clone(),
            template.session_codec.clone(),
            template.state.clone(),
            template.created_at,
        )
        .owned_by("default");
        store.finalize(&FinalizeRequest::new(record)).await.unwrap();
    }
    let out = agentctl(&db, &["threads", "list", "--prefix", "bulk/", "--json"]);
    assert!(out.status.success());
    let expected: Vec<String> = (0..10_000).map(|n| format!("bulk/{n:05}")).collect();
    assert_eq!(keys(&out), expected, "every record once, in key order");
}

#[tokio::test(flavor = "multi_thread")]
async fn show_prints_the_record_and_its_components_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.sqlite3");
    seed(&db, &["support/42"]).await;

    let text = agentctl(&db, &["threads", "show", "support/42"]);
    assert!(text.status.success(), "{text:?}");
    let body = stdout(&text);
    assert!(body.contains("key           support/42"), "{body}");
    assert!(body.contains("driver        reference"));
    assert!(body.contains("\ncomponents\n"));
    assert!(
        body.contains("  attachment.semantic:"),
        "the provider's component: {body}"
    );
    assert_no_secret(&text, CANARY);

    let json = agentctl(&db, &["threads", "show", "support/42", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(value["key"], "support/42");
    assert_eq!(value["status"], "active");
    let components = value["components"].as_object().unwrap();
    assert!(components.contains_key("model"), "{components:?}");
    assert_no_secret(&json, CANARY);

    assert!(body.contains("lease         free"), "{body}");
    assert_eq!(value["lease"], serde_json::Value::Null);

    // While a host holds the Thread's lease, show names the holder.
    let store = open(&db).await;
    let lease = store
        .acquire_lease(
            &format!("{}support/42", agent::THREAD_LEASE_PREFIX),
            "host-7/run-1",
            Duration::from_secs(120),
        )
        .await
        .unwrap();
    let leased = agentctl(&db, &["threads", "show", "support/42", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&stdout(&leased)).unwrap();
    assert_eq!(value["lease"]["owner"], "host-7/run-1");
    let ms = value["lease"]["expires_in_ms"].as_u64().unwrap();
    assert!(ms > 0 && ms <= 120_000, "{ms}");
    let text = stdout(&agentctl(&db, &["threads", "show", "support/42"]));
    assert!(
        text.contains("lease         held by host-7/run-1 for "),
        "{text}"
    );
    store.release_lease(&lease).await.unwrap();

    let missing = agentctl(&db, &["threads", "show", "nope"]);
    assert_eq!(missing.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no Thread"));
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_honours_the_lease_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.sqlite3");
    seed(&db, &["t"]).await;
    let store = open(&db).await;
    let lease = store
        .acquire_lease(
            &format!("{}t", agent::THREAD_LEASE_PREFIX),
            "a-running-host",
            Duration::from_secs(60),
        )
        .await
        .unwrap();

    let busy = agentctl(&db, &["threads", "delete", "t"]);
    assert_eq!(busy.status.code(), Some(4), "{busy:?}");
    assert!(String::from_utf8_lossy(&busy.stderr).contains("--force"));
    let still = store.resolve(&thread_store::Query::key("t")).await.unwrap();
    assert!(still.is_some(), "nothing deleted while leased");

    let forced = agentctl(&db, &["threads", "delete", "t", "--force"]);
    assert!(forced.status.success(), "{forced:?}");
    assert!(
        store
            .resolve(&thread_store::Query::key("t"))
            .await
            .unwrap()
            .is_none()
    );
    store.release_lease(&lease).await.unwrap();

    let again = agentctl(&db, &["threads", "delete", "t"]);
    assert_eq!(again.status.code(), Some(5));

    // Unleased: deleted, and the delete left no lease behind.
    seed(&db, &["u"]).await;
    let plain = agentctl(&db, &["threads", "delete", "u"]);
    assert!(plain.status.success(), "{plain:?}");
    store
        .acquire_lease(
            &format!("{}u", agent::THREAD_LEASE_PREFIX),
            "next",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
}

#[test]
fn usage_and_missing_stores_have_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.sqlite3");
    let out = agentctl(&missing, &["threads", "list"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(!missing.exists(), "a read command creates no store");

    let bad = support::command()
        .args(["--store", "mysql://h/db", "threads", "list"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let unknown = support::command()
        .args(["threads", "frobnicate"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));

    // A PostgreSQL URL's password never reaches the output, even when connecting fails.
    let pg = support::command()
        .args([
            "--store",
            "postgresql://user:hunter2-secret@127.0.0.1:1/db",
            "threads",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(pg.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&pg.stderr).contains("hunter2-secret"));
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_store_lists_and_shows() {
    use thread_store::postgres::{PostgresConfig, PostgresStore};
    let url = support::postgres_url();
    let schema = support::unique_schema("agentctl");
    let store = PostgresStore::connect(PostgresConfig::from_url(&url, &schema).unwrap())
        .await
        .unwrap();
    seed_store(Arc::new(store), &["pg/1", "pg/2"]).await;

    let run = |args: &[&str]| {
        support::command()
            .args(["--store", url.as_str(), "--pg-schema", schema.as_str()])
            .args(args)
            .output()
            .unwrap()
    };
    let list = run(&["threads", "list", "--json"]);
    assert!(list.status.success(), "{list:?}");
    assert_eq!(keys(&list), ["pg/1", "pg/2"]);
    let show = run(&["threads", "show", "pg/2"]);
    assert!(stdout(&show).contains("key           pg/2"), "{show:?}");
    assert_no_secret(&list, CANARY);
    assert_no_secret(&show, CANARY);
}
