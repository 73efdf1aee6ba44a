//! What the worker's tests share: a namespace on a temporary base, the reference
//! configuration, a profile, an in-process server over pipes, and the host's driver on the
//! real binary.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compat_fingerprint::{Fingerprint, Kind};
use driver_process::pool::PoolLimits;
use driver_spi::{DriverEvent, EventSink, ProfilePayload};
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use worker::{WorkerDriver, Workers};
use worker_protocol::{DriverConfig, WireEnv};

pub(crate) const NAMESPACE: &str = "user:alice";

pub(crate) fn profile() -> ProfilePayload {
    const K: Kind = Kind::new("worker tests 2026-12-05 profile v1");
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    )
}

pub(crate) fn wire_env(base: &Path) -> WireEnv {
    WireEnv {
        base_dir: base.join("env"),
        namespace: NAMESPACE.to_owned(),
        cwd: base.to_path_buf(),
        vars: Default::default(),
    }
}

/// The reference runtime's configuration on `base`, with `script` (`"stall"`, …) and
/// prompt-scripted tools.
pub(crate) fn reference(base: &Path, script: &[&str]) -> DriverConfig {
    serde_json::from_value(
        json!({"kind": "reference", "env": wire_env(base), "script": script, "prompt_tools": true}),
    )
    .expect("a reference configuration")
}

pub(crate) fn namespace() -> CredentialNamespace {
    NAMESPACE.parse().expect("a namespace")
}

/// A pool of workers running the real binary.
pub(crate) fn workers() -> Arc<Workers> {
    Workers::new(env!("CARGO_BIN_EXE_agent-worker"), PoolLimits::default())
}

/// The host's driver of `config` on `workers`.
pub(crate) fn driver_on(base: &Path, config: DriverConfig, workers: &Arc<Workers>) -> WorkerDriver {
    let env = RuntimeEnv::builder(base.join("env"), namespace(), base)
        .host_env(HostEnv::empty())
        .build()
        .expect("the namespace's environment");
    WorkerDriver::new(Arc::clone(workers), Arc::new(env), config).expect("a worker driver")
}

/// The host's driver of `config` on the real binary, with a pool of its own.
pub(crate) fn worker_driver(base: &Path, config: DriverConfig) -> (WorkerDriver, Arc<Workers>) {
    let workers = workers();
    (driver_on(base, config, &workers), workers)
}

/// SIGKILLs `pid` and waits until it is gone (reaped).
pub(crate) async fn kill(pid: u32) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("kill");
    let proc = format!("/proc/{}", pid.as_raw_nonzero());
    for _ in 0..500 {
        if !Path::new(&proc).exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the worker did not end");
}

/// A sink that keeps events and wakes waiters on each.
#[derive(Default)]
pub(crate) struct Watch {
    events: Mutex<Vec<DriverEvent>>,
    changed: tokio::sync::Notify,
}

impl EventSink for Watch {
    fn emit(&self, event: DriverEvent) {
        self.events.lock().expect("events").push(event);
        self.changed.notify_waiters();
    }
}

impl Watch {
    pub(crate) fn events(&self) -> Vec<DriverEvent> {
        self.events.lock().expect("events").clone()
    }

    /// Waits until an event matches `wanted`.
    pub(crate) async fn until(&self, wanted: impl Fn(&DriverEvent) -> bool) {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let changed = self.changed.notified();
                if self.events().iter().any(&wanted) {
                    return;
                }
                changed.await;
            }
        })
        .await
        .expect("the event came");
    }
}

/// A worker served in process over in-memory pipes, and the host's ends of them.
pub(crate) struct Pipe {
    pub(crate) to_worker: DuplexStream,
    pub(crate) from_worker: Lines<BufReader<DuplexStream>>,
    pub(crate) served: tokio::task::JoinHandle<()>,
}

impl Pipe {
    pub(crate) fn new(max_line: usize) -> Self {
        let (stdin, to_worker) = tokio::io::duplex(1 << 16);
        let (from_worker, stdout) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(worker::serve(stdin, stdout, max_line, HostEnv::empty()));
        Self {
            to_worker,
            from_worker: BufReader::new(from_worker).lines(),
            served,
        }
    }

    pub(crate) async fn send_line(&mut self, line: &[u8]) {
        self.to_worker.write_all(line).await.expect("write");
        self.to_worker.write_all(b"\n").await.expect("write");
    }

    pub(crate) async fn request(&mut self, id: Value, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(message.to_string().as_bytes()).await;
    }

    pub(crate) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.from_worker.next_line())
            .await
            .expect("a line in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    /// The answer to request `id`, keeping what came before it in `others`.
    pub(crate) async fn answer(&mut self, id: &Value, others: &mut Vec<Value>) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            others.push(message);
        }
    }
}

/// Approvals whose handler only keeps each ticket, in the returned list.
pub(crate) fn holding() -> (
    Arc<Mutex<Vec<driver_spi::ApprovalTicket>>>,
    driver_spi::Approvals,
) {
    let tickets: Arc<Mutex<Vec<driver_spi::ApprovalTicket>>> = Arc::default();
    let handler = {
        let tickets = Arc::clone(&tickets);
        move |t: driver_spi::ApprovalTicket| tickets.lock().expect("tickets").push(t)
    };
    (tickets, driver_spi::Approvals::new(Arc::new(handler)))
}

/// Waits until `tickets` holds one, and returns it.
pub(crate) async fn first_ticket(
    tickets: &Mutex<Vec<driver_spi::ApprovalTicket>>,
) -> driver_spi::ApprovalTicket {
    for _ in 0..3000 {
        if let Some(ticket) = tickets.lock().expect("tickets").first() {
            return ticket.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no approval request reached the host");
}

/// A turn on `driver`, its worker SIGKILLed, then a turn that continues the stored session:
/// both responses. Checks that a new worker served the second.
pub(crate) async fn turn_kill_resume(
    driver: &WorkerDriver,
    workers: &Workers,
    sink: Arc<Watch>,
    prompts: [&str; 2],
) -> (driver_spi::Response, driver_spi::Response) {
    use driver_spi::{Driver, Request, SessionContext};
    let request = Request::new(run_service::RunId::new("r1"), prompts[0], profile());
    let first = driver
        .run(request, sink.clone())
        .await
        .expect("the first turn");
    let state = first.persistable_checkpoint().expect("resumable").clone();
    let pid = workers.worker_pid(&namespace()).expect("a worker ran");
    kill(pid).await;
    let resumed = Request::new(run_service::RunId::new("r2"), prompts[1], profile())
        .with_session(SessionContext::continue_only(state));
    let second = driver.run(resumed, sink).await.expect("the resumed turn");
    assert_ne!(
        workers.worker_pid(&namespace()),
        Some(pid),
        "a new worker served the resumed turn"
    );
    (first, second)
}
