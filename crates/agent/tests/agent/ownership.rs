//! Thread ownership: a Thread belongs to the credential namespace whose agent created it. Two
//! tenants' agents over one store (memory, SQLite, PostgreSQL): the other tenant's runs, of
//! every mode, its fork, explain and checkpoint are refused with `ThreadError::Foreign` before
//! its driver runs, and the owner's record stays exactly as it was (same id, active, same
//! turns, no archived record, no lease left held), so the owner resumes. Listing shows each
//! namespace its own. A record stored before ownership (no namespace) is resumed and claimed
//! by its writer, and refused (`ThreadError::Unclaimed`, never archived or started over) to a
//! namespace whose provider does not know its session.

use std::sync::Arc;

use agent::{Agent, AgentBuilder, BuildError, SessionOutcome, ThreadError, Verdict};
use compat_fingerprint::ShortDigest;
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use thread_store::memory::MemoryStore;
use thread_store::{FinalizeRequest, ListQuery, Query, ThreadRecord, ThreadStore};

use test_support::host::{SqliteFile, host_with};

const ALICE: &str = "user:alice";
const BOB: &str = "user:bob";
/// Alice's Thread, as the issue names it.
const KEY: &str = "alice/chat-1";

/// A tenant: an agent in `namespace` with a provider of its own (`backend`: its own sessions,
/// as a CLI's live in its namespace's HOME). Alice's namespace comes from her driver, Bob's
/// from the builder: both ways bind an agent.
fn tenant(store: &Arc<dyn ThreadStore>, backend: &ReferenceBackend, namespace: &str) -> Agent {
    if namespace == ALICE {
        let driver =
            ReferenceDriver::with_backend(backend.clone()).with_credential_namespace(ALICE);
        configured(Agent::builder(Arc::new(driver)).store(store.clone()))
    } else {
        let namespace = namespace.parse().unwrap();
        host_with(store.clone(), backend, &[], |b| b.namespace(namespace))
    }
}

/// An agent without a namespace (unscoped), on `backend`.
fn unscoped(store: &Arc<dyn ThreadStore>, backend: &ReferenceBackend) -> Agent {
    host_with(store.clone(), backend, &[], |b| b)
}

/// The configuration `host_with` gives every agent, so all of them are compatible.
fn configured(builder: AgentBuilder) -> Agent {
    builder
        .model("model-1")
        .workspace("/work/project")
        .build()
        .unwrap()
}

/// The key's record, archived or not.
async fn stored(store: &Arc<dyn ThreadStore>, key: &str) -> Option<ThreadRecord> {
    store
        .resolve(&Query::key(key).including_archived())
        .await
        .unwrap()
}

/// Every record (active and archived) under `key`.
async fn all_records(store: &Arc<dyn ThreadStore>, key: &str) -> Vec<ThreadRecord> {
    store
        .list(&ListQuery::prefix(key).including_archived())
        .await
        .unwrap()
        .records
}

/// The keys of one listing.
fn keys(page: &thread_store::ListPage) -> Vec<&str> {
    page.records.iter().map(|r| r.key.as_str()).collect()
}

/// `error` is `Foreign` for `key`, naming Alice's namespace by digest only.
fn assert_foreign(error: &ThreadError, key: &str) {
    match error {
        ThreadError::Foreign { key: k, owner } => {
            assert_eq!(k, key);
            assert_eq!(*owner, ShortDigest::of_str(ALICE));
        }
        other => panic!("not Foreign: {other:?}"),
    }
    let message = error.to_string();
    assert!(!message.contains(ALICE), "{message}");
    assert!(
        message.contains(&ShortDigest::of_str(ALICE).to_string()),
        "{message}"
    );
}

/// Nothing of `record`'s key changed: the same record (id, status, turns, owner), no other
/// record under the key, and no lease left held on it.
async fn assert_untouched(store: &Arc<dyn ThreadStore>, record: &ThreadRecord) {
    assert_eq!(stored(store, &record.key).await.as_ref(), Some(record));
    assert_eq!(all_records(store, &record.key).await, vec![record.clone()]);
    let target = format!("{}{}", agent::THREAD_LEASE_PREFIX, record.key);
    assert_eq!(store.lease_holder(&target).await.unwrap(), None);
}

/// Bob's agent on Alice's Thread, over `store`: refused every way, Alice's record intact, and
/// Alice resumes. Then listing: each namespace sees its own.
async fn another_namespace_is_refused(store: Arc<dyn ThreadStore>) {
    let (alice_backend, bob_backend) = (ReferenceBackend::new(), ReferenceBackend::new());
    let alice = tenant(&store, &alice_backend, ALICE);
    let bob = tenant(&store, &bob_backend, BOB);
    assert_eq!(alice.namespace(), Some(ALICE));
    assert_eq!(bob.namespace(), Some(BOB));

    let first = alice.thread(KEY).run("hello").await.unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    let record = stored(&store, KEY).await.unwrap();
    assert_eq!(
        record.namespace.as_deref(),
        Some(ALICE),
        "the owner is stored"
    );
    assert_eq!(Some(&record.id), first.record_id.as_ref());
    assert_eq!(record.turns, 1);

    // Continue-or-start, resume-only, a fork, explain and the checkpoint: all refused.
    let err = bob.thread(KEY).run("mine now").await.unwrap_err();
    assert_foreign(&err, KEY);
    let err = bob
        .thread(KEY)
        .resume_only()
        .run("mine now")
        .await
        .unwrap_err();
    assert_foreign(&err, KEY);
    let err = bob
        .thread(KEY)
        .fork("bob/branch")
        .run("branch")
        .await
        .unwrap_err();
    assert_foreign(&err, KEY);
    assert_eq!(stored(&store, "bob/branch").await, None, "no fork written");
    let err = bob.thread(KEY).explain().await.unwrap_err();
    assert_foreign(&err, KEY);
    let err = bob.thread(KEY).resume_only().explain().await.unwrap_err();
    assert_foreign(&err, KEY);
    let err = bob.thread(KEY).checkpoint().await.unwrap_err();
    assert_foreign(&err, KEY);
    // An agent without a namespace may not take an owned Thread either.
    let nobody = unscoped(&store, &bob_backend);
    let err = nobody.thread(KEY).run("mine now").await.unwrap_err();
    assert_foreign(&err, KEY);
    assert_eq!(
        bob_backend.request_count(),
        0,
        "no driver of another tenant ran"
    );
    assert_untouched(&store, &record).await;

    // Alice's conversation goes on.
    let again = alice.thread(KEY).resume_only().run("again").await.unwrap();
    assert_eq!(again.session, SessionOutcome::Resumed);
    let resumed = stored(&store, KEY).await.unwrap();
    assert_eq!(resumed.id, record.id);
    assert_eq!(resumed.turns, 2);
    assert_eq!(resumed.namespace.as_deref(), Some(ALICE));
    let explained = alice.thread(KEY).explain().await.unwrap();
    assert_eq!(explained.verdict, Verdict::Resume { record: record.id });

    // Listing: each namespace its own; an unscoped agent and the store, every one.
    bob.thread("bob/chat-1").run("hello").await.unwrap();
    let all = ListQuery::prefix("");
    let listed = alice.list_threads(all.clone()).await.unwrap();
    assert_eq!(keys(&listed), [KEY]);
    let listed = bob.list_threads(all.clone()).await.unwrap();
    assert_eq!(keys(&listed), ["bob/chat-1"]);
    // A namespaced agent cannot list another namespace's by asking.
    let listed = bob
        .list_threads(all.clone().namespace(ALICE))
        .await
        .unwrap();
    assert_eq!(keys(&listed), ["bob/chat-1"]);
    let listed = nobody.list_threads(all.clone()).await.unwrap();
    assert_eq!(keys(&listed), [KEY, "bob/chat-1"]);
    let page = store.list(&all).await.unwrap();
    let owners: Vec<Option<&str>> = page
        .records
        .iter()
        .map(|r| r.namespace.as_deref())
        .collect();
    assert_eq!(owners, [Some(ALICE), Some(BOB)]);
    for agent in [alice, bob, nobody] {
        agent.close().await;
    }
}

/// A record stored before ownership (its namespace `None`): Bob, whose provider does not know
/// its session, is refused without anything changing; Alice, who wrote it, resumes it and so
/// claims it; after that Bob's runs are `Foreign`.
async fn a_record_without_an_owner_is_claimed_by_its_writer(store: Arc<dyn ThreadStore>) {
    let (alice_backend, bob_backend) = (ReferenceBackend::new(), ReferenceBackend::new());
    let alice = tenant(&store, &alice_backend, ALICE);
    let bob = tenant(&store, &bob_backend, BOB);
    let legacy = "legacy/1";
    alice.thread(legacy).run("hello").await.unwrap();
    // As an older build wrote it: no owner.
    let mut record = stored(&store, legacy).await.unwrap();
    record.namespace = None;
    store
        .finalize(&FinalizeRequest::new(record.clone()))
        .await
        .unwrap();
    assert_untouched(&store, &record).await;

    // Explain says a resume would claim it, for both tenants; neither runs a driver.
    for agent in [&alice, &bob] {
        let explained = agent.thread(legacy).explain().await.unwrap();
        let claim = Verdict::Claim {
            record: record.id.clone(),
        };
        assert_eq!(explained.verdict, claim);
    }
    assert_eq!(bob_backend.request_count(), 0);

    // Bob's provider does not know the session: refused, never started over or archived.
    for thread in [bob.thread(legacy), bob.thread(legacy).resume_only()] {
        let err = thread.run("mine now").await.unwrap_err();
        assert!(
            matches!(&err, ThreadError::Unclaimed { key, .. } if key == legacy),
            "{err:?}"
        );
        assert_untouched(&store, &record).await;
    }
    // A fork needs a parent the namespace owns; the checkpoint is its owner's to read.
    let err = bob
        .thread(legacy)
        .fork("bob/branch")
        .run("b")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Unclaimed { .. }), "{err:?}");
    let err = bob.thread(legacy).checkpoint().await.unwrap_err();
    assert!(matches!(err, ThreadError::Unclaimed { .. }), "{err:?}");
    assert_eq!(stored(&store, "bob/branch").await, None);
    // It is listed to no namespace until claimed.
    let listed = bob.list_threads(ListQuery::prefix("")).await.unwrap();
    assert!(listed.records.is_empty(), "{:?}", keys(&listed));

    // Alice, who wrote it, resumes it: the same record, one turn on, now hers.
    let resumed = alice.thread(legacy).run("again").await.unwrap();
    assert_eq!(resumed.session, SessionOutcome::Resumed);
    let claimed = stored(&store, legacy).await.unwrap();
    assert_eq!(claimed.id, record.id);
    assert_eq!(claimed.turns, record.turns + 1);
    assert_eq!(claimed.namespace.as_deref(), Some(ALICE));
    let err = bob.thread(legacy).run("mine now").await.unwrap_err();
    assert_foreign(&err, legacy);
    let listed = alice
        .list_threads(ListQuery::prefix("legacy/"))
        .await
        .unwrap();
    assert_eq!(keys(&listed), [legacy]);

    // A record without an owner that a run would have to start over is not claimed either:
    // continue-or-start refuses (nothing archived), resume-only refuses as ever.
    let drifted = "legacy/2";
    alice.thread(drifted).run("hello").await.unwrap();
    let mut record = stored(&store, drifted).await.unwrap();
    record.namespace = None;
    store
        .finalize(&FinalizeRequest::new(record.clone()))
        .await
        .unwrap();
    let driver =
        ReferenceDriver::with_backend(alice_backend.clone()).with_credential_namespace(ALICE);
    let changed = Agent::builder(Arc::new(driver))
        .store(store.clone())
        .model("model-2")
        .workspace("/work/project")
        .build()
        .unwrap();
    let err = changed.thread(drifted).run("again").await.unwrap_err();
    assert!(matches!(err, ThreadError::Unclaimed { .. }), "{err:?}");
    let err = changed
        .thread(drifted)
        .resume_only()
        .run("again")
        .await
        .unwrap_err();
    assert!(matches!(err, ThreadError::Incompatible { .. }), "{err:?}");
    assert_untouched(&store, &record).await;

    // An agent without a namespace treats it as before ownership: it resumes, owner unset.
    let nobody = unscoped(&store, &alice_backend);
    let resumed = nobody.thread(drifted).run("again").await.unwrap();
    assert_eq!(resumed.session, SessionOutcome::Resumed);
    assert_eq!(stored(&store, drifted).await.unwrap().namespace, None);
    for agent in [alice, bob, changed, nobody] {
        agent.close().await;
    }
}

#[tokio::test]
async fn memory_another_namespace_is_refused() {
    another_namespace_is_refused(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn memory_a_record_without_an_owner_is_claimed_by_its_writer() {
    a_record_without_an_owner_is_claimed_by_its_writer(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_another_namespace_is_refused() {
    let file = SqliteFile::new();
    another_namespace_is_refused(file.open().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_record_without_an_owner_is_claimed_by_its_writer() {
    let file = SqliteFile::new();
    a_record_without_an_owner_is_claimed_by_its_writer(file.open().await).await;
}

/// A PostgreSQL store in a schema of its own, and a guard that drops the schema.
async fn postgres(purpose: &str) -> (Arc<dyn ThreadStore>, impl Drop) {
    use thread_store::postgres::{PostgresConfig, PostgresStore};
    let url = std::env::var("THREAD_STORE_POSTGRES_URL")
        .expect("THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test cannot run (run with --skip postgres to skip it visibly)");
    let schema = format!("agent_{purpose}_{}", uuid::Uuid::now_v7().simple());
    let config = PostgresConfig::from_url(&url, &schema).unwrap();
    let store = Arc::new(PostgresStore::connect(config).await.unwrap());
    (store, DropSchema { url, schema })
}

/// Drops a test's PostgreSQL schema, even after a failure.
pub(crate) struct DropSchema {
    pub(crate) url: String,
    pub(crate) schema: String,
}

impl Drop for DropSchema {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        // Its own thread and runtime: Drop runs inside the test's runtime.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await
            })
        })
        .join();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_another_namespace_is_refused() {
    let (store, _schema) = postgres("owner").await;
    another_namespace_is_refused(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_record_without_an_owner_is_claimed_by_its_writer() {
    let (store, _schema) = postgres("claim").await;
    a_record_without_an_owner_is_claimed_by_its_writer(store).await;
}

/// The namespace comes from the driver or the builder; both, and different, is refused.
#[test]
fn an_agent_has_one_namespace() {
    let bound = || ReferenceDriver::new().with_credential_namespace(ALICE);
    let agent = Agent::builder(Arc::new(bound())).build().unwrap();
    assert_eq!(agent.namespace(), Some(ALICE));
    let agent = Agent::builder(Arc::new(bound()))
        .namespace(ALICE.parse().unwrap())
        .build()
        .unwrap();
    assert_eq!(agent.namespace(), Some(ALICE));
    let err = Agent::builder(Arc::new(bound()))
        .namespace(BOB.parse().unwrap())
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::NamespaceConflict { .. }), "{err}");
    let message = err.to_string();
    assert!(
        !message.contains(ALICE) && !message.contains(BOB),
        "{message}"
    );
    let bad = ReferenceDriver::new().with_credential_namespace("user:a/../b");
    let err = Agent::builder(Arc::new(bad)).build().unwrap_err();
    assert!(matches!(err, BuildError::DriverNamespace(_)), "{err}");
    let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
        .build()
        .unwrap();
    assert_eq!(agent.namespace(), None, "unscoped");
}
