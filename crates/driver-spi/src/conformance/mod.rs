//! The driver conformance kit: named clauses run against any driver factory.
//!
//! Every driver runs it from an integration test (`tests/conformance.rs`, one `#[test]` per
//! driver). [`run`] drives a few real turns through a driver made by a [`DriverFactory`]
//! and judges every [`Clause`]; each failure names its clause id.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use driver_spi::conformance::{self, ReferenceFactory};
//!
//! let report = conformance::run(&ReferenceFactory::new()).await;
//! report.assert_passed_without_skips(); // panics naming the failed clause ids
//! # });
//! ```
//!
//! # What the kit does
//! 1. Static checks on two instances: descriptor (DSC), config validation (CFG), capability
//!    truthfulness (CAP), codec laws (SES-01..05).
//! 2. Turn A: a fresh session (stateless if resume is not declared) with an MCP server at an
//!    *old* URL, an *old* bearer env-var name and an *old* secret, under profile
//!    `(exact A, session S)`.
//! 3. Turn B: resumes A (through the codec, as the core does) after an endpoint rotation: a
//!    *new* URL, env-var name and secret under profile `(exact B, session S)`. It must be
//!    accepted (SES-06) and the observed materialization must hold the new values only
//!    (CUR-01).
//! 4. Turn C: resumes with profile `(exact B, session S')`: it must be rejected with
//!    [`DriverError::ResumeRejected`] (SES-06).
//! 5. A fork of B, if declared (RSP-03).
//! 6. Process lifecycle, if declared: close twice, check nothing is alive, run again (PRC).
//!
//! Every turn's events are checked (EVT) and every response's checkpoint (RSP).
//!
//! # Skips
//! A clause whose capability the driver does not declare, or whose hook the factory does not
//! provide, is [`Verdict::Skipped`] with a reason, visibly; it never counts as passed.
//! A clause the kit could not reach because an earlier step failed is *failed* (fail closed).
//!
//! The kit needs no async runtime of its own; a driver that stalls forever stalls the kit, so
//! run it under the test harness's timeout. Driver panics are caught and reported as
//! failures.

mod report;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use compat_fingerprint::{Fingerprint, Kind};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef, TransportKind};
use secrecy::{ExposeSecret, SecretString};

use report::Recorder;
pub use report::{Clause, Report, Verdict};

use crate::event::{check_lifecycles, check_start, check_terminal};
use crate::reference::{Fault, ReferenceBackend, ReferenceDriver};
use crate::{
    CollectingSink, Driver, DriverError, DriverEvent, ProfilePayload, Request, Response,
    RuntimePayload, SessionCodec, SessionContext, SessionParams, SessionState,
};

/// Makes drivers for the kit and exposes what the kit cannot see through the [`Driver`]
/// trait.
pub trait DriverFactory: Send + Sync {
    /// A new driver instance with the configuration under test. The kit creates two and
    /// expects them to be equivalent; they may share a provider backend.
    fn create(&self) -> Arc<dyn Driver>;

    /// Adjusts a request the kit built before it is run (for example to set a workspace that
    /// exists). The kit's MCP servers, secrets, profiles and session contexts must be kept.
    fn prepare(&self, request: Request) -> Request {
        request
    }

    /// The configuration the last run materialized for its provider, as text (JSON, TOML,
    /// argv and env dump...), secret values included; the kit only searches it. `None` makes
    /// CUR-01 a visible skip.
    fn observed_materialization(&self) -> Option<SecretString> {
        None
    }

    /// How many provider processes the factory's drivers have alive now. `None` makes PRC-02
    /// a visible skip.
    fn live_processes(&self) -> Option<u64> {
        None
    }
}

/// A [`DriverFactory`] for the [`ReferenceDriver`]: every driver shares one backend, the
/// materialization hook returns the backend's last materialization and the process hook its
/// live process count.
#[derive(Debug, Clone, Default)]
pub struct ReferenceFactory {
    backend: ReferenceBackend,
    persistent: Option<bool>,
    faults: Vec<Fault>,
}

impl ReferenceFactory {
    /// A factory of default reference drivers on a fresh backend.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes drivers with or without persistent processes.
    pub fn with_persistent_processes(mut self, persistent: bool) -> Self {
        self.persistent = Some(persistent);
        self
    }

    /// Makes drivers with this deliberate fault.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// The shared backend.
    pub fn backend(&self) -> &ReferenceBackend {
        &self.backend
    }
}

impl DriverFactory for ReferenceFactory {
    fn create(&self) -> Arc<dyn Driver> {
        let mut driver = ReferenceDriver::with_backend(self.backend.clone());
        if let Some(persistent) = self.persistent {
            driver = driver.with_persistent_processes(persistent);
        }
        for fault in &self.faults {
            driver = driver.with_fault(*fault);
        }
        Arc::new(driver)
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        self.backend.last_materialization()
    }

    fn live_processes(&self) -> Option<u64> {
        Some(self.backend.process_stats().live)
    }
}

/// The prompt of every kit turn.
pub const PROMPT: &str = "Reply with exactly: OK";

const KIT: Kind = Kind::new("agent-sdk 2026-11-30 driver-spi conformance-profile v1");

fn kit_fingerprint(label: &str) -> Fingerprint {
    Fingerprint::of(KIT, |e| e.str(label))
}

/// The concrete endpoint material of one turn.
struct Endpoint {
    url: &'static str,
    env_name: &'static str,
    secret: &'static str,
}

const OLD: Endpoint = Endpoint {
    url: "http://127.0.0.1:4101/kit-mcp-old-endpoint",
    env_name: "KIT_MCP_TOKEN_OLD",
    secret: "kit-canary-secret-old-5f1c0e",
};

const NEW: Endpoint = Endpoint {
    url: "http://127.0.0.1:4202/kit-mcp-new-endpoint",
    env_name: "KIT_MCP_TOKEN_NEW",
    secret: "kit-canary-secret-new-a93e27",
};

/// The label of the first turn, which every driver must complete.
const FIRST_TURN: &str = "turn A";

/// One run the kit performed.
struct Turn {
    label: &'static str,
    events: Vec<DriverEvent>,
    result: Result<Result<Response, DriverError>, Panicked>,
}

struct Panicked;

impl Turn {
    fn response(&self) -> Option<&Response> {
        match &self.result {
            Ok(Ok(response)) => Some(response),
            _ => None,
        }
    }

    /// A one-line description of how the turn ended, for failure messages.
    fn outcome(&self) -> String {
        match &self.result {
            Ok(Ok(r)) if r.is_clean() => "a clean response".to_owned(),
            Ok(Ok(r)) => format!("a failed response ({})", r.exit),
            Ok(Err(e)) => format!("error: {e}"),
            Err(Panicked) => "a panic".to_owned(),
        }
    }
}

/// Polls a boxed future, turning a panic into `Err(Panicked)`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(_) => Poll::Ready(Err(Panicked)),
        }
    }
}

fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| "panicked (see the panic message above)".to_owned())
}

/// The run context shared by the steps.
struct Kit<'a> {
    factory: &'a dyn DriverFactory,
    driver: Arc<dyn Driver>,
    transport: Option<TransportKind>,
    r: Recorder,
    runs: u32,
}

/// Runs every clause against drivers made by `factory` and returns the report.
pub async fn run(factory: &dyn DriverFactory) -> Report {
    let d1 = factory.create();
    let d2 = factory.create();
    let mut r = Recorder::default();

    // ---- DSC ----
    let (a, b, c) = match (
        catch(|| d1.descriptor()),
        catch(|| d1.descriptor()),
        catch(|| d2.descriptor()),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        _ => {
            r.fail(Clause::Dsc01, "descriptor() panicked");
            r.fail_rest("descriptor() panicked");
            return r.finish(String::new());
        }
    };
    let trimmed = |s: &str| !s.is_empty() && s.trim() == s;
    r.check(
        Clause::Dsc01,
        if !trimmed(&a.driver_type) {
            Err("driver_type is empty or has surrounding whitespace".into())
        } else if !trimmed(&a.display_name) {
            Err("display_name is empty or has surrounding whitespace".into())
        } else {
            Ok(())
        },
    );
    r.check(
        Clause::Dsc02,
        if a != b {
            Err("two calls on one instance returned different descriptors".into())
        } else if a != c {
            Err("two instances returned different descriptors".into())
        } else {
            Ok(())
        },
    );
    let caps = a.capabilities.clone();

    // ---- CFG ----
    r.check(
        Clause::Cfg01,
        match catch(|| d1.validate_config()) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("rejected the factory's config: {e}")),
            Err(p) => Err(format!("validate_config {p}")),
        },
    );

    // ---- CAP ----
    check_capabilities(&mut r, &*d1, &*d2, &caps);

    // ---- SES-01..05 on a synthetic state (re-checked on real checkpoints below) ----
    let codec_present = d1.session_codec().is_some();
    if let (Some(codec), Some(codec2)) = (d1.session_codec(), d2.session_codec()) {
        check_codec_static(&mut r, codec, codec2, &synthetic_state(codec));
    } else {
        for clause in [
            Clause::Ses01,
            Clause::Ses02,
            Clause::Ses03,
            Clause::Ses04,
            Clause::Ses05,
        ] {
            r.skip(clause, "the driver has no session codec");
        }
    }

    let transport = [
        TransportKind::StreamableHttp,
        TransportKind::Sse,
        TransportKind::Stdio,
    ]
    .into_iter()
    .find(|t| caps.supports_mcp_transport(*t));
    let mut kit = Kit {
        factory,
        driver: d1.clone(),
        transport,
        r,
        runs: 0,
    };
    let resume = caps.resume && codec_present;

    // ---- Turn A: fresh, old endpoint, profile (A, S) ----
    let profile_a = ProfilePayload::new(kit_fingerprint("exact-a"), kit_fingerprint("session-s"));
    let profile_b = ProfilePayload::new(kit_fingerprint("exact-b"), kit_fingerprint("session-s"));
    let profile_c = ProfilePayload::new(kit_fingerprint("exact-b"), kit_fingerprint("session-s2"));
    let fresh = if resume {
        SessionContext::start()
    } else {
        SessionContext::stateless()
    };
    let turn_a = kit.turn(FIRST_TURN, fresh.clone(), &OLD, profile_a).await;
    let materialized_a = kit.factory.observed_materialization();
    let state_a = kit.check_response(&turn_a, resume);

    // The codec laws must also hold on a state the driver really produced (and its codec
    // accepted: RSP-02 judges that).
    if let (Some(codec), Some(codec2), Some(state)) =
        (kit.driver.session_codec(), d2.session_codec(), &state_a)
    {
        let mut state = state.clone();
        state.data.insert("kit.extra".into(), "kit value".into());
        check_codec_static(&mut kit.r, codec, codec2, &state);
    }

    // ---- Turn B: resume A after an endpoint rotation, profile (B, S) ----
    let session_b = match &state_a {
        Some(state) => SessionContext::continue_only(state.clone()),
        None => fresh.clone(),
    };
    let turn_b = kit.turn("turn B", session_b, &NEW, profile_b).await;
    let materialized_b = kit.factory.observed_materialization();
    let state_b = kit.check_response(&turn_b, resume);
    kit.check_current_request(&turn_b, materialized_a, materialized_b);

    // ---- SES-06: the guard follows the session-compatibility fingerprint ----
    if !resume {
        kit.r.skip(Clause::Ses06, "resume is not declared");
    } else if let Some(state_a) = &state_a {
        kit.check_guard_rule(state_a, &turn_b, state_b.as_ref(), profile_c)
            .await;
    } else {
        kit.r.fail(
            Clause::Ses06,
            "not checked: turn A gave no valid checkpoint",
        );
    }

    // ---- RSP-03: fork ----
    if !caps.fork {
        kit.r.skip(Clause::Rsp03, "fork is not declared");
    } else if let Some(parent) = state_b.clone().or(state_a.clone()) {
        let fork = kit
            .turn(
                "fork",
                SessionContext::fork(parent.clone()),
                &NEW,
                profile_b,
            )
            .await;
        let child = kit.check_response(&fork, true);
        kit.r.check(
            Clause::Rsp03,
            match child {
                Some(child) if child.resume_id != parent.resume_id => Ok(()),
                Some(_) => Err("the fork's checkpoint has the parent's resume id".into()),
                None => Err(format!(
                    "the fork gave no valid checkpoint ({})",
                    fork.outcome()
                )),
            },
        );
    } else {
        kit.r
            .fail(Clause::Rsp03, "not checked: no valid checkpoint to fork");
    }

    // ---- PRC ----
    kit.check_processes(fresh, profile_b).await;

    let driver_type = a.driver_type;
    kit.r.finish(driver_type)
}

fn check_capabilities(
    r: &mut Recorder,
    d1: &dyn Driver,
    d2: &dyn Driver,
    caps: &crate::Capabilities,
) {
    let codec_names = catch(|| {
        (
            d1.session_codec().map(|c| c.name().to_owned()),
            d1.session_codec().map(|c| c.name().to_owned()),
            d2.session_codec().map(|c| c.name().to_owned()),
        )
    });
    let stable_codec = match &codec_names {
        Ok((Some(x), Some(y), Some(z))) => !x.is_empty() && x == y && y == z,
        _ => false,
    };
    let fingerprints = catch(|| {
        (
            d1.config_fingerprinter().map(|f| f.config_fingerprint()),
            d1.config_fingerprinter().map(|f| f.config_fingerprint()),
            d2.config_fingerprinter().map(|f| f.config_fingerprint()),
        )
    });
    let has_fingerprinter = matches!(&fingerprints, Ok((Some(_), Some(_), Some(_))));

    r.check(
        Clause::Cap01,
        match (caps.resume, stable_codec, has_fingerprinter) {
            (true, true, true) | (false, false, _) => Ok(()),
            (true, false, _) => Err("resume is declared without a stable session codec".into()),
            (true, true, false) => Err("resume is declared without a config fingerprinter".into()),
            (false, true, _) => {
                Err("a stable session codec exists but resume is not declared".into())
            }
        },
    );

    match fingerprints {
        Ok((Some(x), Some(y), Some(z))) => r.check(
            Clause::Cap02,
            if x != y || y != z {
                Err("the config fingerprint differs between calls or instances".into())
            } else if x == Fingerprint::from_bytes([0; 32]) {
                Err("the config fingerprint is empty (all zero)".into())
            } else {
                Ok(())
            },
        ),
        Ok((None, None, None)) => r.skip(Clause::Cap02, "the driver has no config fingerprinter"),
        Ok(_) => r.fail(
            Clause::Cap02,
            "the config fingerprinter is present on some calls or instances only",
        ),
        Err(p) => r.fail(Clause::Cap02, format!("config_fingerprint {p}")),
    }

    let lifecycles = catch(|| {
        (
            d1.process_lifecycle().is_some(),
            d2.process_lifecycle().is_some(),
        )
    });
    r.check(
        Clause::Cap03,
        match lifecycles {
            Ok((x, y)) if x != y => Err("the process lifecycle differs between instances".into()),
            Ok((x, _)) if x == caps.persistent_processes => Ok(()),
            Ok((true, _)) => {
                Err("a process lifecycle exists but persistent processes are not declared".into())
            }
            Ok(_) => Err("persistent processes are declared without a process lifecycle".into()),
            Err(p) => Err(format!("process_lifecycle {p}")),
        },
    );

    r.check(
        Clause::Cap04,
        if caps.fork && !caps.resume {
            Err("fork is declared without resume".into())
        } else {
            Ok(())
        },
    );
}

/// A state for the codec laws, with every guard key and an extra data entry.
fn synthetic_state(codec: &dyn SessionCodec) -> SessionState {
    let mut state = SessionState::new("kit-session-0001")
        .with_display_id("Kit session")
        .with_data("kit.extra", "kit value");
    if let Ok(keys) = catch(|| codec.guard_keys().to_vec()) {
        for key in keys {
            state
                .data
                .insert(key.to_owned(), format!("kit-guard-{key}"));
        }
    }
    state
}

fn check_codec_static(
    r: &mut Recorder,
    codec: &dyn SessionCodec,
    codec2: &dyn SessionCodec,
    state: &SessionState,
) {
    // SES-01: name.
    r.check(
        Clause::Ses01,
        match catch(|| {
            (
                codec.name().to_owned(),
                codec.name().to_owned(),
                codec2.name().to_owned(),
            )
        }) {
            Ok((x, _, _)) if x.is_empty() || x.trim() != x => {
                Err("the codec name is empty or has surrounding whitespace".into())
            }
            Ok((x, y, z)) if x != y || y != z => {
                Err("the codec name differs between calls or instances".into())
            }
            Ok(_) => Ok(()),
            Err(p) => Err(format!("name() {p}")),
        },
    );

    // SES-02: nil and empty input.
    r.check(Clause::Ses02, codec_nil_inputs(codec));

    // SES-03: lossless round trip.
    let params = match catch(|| codec.to_params(Some(state))) {
        Ok(Ok(Some(p))) => Some(p),
        Ok(Ok(None)) => {
            r.fail(Clause::Ses03, "to_params(Some(state)) returned None");
            None
        }
        Ok(Err(e)) => {
            r.fail(
                Clause::Ses03,
                format!("to_params rejected a valid state: {e}"),
            );
            None
        }
        Err(p) => {
            r.fail(Clause::Ses03, format!("to_params {p}"));
            None
        }
    };
    let Some(p1) = params else {
        r.fail(Clause::Ses04, "not checked: to_params failed");
        r.fail(Clause::Ses05, "not checked: to_params failed");
        return;
    };
    r.check(Clause::Ses03, round_trip(codec, state, &p1));

    // SES-04: deterministic guard.
    r.check(
        Clause::Ses04,
        match catch(|| {
            (
                codec.guard_fingerprint(&p1),
                codec.guard_fingerprint(&p1.clone()),
                codec2.guard_fingerprint(&p1),
            )
        }) {
            Ok((x, y, z)) if x == y && y == z => Ok(()),
            Ok(_) => Err("the guard fingerprint differs between calls or instances".into()),
            Err(p) => Err(format!("guard_fingerprint {p}")),
        },
    );

    // SES-05: every guard value counts.
    r.check(Clause::Ses05, guard_sensitivity(codec, &p1));
}

fn codec_nil_inputs(codec: &dyn SessionCodec) -> Result<(), String> {
    match catch(|| codec.to_params(None)) {
        Ok(Ok(None)) => {}
        Ok(_) => return Err("to_params(None) is not Ok(None)".into()),
        Err(p) => return Err(format!("to_params(None) {p}")),
    }
    match catch(|| codec.from_params(None)) {
        Ok(Ok(None)) => {}
        Ok(_) => return Err("from_params(None) is not Ok(None)".into()),
        Err(p) => return Err(format!("from_params(None) {p}")),
    }
    match catch(|| codec.to_params(Some(&SessionState::new("")))) {
        Ok(Ok(Some(p))) if p.resume_id.trim().is_empty() => {
            return Err("to_params accepted a state without a resume id".into());
        }
        Ok(_) => {}
        Err(p) => return Err(format!("to_params(empty state) {p}")),
    }
    match catch(|| codec.from_params(Some(&SessionParams::default()))) {
        Ok(Ok(Some(s))) if s.resume_id.trim().is_empty() => {
            return Err("from_params accepted params without a resume id".into());
        }
        Ok(_) => {}
        Err(p) => return Err(format!("from_params(empty params) {p}")),
    }
    catch(|| codec.guard_fingerprint(&SessionParams::default()))
        .map(|_| ())
        .map_err(|p| format!("guard_fingerprint(empty params) {p}"))
}

fn round_trip(
    codec: &dyn SessionCodec,
    state: &SessionState,
    p1: &SessionParams,
) -> Result<(), String> {
    if p1.resume_id != state.resume_id {
        return Err("to_params changed the resume id".into());
    }
    if p1.display_id.trim().is_empty() {
        return Err("to_params left the display id empty for a resumable state".into());
    }
    if state.data.iter().any(|(k, v)| p1.data.get(k) != Some(v)) {
        return Err("to_params dropped or changed a data entry".into());
    }
    let s2 = match catch(|| codec.from_params(Some(p1))) {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return Err("from_params(params) returned None".into()),
        Ok(Err(e)) => return Err(format!("from_params rejected its own params: {e}")),
        Err(p) => return Err(format!("from_params {p}")),
    };
    if s2.resume_id != state.resume_id {
        return Err("from_params changed the resume id".into());
    }
    if state.data.iter().any(|(k, v)| s2.data.get(k) != Some(v)) {
        return Err("from_params dropped or changed a data entry".into());
    }
    match catch(|| codec.to_params(Some(&s2))) {
        Ok(Ok(Some(p2))) if &p2 == p1 => Ok(()),
        Ok(Ok(_)) => Err("to_params(from_params(p)) differs from p".into()),
        Ok(Err(e)) => Err(format!("to_params rejected a state from from_params: {e}")),
        Err(p) => Err(format!("to_params {p}")),
    }
}

fn guard_sensitivity(codec: &dyn SessionCodec, p1: &SessionParams) -> Result<(), String> {
    let keys = catch(|| codec.guard_keys().to_vec()).map_err(|p| format!("guard_keys {p}"))?;
    if keys.is_empty() {
        return Err(
            "the codec declares no guard keys; the guard must cover at least the profile's \
             session-compatibility fingerprint"
                .into(),
        );
    }
    let base =
        catch(|| codec.guard_fingerprint(p1)).map_err(|p| format!("guard_fingerprint {p}"))?;
    for key in keys {
        let mut changed = p1.clone();
        let value = changed.data.get(key).cloned().unwrap_or_default();
        changed
            .data
            .insert(key.to_owned(), format!("{value}-kit-changed"));
        let fp = catch(|| codec.guard_fingerprint(&changed))
            .map_err(|p| format!("guard_fingerprint {p}"))?;
        if fp == base {
            return Err(format!(
                "changing guard value `{key}` does not change the guard fingerprint"
            ));
        }
        let mut removed = p1.clone();
        if removed.data.remove(key).is_some() {
            let fp = catch(|| codec.guard_fingerprint(&removed))
                .map_err(|p| format!("guard_fingerprint {p}"))?;
            if fp == base {
                return Err(format!(
                    "removing guard value `{key}` does not change the guard fingerprint"
                ));
            }
        }
    }
    Ok(())
}

impl Kit<'_> {
    /// Builds and runs one turn, and checks its events.
    async fn turn(
        &mut self,
        label: &'static str,
        session: SessionContext,
        endpoint: &Endpoint,
        profile: ProfilePayload,
    ) -> Turn {
        self.runs += 1;
        let request = self
            .factory
            .prepare(self.request(session, endpoint, profile));
        let sink = Arc::new(CollectingSink::new());
        let result = CatchUnwind(self.driver.run(request, sink.clone())).await;
        let turn = Turn {
            label,
            events: sink.events(),
            result,
        };
        self.check_events(&turn);
        turn
    }

    fn request(
        &self,
        session: SessionContext,
        endpoint: &Endpoint,
        profile: ProfilePayload,
    ) -> Request {
        let server = self.transport.map(|t| match t {
            TransportKind::Stdio => McpServer::stdio("kit-mcp", "kit-mcp-server")
                .with_args(["--endpoint", endpoint.url]),
            TransportKind::Sse => {
                McpServer::sse("kit-mcp", endpoint.url).with_bearer_token_env(endpoint.env_name)
            }
            _ => McpServer::streamable_http("kit-mcp", endpoint.url)
                .with_bearer_token_env(endpoint.env_name),
        });
        let mut service = ServiceRef::new("kit-mcp", "Kit MCP service")
            .with_url(endpoint.url)
            .with_secret_env(EnvBinding::new(endpoint.env_name, endpoint.secret));
        if let Some(server) = &server {
            service = service.with_mcp(server.clone());
        }
        Request::new(
            RunId::new(format!("kit-run-{}", self.runs)),
            PROMPT,
            profile,
        )
        .with_session(session)
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp(server)
    }

    fn check_events(&mut self, turn: &Turn) {
        let label = turn.label;
        let events = &turn.events;
        let result = match &turn.result {
            Ok(result) => result,
            // A panic is reported by the clause the turn serves.
            Err(Panicked) => return,
        };
        if result.is_err() && events.is_empty() {
            // Failing before the start is allowed: no events at all.
            for clause in [
                Clause::Evt01,
                Clause::Evt02,
                Clause::Evt03,
                Clause::Evt04,
                Clause::Evt05,
            ] {
                self.r.pass(clause);
            }
            return;
        }
        let at = |e: crate::SequenceError| format!("{label}: {e}");
        self.r.check(Clause::Evt01, check_start(events).map_err(at));
        let terminal = check_terminal(events);
        self.r
            .check(Clause::Evt02, terminal.clone().map(|_| ()).map_err(at));
        self.r.check(
            Clause::Evt03,
            match terminal {
                Ok(index) if index + 1 < events.len() => Err(format!(
                    "{label}: event {} comes after the terminal event",
                    index + 1
                )),
                _ => Ok(()),
            },
        );
        self.r
            .check(Clause::Evt04, check_lifecycles(events).map_err(at));
        let last = events.last();
        self.r.check(
            Clause::Evt05,
            match (result, last) {
                (Ok(r), Some(DriverEvent::RunFinished)) if r.is_clean() => Ok(()),
                (Ok(r), Some(DriverEvent::RunFailed { .. })) if !r.is_clean() => Ok(()),
                (Err(_), Some(DriverEvent::RunFailed { .. })) => Ok(()),
                (Ok(r), _) if r.is_clean() => Err(format!(
                    "{label}: a clean response must end with run-finished"
                )),
                _ => Err(format!(
                    "{label}: a failed run ({}) must end with run-failed",
                    turn.outcome()
                )),
            },
        );
    }

    /// RSP-01 and RSP-02 on one turn; returns the state the core would store, after the
    /// codec round trip.
    ///
    /// A turn that returned an error has no checkpoint to judge. Only when it is the first
    /// turn, which every driver must complete, do both clauses fail (closed); otherwise the
    /// clause the turn serves reports it.
    fn check_response(&mut self, turn: &Turn, session_turn: bool) -> Option<SessionState> {
        let label = turn.label;
        let Some(response) = turn.response() else {
            if label == FIRST_TURN {
                let why = format!("not checked: {label} ended with {}", turn.outcome());
                self.r.fail(Clause::Rsp01, why.clone());
                self.r.fail(Clause::Rsp02, why);
            }
            return None;
        };
        let valid = response.checkpoint.as_ref().filter(|c| c.valid);
        self.r.check(
            Clause::Rsp01,
            match valid {
                Some(_) if !response.is_clean() => Err(format!(
                    "{label}: a valid checkpoint after a failed outcome ({})",
                    response.exit
                )),
                Some(c) if c.state.resume_id.trim().is_empty() => {
                    Err(format!("{label}: a valid checkpoint without a resume id"))
                }
                Some(_) if !session_turn => {
                    Err(format!("{label}: a valid checkpoint from a stateless run"))
                }
                _ => Ok(()),
            },
        );
        if !session_turn {
            self.r.skip(Clause::Rsp02, "resume is not declared");
            return None;
        }
        let Some(checkpoint) = valid else {
            self.r.fail(
                Clause::Rsp02,
                format!("{label}: a clean session turn gave no valid checkpoint"),
            );
            return None;
        };
        let Some(codec) = self.driver.session_codec() else {
            self.r.fail(Clause::Rsp02, "no session codec");
            return None;
        };
        let state = &checkpoint.state;
        let restored = match catch(|| codec.to_params(Some(state))) {
            Ok(Ok(Some(params))) => match catch(|| {
                let guard = codec.guard_fingerprint(&params);
                (codec.from_params(Some(&params)), guard)
            }) {
                Ok((Ok(Some(restored)), _)) => Ok(restored),
                Ok((Ok(None), _)) => Err("from_params returned None".to_owned()),
                Ok((Err(e), _)) => Err(format!("from_params rejected it: {e}")),
                Err(p) => Err(p),
            },
            Ok(Ok(None)) => Err("to_params returned None".to_owned()),
            Ok(Err(e)) => Err(format!("to_params rejected it: {e}")),
            Err(p) => Err(p),
        };
        match restored {
            Ok(restored) if restored.resume_id == state.resume_id => {
                self.r.pass(Clause::Rsp02);
                Some(restored)
            }
            Ok(_) => {
                self.r.fail(
                    Clause::Rsp02,
                    format!("{label}: the codec round trip changed the checkpoint's resume id"),
                );
                None
            }
            Err(why) => {
                self.r.fail(
                    Clause::Rsp02,
                    format!("{label}: the driver's own codec cannot store its checkpoint: {why}"),
                );
                None
            }
        }
    }

    fn check_current_request(
        &mut self,
        turn_b: &Turn,
        materialized_a: Option<SecretString>,
        materialized_b: Option<SecretString>,
    ) {
        if !matches!(turn_b.response(), Some(r) if r.is_clean()) {
            self.r.fail(
                Clause::Cur01,
                format!("not checked: turn B ended with {}", turn_b.outcome()),
            );
            return;
        }
        let (Some(a), Some(b)) = (materialized_a, materialized_b) else {
            self.r.skip(
                Clause::Cur01,
                "the factory exposes no observed materialization",
            );
            return;
        };
        let (a, b) = (a.expose_secret(), b.expose_secret());
        let mcp = self.transport.is_some();
        let mut items = vec![
            ("URL", OLD.url, NEW.url),
            ("secret value", OLD.secret, NEW.secret),
        ];
        if mcp {
            items.push(("bearer env-var name", OLD.env_name, NEW.env_name));
        }
        for (what, old, _) in &items {
            if !a.contains(old) {
                self.r.fail(
                    Clause::Cur01,
                    format!(
                        "the materialization observed after turn A lacks its {what}: the hook \
                         does not show what the driver materialized"
                    ),
                );
                return;
            }
        }
        for (what, old, new) in items {
            if !b.contains(new) {
                self.r.fail(
                    Clause::Cur01,
                    format!("the resumed turn did not materialize the new {what}"),
                );
                return;
            }
            if b.contains(old) {
                self.r.fail(
                    Clause::Cur01,
                    format!("the resumed turn still materialized the old {what}"),
                );
                return;
            }
        }
        self.r.pass(Clause::Cur01);
    }

    async fn check_guard_rule(
        &mut self,
        state_a: &SessionState,
        turn_b: &Turn,
        state_b: Option<&SessionState>,
        profile_c: ProfilePayload,
    ) {
        match &turn_b.result {
            Ok(Err(DriverError::ResumeRejected { reason })) => {
                self.r.fail(
                    Clause::Ses06,
                    format!(
                        "a resume with an unchanged session-compatibility fingerprint (only the \
                         exact fingerprint and the endpoint changed) was rejected ({reason})"
                    ),
                );
            }
            Ok(Ok(r)) if r.is_clean() => {}
            _ => {
                self.r.fail(
                    Clause::Ses06,
                    format!("not checked: turn B ended with {}", turn_b.outcome()),
                );
                return;
            }
        }
        // The stored guard survives the rotation.
        if let (Some(codec), Some(state_b)) = (self.driver.session_codec(), state_b) {
            let guards = catch(|| {
                let a = codec.to_params(Some(state_a)).ok().flatten();
                let b = codec.to_params(Some(state_b)).ok().flatten();
                a.zip(b)
                    .map(|(a, b)| (codec.guard_fingerprint(&a), codec.guard_fingerprint(&b)))
            });
            match guards {
                Ok(Some((a, b))) if a == b => {}
                Ok(Some(_)) => self.r.fail(
                    Clause::Ses06,
                    "the guard stored after an endpoint rotation differs from the one before: \
                     it is built from the exact fingerprint",
                ),
                Ok(None) => {}
                Err(p) => self.r.fail(Clause::Ses06, format!("guard_fingerprint {p}")),
            }
        }
        // A real semantic change is rejected.
        let parent = state_b.unwrap_or(state_a).clone();
        let turn_c = self
            .turn(
                "turn C",
                SessionContext::continue_only(parent),
                &NEW,
                profile_c,
            )
            .await;
        match &turn_c.result {
            Ok(Err(DriverError::ResumeRejected { .. })) => self.r.pass(Clause::Ses06),
            _ => self.r.fail(
                Clause::Ses06,
                format!(
                    "a resume with a changed session-compatibility fingerprint ended with {} \
                     instead of a resume rejection",
                    turn_c.outcome()
                ),
            ),
        }
    }

    async fn check_processes(&mut self, fresh: SessionContext, profile: ProfilePayload) {
        let driver = self.driver.clone();
        let Some(lifecycle) = driver.process_lifecycle() else {
            self.r
                .skip(Clause::Prc01, "persistent processes are not declared");
            self.r
                .skip(Clause::Prc02, "persistent processes are not declared");
            return;
        };
        let first = CatchUnwind(lifecycle.close_processes()).await;
        let second = CatchUnwind(lifecycle.close_processes()).await;
        match (first, second) {
            (Ok(Ok(())), Ok(Ok(()))) => {}
            (Ok(Err(e)), _) => self
                .r
                .fail(Clause::Prc01, format!("close_processes failed: {e}")),
            (_, Ok(Err(e))) => self.r.fail(
                Clause::Prc01,
                format!("a second close_processes failed: {e}"),
            ),
            _ => self.r.fail(Clause::Prc01, "close_processes panicked"),
        }
        match self.factory.live_processes() {
            Some(0) => self.r.pass(Clause::Prc02),
            Some(n) => self.r.fail(
                Clause::Prc02,
                format!("{n} process(es) still alive after close_processes"),
            ),
            None => self
                .r
                .skip(Clause::Prc02, "the factory does not report live processes"),
        }
        let again = self.turn("turn after close", fresh, &NEW, profile).await;
        match again.response() {
            Some(r) if r.is_clean() => self.r.pass(Clause::Prc01),
            _ => self.r.fail(
                Clause::Prc01,
                format!(
                    "the run after close_processes ended with {}",
                    again.outcome()
                ),
            ),
        }
        // Leave nothing running.
        let _ = CatchUnwind(lifecycle.close_processes()).await;
    }
}
