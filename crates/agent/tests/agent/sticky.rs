//! Sticky leases (issue 43): a hot Thread's turn is one store write; the lease stays with its
//! host while the driver holds the conversation, other hosts get `Busy`, and it is released on
//! close and when the driver lets the conversation go. A stale holder writes nothing.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, SessionOutcome, THREAD_LEASE_PREFIX, ThreadError};
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, ProcessLifecycle,
    Request, Response, SessionCodec,
};
use thread_store::memory::MemoryStore;
use thread_store::{
    FinalizeRequest, Lease, LeaseHolder, ListPage, ListQuery, ManualClock, Query, StoreError,
    ThreadRecord, ThreadStore,
};
use tokio::sync::watch;

use test_support::host::SqliteFile;

/// A driver whose simulated resident processes hold every conversation a clean turn leaves
/// (while `holding` is on), until [`let_go`](Self::let_go), as an idle eviction would; it
/// announces each ending on its `changes` channel. Everything else is the wrapped driver's.
pub(crate) struct Holding {
    inner: ReferenceDriver,
    held: Mutex<BTreeSet<String>>,
    changes: watch::Sender<u64>,
    holding: AtomicBool,
}

impl Holding {
    pub(crate) fn new(inner: ReferenceDriver) -> Arc<Self> {
        Arc::new(Self {
            inner,
            held: Mutex::new(BTreeSet::new()),
            changes: watch::Sender::new(0),
            holding: AtomicBool::new(true),
        })
    }

    /// Whether later turns leave their conversation held.
    fn set_holding(&self, on: bool) {
        self.holding.store(on, Ordering::SeqCst);
    }

    /// The process of `conversation` ends.
    fn let_go(&self, conversation: &str) {
        assert!(self.held.lock().unwrap().remove(conversation));
        self.changes.send_modify(|g| *g += 1);
    }

    fn only_held(&self) -> String {
        let held = self.held.lock().unwrap();
        assert_eq!(held.len(), 1, "{held:?}");
        held.first().unwrap().clone()
    }
}

#[driver_spi::async_trait]
impl Driver for Holding {
    fn descriptor(&self) -> Descriptor {
        self.inner.descriptor()
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.inner.validate_config()
    }
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let response = self.inner.run(request, sink).await?;
        if self.holding.load(Ordering::SeqCst)
            && let Some(state) = response.persistable_checkpoint()
        {
            self.held.lock().unwrap().insert(state.resume_id.clone());
        }
        Ok(response)
    }
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.inner.session_codec()
    }
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.inner.config_fingerprinter()
    }
    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        Some(self)
    }
    fn credential_namespace(&self) -> Option<&str> {
        self.inner.credential_namespace()
    }
}

#[driver_spi::async_trait]
impl ProcessLifecycle for Holding {
    async fn close_processes(&self) -> Result<(), DriverError> {
        self.held.lock().unwrap().clear();
        self.changes.send_modify(|g| *g += 1);
        Ok(())
    }
    fn holds_conversation(&self, session_id: &str) -> bool {
        self.held.lock().unwrap().contains(session_id)
    }
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changes.subscribe())
    }
}

/// A store that records every write call (acquire, renew, release, finalize, delete) it
/// passes on; reads pass unrecorded.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ThreadStore>,
    writes: Mutex<Vec<&'static str>>,
}

impl Counting {
    fn new(inner: Arc<dyn ThreadStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            writes: Mutex::default(),
        })
    }

    /// The writes since the last call.
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.writes.lock().unwrap())
    }

    fn note(&self, write: &'static str) {
        self.writes.lock().unwrap().push(write);
    }
}

#[async_trait::async_trait]
impl ThreadStore for Counting {
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        self.inner.resolve(query).await
    }
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.inner.list(query).await
    }
    async fn finalize(&self, request: &FinalizeRequest) -> Result<(), StoreError> {
        self.note(match (request.renew_leases, request.release_leases) {
            (Some(_), _) => "finalize+renew",
            (None, true) => "finalize+release",
            (None, false) => "finalize",
        });
        self.inner.finalize(request).await
    }
    async fn acquire_lease(&self, t: &str, o: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.note("acquire");
        self.inner.acquire_lease(t, o, ttl).await
    }
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.note("renew");
        self.inner.renew_lease(lease, ttl).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.note("release");
        self.inner.release_lease(lease).await
    }
    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError> {
        self.inner.lease_holder(target).await
    }
    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        self.note("delete");
        self.inner.delete(key).await
    }
}

/// Long enough that no renewal (a third of it) falls inside a test that counts writes.
const LONG_TTL: Duration = Duration::from_secs(30);

/// A host with sticky leases on `store`, its driver on `backend`.
pub(crate) fn sticky_host(
    store: Arc<dyn ThreadStore>,
    driver: Arc<Holding>,
    ttl: Duration,
) -> Agent {
    Agent::builder(driver)
        .store(store)
        .sticky_leases(true)
        .lease_ttl(ttl)
        .build()
        .unwrap()
}

/// Who holds `key`'s Thread lease now.
pub(crate) async fn holder(store: &dyn ThreadStore, key: &str) -> Option<String> {
    store
        .lease_holder(&format!("{THREAD_LEASE_PREFIX}{key}"))
        .await
        .unwrap()
        .map(|h| h.owner)
}

fn on(backend: &ReferenceBackend) -> Arc<Holding> {
    Holding::new(ReferenceDriver::with_backend(backend.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_turn_is_one_store_write_and_a_cold_one_two() {
    let store = Counting::new(Arc::new(MemoryStore::new()));
    let backend = ReferenceBackend::new();
    let driver = on(&backend);
    let agent = sticky_host(store.clone(), driver.clone(), LONG_TTL);
    let thread = agent.thread("chat");

    // Cold: acquire, then a finalize that keeps the lease.
    thread.run("first").await.unwrap();
    assert_eq!(store.take(), ["acquire", "finalize+renew"]);
    assert!(holder(store.as_ref(), "chat").await.is_some(), "kept");
    // Hot: the finalize alone.
    for prompt in ["second", "third"] {
        let result = thread.run(prompt).await.unwrap();
        assert_eq!(result.session, SessionOutcome::Resumed);
        assert_eq!(store.take(), ["finalize+renew"], "{prompt}");
    }
    assert!(backend.last_request().is_some());

    // A turn after which the driver no longer holds the conversation releases, as without.
    driver.set_holding(false);
    driver.let_go(&driver.only_held());
    wait_until_free(store.as_ref(), "chat").await;
    store.take();
    thread.run("fourth").await.unwrap();
    assert_eq!(store.take(), ["acquire", "finalize+release"]);
    assert_eq!(holder(store.as_ref(), "chat").await, None);

    // Without sticky leases: two writes, released.
    let plain = Agent::builder(on(&backend))
        .store(store.clone())
        .build()
        .unwrap();
    plain.thread("other").run("hello").await.unwrap();
    assert_eq!(store.take(), ["acquire", "finalize+release"]);
    assert_eq!(holder(store.as_ref(), "other").await, None);
}

/// Polls until `key`'s lease is free; the release runs on the agent's renewal task.
async fn wait_until_free(store: &dyn ThreadStore, key: &str) {
    for _ in 0..500 {
        if holder(store, key).await.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the sticky lease was never released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_when_the_driver_no_longer_holds_the_conversation_and_on_close() {
    let store = Counting::new(Arc::new(MemoryStore::new()));
    let driver = on(&ReferenceBackend::new());
    let agent = sticky_host(store.clone(), driver.clone(), LONG_TTL);
    agent.thread("a").run("hello").await.unwrap();
    let kept_by = holder(store.as_ref(), "a")
        .await
        .expect("kept after the turn");
    // The driver's process for the conversation ends (an idle eviction): released, without
    // waiting for the TTL.
    driver.let_go(&driver.only_held());
    wait_until_free(store.as_ref(), "a").await;
    assert!(store.take().contains(&"release"));
    // The next turn is cold again, and keeps it again, under another owner (a new run).
    agent.thread("a").run("again").await.unwrap();
    assert_eq!(store.take(), ["acquire", "finalize+renew"]);
    let now = holder(store.as_ref(), "a").await.unwrap();
    assert_ne!(now, kept_by);

    // Close releases every kept lease at once.
    agent.thread("b").run("hello").await.unwrap();
    store.take();
    agent.close().await;
    let writes = store.take();
    assert!(
        writes.len() >= 2 && writes.iter().all(|w| *w == "release"),
        "{writes:?}"
    );
    assert_eq!(holder(store.as_ref(), "a").await, None);
    assert_eq!(holder(store.as_ref(), "b").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_releases_its_kept_lease() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let backend = ReferenceBackend::new();
    let agent = sticky_host(store.clone(), on(&backend), LONG_TTL);
    agent.thread("t").run("hello").await.unwrap();
    assert!(holder(store.as_ref(), "t").await.is_some());
    backend.push_behavior(driver_spi::reference::Behavior::Fail(
        driver_spi::FailureKind::Other,
    ));
    agent.thread("t").run("fails").await.unwrap_err();
    assert_eq!(holder(store.as_ref(), "t").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_sticky_holder_writes_nothing_and_drops_its_lease() {
    let clock = ManualClock::starting_now();
    let memory: Arc<dyn ThreadStore> = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let store = Counting::new(memory.clone());
    let backend = ReferenceBackend::new();
    let a = sticky_host(store.clone(), on(&backend), LONG_TTL);
    a.thread("t").run("first").await.unwrap();
    // A pause past the TTL (the store's clock moves, A's does not): B takes the Thread over.
    clock.advance(LONG_TTL * 2);
    let b = Agent::builder(on(&backend))
        .store(memory.clone())
        .build()
        .unwrap();
    b.thread("t").run("second").await.unwrap();
    let after_b = b.thread("t").checkpoint().await.unwrap().unwrap();
    store.take();

    // A still believes its lease hot: it skips the acquire, and its finalize is fenced.
    let err = a.thread("t").run("third").await.unwrap_err();
    assert!(matches!(err, ThreadError::LeaseLost { .. }), "{err}");
    assert_eq!(store.take(), ["finalize+renew"]);
    assert_eq!(
        b.thread("t").checkpoint().await.unwrap().unwrap(),
        after_b,
        "the stale holder wrote nothing"
    );
    // The lost lease was dropped: A's next turn acquires again.
    a.thread("t").run("fourth").await.unwrap();
    assert_eq!(store.take(), ["acquire", "finalize+renew"]);
}

/// Host A keeps a hot Thread: host B gets `Busy` while A keeps it, and the Thread once A
/// closes; then B keeps it, and A's Thread handles are refused as closed.
pub(crate) async fn two_hosts_contend(
    a_store: Arc<dyn ThreadStore>,
    b_store: Arc<dyn ThreadStore>,
) {
    let backend = ReferenceBackend::new();
    let a = sticky_host(a_store.clone(), on(&backend), LONG_TTL);
    let b = sticky_host(b_store.clone(), on(&backend), LONG_TTL);
    a.thread("hot").run("first").await.unwrap();
    for _ in 0..2 {
        let err = b.thread("hot").run("mine?").await.unwrap_err();
        assert!(matches!(err, ThreadError::Busy { .. }), "{err}");
        // A's turns stay hot meanwhile.
        let result = a.thread("hot").run("again").await.unwrap();
        assert_eq!(result.session, SessionOutcome::Resumed);
    }
    a.close().await;
    let result = b.thread("hot").run("now mine").await.unwrap();
    assert_eq!(result.session, SessionOutcome::Resumed);
    assert!(result.output.contains("turn 4"), "{}", result.output);
    assert!(
        holder(b_store.as_ref(), "hot").await.is_some(),
        "B keeps it now"
    );
    let err = a.thread("hot").run("back").await.unwrap_err();
    assert!(matches!(err, ThreadError::Closed), "{err}");
    b.close().await;
    assert_eq!(holder(a_store.as_ref(), "hot").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_contend_for_a_hot_thread_on_sqlite() {
    let file = SqliteFile::new();
    two_hosts_contend(file.open().await, file.open().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_contend_for_a_hot_thread_on_postgres() {
    use thread_store::postgres::{PostgresConfig, PostgresStore};
    let url = std::env::var("THREAD_STORE_POSTGRES_URL")
        .expect("THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test cannot run (run with --skip postgres to skip it visibly)");
    let schema = format!("agent_sticky_{}", uuid::Uuid::now_v7().simple());
    let open = || async {
        let config = PostgresConfig::from_url(&url, &schema).unwrap();
        Arc::new(PostgresStore::connect(config).await.unwrap()) as Arc<dyn ThreadStore>
    };
    let (a, b) = (open().await, open().await);
    let _drop = crate::ownership::DropSchema {
        url: url.clone(),
        schema: schema.clone(),
    };
    two_hosts_contend(a, b).await;
}
