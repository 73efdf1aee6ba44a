//! `Thread::prewarm` and `Agent::prewarm`: the pre-launch path refuses as the run would,
//! before the driver is asked; the pre-warm's attachment (from a provider that hands out a new
//! endpoint per attach) and the driver's ticket serve the next run; nothing is written; the
//! kept attachment is detached at expiry and by `Agent::close`. The driver here is the
//! reference driver with a recording pre-warm: what the real CLIs do is tested by
//! `test_kit::prewarm` in the driver crates.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, SessionOutcome, ThreadError, Unsupported, Verdict};
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, PrewarmTicket,
    Prewarmed, ProcessLifecycle, Request, Response, SessionCodec,
};
use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile};

/// The reference driver, declaring pre-warm: a pre-warm records its request and hands out a
/// ticket (for a request with no stored session), expiring after `expires`.
struct Warming {
    driver: ReferenceDriver,
    expires: Option<Duration>,
    prewarms: Mutex<Vec<(Request, Option<PrewarmTicket>)>>,
}

impl Warming {
    fn new(backend: &ReferenceBackend, expires: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            driver: ReferenceDriver::with_backend(backend.clone()),
            expires,
            prewarms: Mutex::default(),
        })
    }

    fn prewarms(&self) -> Vec<(Request, Option<PrewarmTicket>)> {
        self.prewarms.lock().unwrap().clone()
    }
}

#[driver_spi::async_trait]
impl Driver for Warming {
    fn descriptor(&self) -> Descriptor {
        let mut descriptor = self.driver.descriptor();
        descriptor.capabilities.prewarm = true;
        descriptor
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.driver.validate_config()
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.driver.run(request, sink).await
    }

    async fn prewarm(&self, request: Request) -> Result<Prewarmed, DriverError> {
        let ticket = request.session.state.is_none().then(PrewarmTicket::new);
        self.prewarms
            .lock()
            .unwrap()
            .push((request, ticket.clone()));
        Ok(Prewarmed::new(ticket).with_expires_after(self.expires))
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.driver.session_codec()
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.driver.config_fingerprinter()
    }

    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        self.driver.process_lifecycle()
    }
}

async fn agent(
    file: &SqliteFile,
    driver: Arc<Warming>,
    provider: &Arc<RotatingProvider>,
    model: &str,
) -> Agent {
    Agent::builder(driver)
        .store(file.open().await)
        .model(model)
        .workspace("/work/project")
        .run_service(provider.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_driver_without_prewarm_refuses_before_any_attach() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent =
        test_support::host::host(file.open().await, &backend, std::slice::from_ref(&provider));
    let refused = agent.thread("t").prewarm().await;
    assert!(
        matches!(refused, Err(ThreadError::Unsupported(Unsupported::Prewarm))),
        "{refused:?}"
    );
    let keyed = agent.prewarm(["a", "b"]).await;
    assert_eq!(keyed.len(), 2);
    assert!(keyed.iter().all(|(_, r)| r.is_err()));
    assert_eq!(
        provider.attached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing attached"
    );
}

#[tokio::test]
async fn the_prewarms_attachment_and_ticket_serve_the_next_run_and_nothing_is_written() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let driver = Warming::new(&backend, None);
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = agent(&file, driver.clone(), &provider, "model-1").await;
    let thread = agent.thread("t");

    let warm = thread.prewarm().await.unwrap();
    assert!(matches!(
        warm.verdict,
        Verdict::Start { replaces: None, .. }
    ));
    assert_eq!(thread.checkpoint().await.unwrap(), None, "nothing written");
    assert_eq!(
        provider.live_runs(),
        1,
        "the attachment is kept for the run"
    );
    let (warmed, ticket) = driver.prewarms().pop().unwrap();
    assert!(warmed.prompt.is_empty(), "a pre-warm has no prompt");
    let ticket = ticket.expect("a new Thread gets a ticket");

    let run = thread.run("hello").await.unwrap();
    assert_eq!(run.session, SessionOutcome::Started);
    let ran = backend.last_request().unwrap();
    let ran = ran.request();
    assert_eq!(
        ran.prewarmed.as_ref(),
        Some(&ticket),
        "the run carries the ticket"
    );
    // The provider hands out a new endpoint per attach: the run got the pre-warm's.
    assert_eq!(
        ran.mcp, warmed.mcp,
        "the pre-warm's endpoint served the run"
    );
    assert_eq!(ran.runtime.secret_env, warmed.runtime.secret_env);
    assert_eq!(
        provider.attached.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(provider.live_runs(), 0, "detached after the run");

    // A resume's pre-warm: no ticket, and the next run attaches afresh once consumed.
    let warm = thread.prewarm().await.unwrap();
    assert!(matches!(warm.verdict, Verdict::Resume { .. }));
    assert_eq!(
        driver.prewarms().last().unwrap().1,
        None,
        "found by its session"
    );
    let again = thread.run("again").await.unwrap();
    assert_eq!(again.session, SessionOutcome::Resumed);
    assert_eq!(backend.last_request().unwrap().request().prewarmed, None);
    agent.close().await;
}

#[tokio::test]
async fn an_incompatible_prewarm_is_refused_before_the_driver_is_asked() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let driver = Warming::new(&backend, None);
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let first = agent(&file, driver.clone(), &provider, "model-1").await;
    first.thread("t").run("hello").await.unwrap();
    first.close().await;

    // Another model: the stored conversation is incompatible.
    let second = agent(&file, driver.clone(), &provider, "model-2").await;
    let explained = second
        .thread("t")
        .resume_only()
        .explain()
        .await
        .unwrap_err();
    let refused = second
        .thread("t")
        .resume_only()
        .prewarm()
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ThreadError::Incompatible { .. }),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        explained.to_string(),
        "the run's own error"
    );
    assert!(driver.prewarms().is_empty(), "the driver was never asked");
    assert_eq!(provider.live_runs(), 0, "the providers were detached");
    let missing = second
        .thread("none")
        .resume_only()
        .prewarm()
        .await
        .unwrap_err();
    assert!(matches!(missing, ThreadError::NotFound { .. }), "{missing}");
    second.close().await;
}

#[tokio::test]
async fn a_kept_attachment_is_detached_at_expiry_and_by_close() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let expiring = Warming::new(&backend, Some(Duration::from_millis(50)));
    let agent1 = agent(&file, expiring, &provider, "model-1").await;
    agent1.thread("t").prewarm().await.unwrap();
    assert_eq!(provider.live_runs(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        provider.live_runs(),
        0,
        "detached when the process would have expired"
    );
    // The next run attaches afresh and carries no ticket.
    agent1.thread("t").run("hello").await.unwrap();
    assert_eq!(backend.last_request().unwrap().request().prewarmed, None);
    agent1.close().await;

    let keeping = Warming::new(&backend, None);
    let agent2 = agent(&file, keeping.clone(), &provider, "model-1").await;
    let outcomes = agent2.prewarm(["a", "b"]).await;
    assert!(outcomes.iter().all(|(_, r)| r.is_ok()), "{outcomes:?}");
    assert_eq!(
        outcomes.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(provider.live_runs(), 2);
    agent2.close().await;
    assert_eq!(
        provider.live_runs(),
        0,
        "Agent::close detached the kept attachments"
    );
    let closed = agent2.thread("c").prewarm().await;
    assert!(matches!(closed, Err(ThreadError::Closed)), "{closed:?}");
}
