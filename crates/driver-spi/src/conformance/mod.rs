//! The driver conformance kit: named clauses run against any driver factory.
//!
//! Every driver runs it from an integration test (`tests/conformance.rs`, one `#[test]` per
//! driver). [`run`] drives a few real turns through a driver made by a [`Factory`]
//! and judges every [`Clause`]; each failure names its clause id.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use driver_spi::conformance::{self, Clause, ReferenceFactory};
//!
//! let report = conformance::run(&ReferenceFactory::new()).await;
//! // Panics naming each failed or skipped clause id but the listed skips: the reference
//! // driver keeps no process to pre-warm.
//! report.assert_passed_except(&[Clause::Prw01, Clause::Prw02]);
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
//! 6. Permission policy and approvals (POL, APR), where the factory can script a tool use:
//!    allowed, denied, and (if declared) asked and approved, denied, answered, timed out,
//!    answered twice, cancelled while pending; a policy that asks without declared approvals
//!    is refused.
//! 7. Steering (STR): a follow-up into a turn the factory holds open, delivered where steer
//!    is declared; refused typed where it is not.
//! 8. Process lifecycle, if declared: close twice, check nothing is alive, run again (PRC).
//! 9. Pre-warm (CAP-05, PRW): a driver that does not declare it refuses it as unsupported; one
//!    that does refuses a request its run refuses (turn C's) with the run's error before any
//!    process starts, and its next run of a pre-warmed request takes the pre-warmed process
//!    (the factory's live processes do not grow).
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

mod approvals;
mod clause;
mod prewarm;
mod statics;
mod steering;
mod turns;

use statics::{check_capabilities, check_codec_static, synthetic_state};

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use compat_fingerprint::{Fingerprint, Kind};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef, TransportKind};
use secrecy::{ExposeSecret, SecretString};

pub use approvals::TOOL_ARGUMENTS;
pub use clause::Clause;
pub use kit_report::Verdict;
pub use steering::{Release, STEER_TEXT};

/// The result of [`run`]: one [`Verdict`] per [`Clause`].
pub type Report = kit_report::Report<Clause>;

type Recorder = kit_report::Recorder<Clause>;

use crate::event::{check_lifecycles, check_start, check_terminal};
use crate::reference::{Fault, ReferenceBackend, ReferenceDriver};
use crate::{
    CollectingSink, Driver, DriverError, DriverEvent, ProfilePayload, Request, Response,
    RuntimePayload, SessionCodec, SessionContext, SessionParams, SessionState,
};

/// Makes drivers for the kit and exposes what the kit cannot see through the [`Driver`]
/// trait.
pub trait Factory: Send + Sync {
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

    /// How many runtime processes the factory's drivers have alive now. `None` makes PRC-02
    /// a visible skip.
    fn live_processes(&self) -> Option<u64> {
        None
    }

    /// Scripts the provider so that its **next** run uses one tool, with these arguments
    /// (always [`TOOL_ARGUMENTS`], which carry a secret value the driver must redact), and
    /// returns the kind of action that tool takes. `None` (the default) makes the POL and APR clauses visible skips.
    fn script_tool_use(&self, arguments: &str) -> Option<crate::Action> {
        let _ = arguments;
        None
    }

    /// How many scripted tools have run so far (their side effect happened). `None` leaves
    /// "the tool ran / did not run" unchecked in the POL and APR clauses.
    fn tools_run(&self) -> Option<usize> {
        None
    }

    /// Scripts the provider so that its **next** run's turn keeps running until a follow-up
    /// ([`STEER_TEXT`]) reaches it or the returned [`Release`] is called (the kit calls it
    /// once the follow-up was answered, or after a bound), then ends cleanly. Only asked of a
    /// driver that declares [`steer`](crate::Capabilities::steer); `None` (the default) makes
    /// STR-01 a visible skip for one.
    fn script_steered_turn(&self) -> Option<Release> {
        None
    }
}

/// A [`Factory`] for the [`ReferenceDriver`]: every driver shares one backend, the
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

    /// A factory of default reference drivers on `backend` (one whose sessions live in
    /// another [`SessionTable`](crate::reference::SessionTable), say).
    pub fn with_backend(backend: ReferenceBackend) -> Self {
        Self {
            backend,
            ..Self::default()
        }
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

impl Factory for ReferenceFactory {
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

    fn script_tool_use(&self, arguments: &str) -> Option<crate::Action> {
        self.backend
            .push_behavior(crate::reference::Behavior::UseTool {
                action: crate::Action::Write,
                tool: "kit-write".to_owned(),
                arguments: arguments.to_owned(),
            });
        Some(crate::Action::Write)
    }

    fn tools_run(&self) -> Option<usize> {
        Some(self.backend.performed().len())
    }

    /// A stalled run, released by the kit.
    fn script_steered_turn(&self) -> Option<Release> {
        self.backend
            .push_behavior(crate::reference::Behavior::Stall);
        let backend = self.backend.clone();
        Some(Arc::new(move || backend.release_stalled()))
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
    factory: &'a dyn Factory,
    driver: Arc<dyn Driver>,
    transport: Option<TransportKind>,
    r: Recorder,
    runs: u32,
}

/// Runs every clause against drivers made by `factory` and returns the report.
pub async fn run(factory: &dyn Factory) -> Report {
    let d1 = factory.create();
    let d2 = factory.create();
    let mut r = Recorder::new();

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

    // ---- POL, APR ----
    kit.check_policy(caps.approvals).await;

    // ---- STR ----
    kit.check_steering(caps.steer).await;

    // ---- PRC ----
    kit.check_processes(fresh.clone(), profile_b).await;

    // ---- CAP-05, PRW: after PRC, with no process of an earlier turn alive ----
    let refused = state_a.clone().filter(|_| resume).map(|state| {
        // Turn C's request: the guard does not match, so the run refuses before launch.
        SessionContext::continue_only(state)
    });
    kit.check_prewarm(&caps, fresh, profile_b, refused.map(|s| (s, profile_c)))
        .await;

    let driver_type = a.driver_type;
    kit.r.finish(driver_type)
}
