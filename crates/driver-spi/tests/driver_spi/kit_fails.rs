//! The conformance kit can fail: a deliberately broken driver fails each clause with that
//! clause's id. One test per clause.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use compat_fingerprint::Fingerprint;
use driver_spi::conformance::{self, Clause, ReferenceFactory, Report, Verdict};
use driver_spi::reference::{Fault, ReferenceCodec, ReferenceDriver};
use driver_spi::{
    Action, CodecError, ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError,
    DriverEvent, EventSink, ExitStatus, FailureKind, Permission, ProcessLifecycle, Request,
    Response, RunFailure, SessionCodec, SessionMode, SessionParams, SessionState,
};
use secrecy::{ExposeSecret, SecretString};

use crate::block_on;

/// One way to break the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Breakage {
    EmptyDisplayName,
    UnstableDescriptor,
    RejectConfig,
    ResumeWithoutCodec,
    UnstableConfigFingerprint,
    PersistentWithoutLifecycle,
    ForkWithoutResume,
    EmptyCodecName,
    CodecPanicsOnNone,
    LossyCodec,
    UnstableGuard,
    GuardIgnoresValues,
    NoStart,
    TwoTerminals,
    EventAfterTerminal,
    ResultWithoutStart,
    FailedTerminalOnCleanRun,
    ValidCheckpointOnFailure,
    UnstorableCheckpoint,
    ForkKeepsParentId,
    ReplaysFirstEndpoint,
    SecondCloseFails,
    CloseLeavesProcesses,
    AsksWhenAllowed,
    RunsWhenDenied,
    AsksWithoutDeclaring,
    IgnoresAsk,
    LeaksApprovalArguments,
    /// Does not declare pre-warm, yet its pre-warm succeeds.
    UndeclaredPrewarm,
    /// Declares pre-warm, and its pre-warm succeeds doing nothing (no process, no refusal).
    PrewarmDoesNothing,
    RefusesFollowUps,
    AcksWithoutDeclaring,
}

/// The reference driver with one breakage.
struct Broken {
    inner: ReferenceDriver,
    breakage: Breakage,
    calls: AtomicU64,
    first_request: Mutex<Option<Request>>,
    codec: BrokenCodec,
}

struct BrokenCodec {
    breakage: Breakage,
    calls: AtomicU64,
}

impl SessionCodec for BrokenCodec {
    fn name(&self) -> &str {
        if self.breakage == Breakage::EmptyCodecName {
            ""
        } else {
            ReferenceCodec.name()
        }
    }

    fn guard_keys(&self) -> &[&'static str] {
        ReferenceCodec.guard_keys()
    }

    fn to_params(&self, state: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError> {
        if self.breakage == Breakage::CodecPanicsOnNone && state.is_none() {
            panic!("deliberately broken codec: to_params(None)");
        }
        let mut params = ReferenceCodec.to_params(state)?;
        if let (Breakage::LossyCodec, Some(p)) = (self.breakage, &mut params) {
            p.data.retain(|k, _| k.starts_with("guard."));
        }
        Ok(params)
    }

    fn from_params(
        &self,
        params: Option<&SessionParams>,
    ) -> Result<Option<SessionState>, CodecError> {
        ReferenceCodec.from_params(params)
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> Fingerprint {
        match self.breakage {
            Breakage::UnstableGuard => {
                let n = self.calls.fetch_add(1, Ordering::Relaxed);
                crate::fp(&format!("guard-{n}"))
            }
            Breakage::GuardIgnoresValues => crate::fp("constant guard"),
            _ => ReferenceCodec.guard_fingerprint(params),
        }
    }
}

/// A sink that breaks the event stream on the way out.
struct BrokenSink {
    inner: Arc<dyn EventSink>,
    breakage: Breakage,
    /// A secret value of the run, for `LeaksApprovalArguments`.
    secret: Option<String>,
}

impl EventSink for BrokenSink {
    fn emit(&self, event: DriverEvent) {
        match (self.breakage, &event) {
            (Breakage::NoStart, DriverEvent::RunStarted) => {}
            (Breakage::TwoTerminals, DriverEvent::RunFinished) => {
                self.inner.emit(event.clone());
                self.inner.emit(event);
            }
            (Breakage::EventAfterTerminal, DriverEvent::RunFinished) => {
                self.inner.emit(event);
                self.inner.emit(DriverEvent::text("late"));
            }
            (Breakage::ResultWithoutStart, DriverEvent::RunFinished) => {
                self.inner
                    .emit(DriverEvent::tool_call_result("ghost", "result", false));
                self.inner.emit(event);
            }
            (Breakage::FailedTerminalOnCleanRun, DriverEvent::RunFinished) => {
                self.inner.emit(DriverEvent::RunFailed {
                    kind: FailureKind::Other,
                });
            }
            (
                Breakage::LeaksApprovalArguments,
                DriverEvent::ApprovalRequested {
                    approval_id,
                    call_id,
                    action,
                    tool,
                    ..
                },
            ) => self.inner.emit(DriverEvent::ApprovalRequested {
                approval_id: approval_id.clone(),
                call_id: call_id.clone(),
                action: *action,
                tool: tool.clone(),
                arguments: self.secret.clone().unwrap_or_default(),
            }),
            _ => self.inner.emit(event),
        }
    }
}

impl Broken {
    fn new(inner: ReferenceDriver, breakage: Breakage) -> Self {
        Self {
            inner,
            breakage,
            calls: AtomicU64::new(0),
            first_request: Mutex::new(None),
            codec: BrokenCodec {
                breakage,
                calls: AtomicU64::new(0),
            },
        }
    }

    fn is(&self, breakage: Breakage) -> bool {
        self.breakage == breakage
    }
}

#[driver_spi::async_trait]
impl Driver for Broken {
    fn descriptor(&self) -> Descriptor {
        let mut d = self.inner.descriptor();
        match self.breakage {
            Breakage::EmptyDisplayName => d.display_name = String::new(),
            Breakage::UnstableDescriptor => {
                let n = self.calls.fetch_add(1, Ordering::Relaxed);
                d.display_name = format!("Reference driver #{n}");
            }
            Breakage::ForkWithoutResume => d.capabilities.resume = false,
            Breakage::AsksWithoutDeclaring => d.capabilities.approvals = false,
            Breakage::PrewarmDoesNothing => d.capabilities.prewarm = true,
            Breakage::AcksWithoutDeclaring => d.capabilities.steer = false,
            _ => {}
        }
        d
    }

    async fn prewarm(&self, request: Request) -> Result<driver_spi::Prewarmed, DriverError> {
        match self.breakage {
            Breakage::UndeclaredPrewarm | Breakage::PrewarmDoesNothing => {
                Ok(driver_spi::Prewarmed::new(None))
            }
            _ => self.inner.prewarm(request).await,
        }
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.is(Breakage::RejectConfig) {
            return Err(ConfigError::invalid("command", "deliberately rejected"));
        }
        self.inner.validate_config()
    }

    async fn run(
        &self,
        mut request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        if self.is(Breakage::ReplaysFirstEndpoint) {
            let mut first = self.first_request.lock().unwrap();
            match &*first {
                // Applies the endpoint remembered from the first turn, not the current one.
                Some(old) => {
                    request.runtime = old.runtime.clone();
                    request.mcp = old.mcp.clone();
                }
                None => *first = Some(request.clone()),
            }
        }
        let fork_parent = (request.session.mode == SessionMode::Fork)
            .then(|| request.session.state.clone())
            .flatten();
        let swap = |from: Permission, to: Permission| {
            let mut policy = request.permissions;
            for action in Action::ALL {
                if policy.get(action) == from {
                    policy = policy.with(action, to);
                }
            }
            policy
        };
        request.permissions = match self.breakage {
            Breakage::AsksWhenAllowed => swap(Permission::Allow, Permission::Ask),
            Breakage::RunsWhenDenied => swap(Permission::Deny, Permission::Allow),
            Breakage::IgnoresAsk => swap(Permission::Ask, Permission::Allow),
            _ => request.permissions,
        };
        let secret = request
            .runtime
            .secret_env
            .first()
            .map(|b| b.value().expose_secret().to_owned());
        let sink: Arc<dyn EventSink> = Arc::new(BrokenSink {
            inner: sink,
            breakage: self.breakage,
            secret,
        });
        if matches!(
            self.breakage,
            Breakage::RefusesFollowUps | Breakage::AcksWithoutDeclaring
        ) && let Some(mut follow_ups) = request.steering.take()
        {
            let follow_up = follow_ups.next_follow_up().await;
            if self.is(Breakage::RefusesFollowUps) {
                follow_up.refuse(driver_spi::SteerError::Refused);
            } else {
                follow_up.acknowledge(&*sink, &request.redactor());
            }
        }
        let mut response = self.inner.run(request, sink).await?;
        match self.breakage {
            Breakage::ValidCheckpointOnFailure => {
                response.exit = ExitStatus::Code(1);
                response.failure = Some(RunFailure::new(FailureKind::ModelProvider, "broken"));
            }
            Breakage::UnstorableCheckpoint => {
                if let Some(c) = &mut response.checkpoint {
                    c.state.resume_id = "bad\u{7}id".to_owned();
                }
            }
            Breakage::ForkKeepsParentId => {
                if let (Some(c), Some(parent)) = (&mut response.checkpoint, fork_parent) {
                    c.state.resume_id = parent.resume_id;
                }
            }
            _ => {}
        }
        Ok(response)
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        match self.breakage {
            Breakage::ResumeWithoutCodec | Breakage::ForkWithoutResume => None,
            _ => Some(&self.codec),
        }
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        match self.breakage {
            Breakage::ForkWithoutResume => None,
            _ => Some(self),
        }
    }

    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        match self.breakage {
            Breakage::PersistentWithoutLifecycle => None,
            _ => Some(self),
        }
    }
}

impl ConfigFingerprinter for Broken {
    fn config_fingerprint(&self) -> Fingerprint {
        if self.is(Breakage::UnstableConfigFingerprint) {
            let n = self.calls.fetch_add(1, Ordering::Relaxed);
            return crate::fp(&format!("config-{n}"));
        }
        self.inner
            .config_fingerprinter()
            .unwrap()
            .config_fingerprint()
    }
}

#[driver_spi::async_trait]
impl ProcessLifecycle for Broken {
    async fn close_processes(&self) -> Result<(), DriverError> {
        match self.breakage {
            Breakage::CloseLeavesProcesses => Ok(()),
            Breakage::SecondCloseFails if self.calls.fetch_add(1, Ordering::Relaxed) > 0 => {
                Err(DriverError::Cancelled)
            }
            _ => {
                self.inner
                    .process_lifecycle()
                    .unwrap()
                    .close_processes()
                    .await
            }
        }
    }
}

struct BrokenFactory {
    reference: ReferenceFactory,
    breakage: Breakage,
}

impl conformance::Factory for BrokenFactory {
    fn create(&self) -> Arc<dyn Driver> {
        let inner = ReferenceDriver::with_backend(self.reference.backend().clone());
        Arc::new(Broken::new(inner, self.breakage))
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        self.reference.observed_materialization()
    }

    fn live_processes(&self) -> Option<u64> {
        self.reference.live_processes()
    }

    fn script_tool_use(&self, arguments: &str) -> Option<Action> {
        self.reference.script_tool_use(arguments)
    }

    fn tools_run(&self) -> Option<usize> {
        self.reference.tools_run()
    }

    fn script_steered_turn(&self) -> Option<conformance::Release> {
        self.reference.script_steered_turn()
    }
}

fn run_kit(factory: &dyn conformance::Factory) -> Report {
    block_on(conformance::run(factory))
}

/// The clause fails, its id is in the report text and in the panic of `assert_passed`.
fn assert_fails_with(report: &Report, clause: Clause) {
    assert!(
        report.failed(clause),
        "{} should fail:\n{report}",
        clause.id()
    );
    let text = report.to_string();
    assert!(text.contains(&format!("FAIL {}", clause.id())), "{text}");
    let panic = catch_unwind(AssertUnwindSafe(|| report.assert_passed())).unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains(clause.id()), "{message}");
}

fn breaks(breakage: Breakage, clause: Clause) {
    let factory = BrokenFactory {
        reference: ReferenceFactory::new(),
        breakage,
    };
    assert_fails_with(&run_kit(&factory), clause);
}

macro_rules! broken {
    ($($name:ident: $breakage:ident => $clause:ident;)*) => {$(
        #[test]
        fn $name() {
            breaks(Breakage::$breakage, Clause::$clause);
        }
    )*};
}

broken! {
    dsc_01_empty_display_name: EmptyDisplayName => Dsc01;
    dsc_02_unstable_descriptor: UnstableDescriptor => Dsc02;
    cfg_01_rejected_config: RejectConfig => Cfg01;
    cap_01_resume_without_codec: ResumeWithoutCodec => Cap01;
    cap_02_unstable_config_fingerprint: UnstableConfigFingerprint => Cap02;
    cap_03_persistent_without_lifecycle: PersistentWithoutLifecycle => Cap03;
    cap_04_fork_without_resume: ForkWithoutResume => Cap04;
    ses_01_empty_codec_name: EmptyCodecName => Ses01;
    ses_02_codec_panics_on_none: CodecPanicsOnNone => Ses02;
    ses_03_lossy_codec: LossyCodec => Ses03;
    ses_04_unstable_guard: UnstableGuard => Ses04;
    ses_05_guard_ignores_values: GuardIgnoresValues => Ses05;
    evt_01_no_start: NoStart => Evt01;
    evt_02_two_terminals: TwoTerminals => Evt02;
    evt_03_event_after_terminal: EventAfterTerminal => Evt03;
    evt_04_result_without_start: ResultWithoutStart => Evt04;
    evt_05_failed_terminal_on_clean_run: FailedTerminalOnCleanRun => Evt05;
    rsp_01_valid_checkpoint_on_failure: ValidCheckpointOnFailure => Rsp01;
    rsp_02_unstorable_checkpoint: UnstorableCheckpoint => Rsp02;
    rsp_03_fork_keeps_parent_id: ForkKeepsParentId => Rsp03;
    cur_01_replays_first_endpoint: ReplaysFirstEndpoint => Cur01;
    prc_01_second_close_fails: SecondCloseFails => Prc01;
    prc_02_close_leaves_processes: CloseLeavesProcesses => Prc02;
    pol_01_asks_when_allowed: AsksWhenAllowed => Pol01;
    pol_02_runs_when_denied: RunsWhenDenied => Pol02;
    pol_03_asks_without_declaring: AsksWithoutDeclaring => Pol03;
    apr_01_ignores_ask: IgnoresAsk => Apr01;
    apr_02_ignores_ask: IgnoresAsk => Apr02;
    apr_03_ignores_ask: IgnoresAsk => Apr03;
    apr_04_ignores_ask: IgnoresAsk => Apr04;
    apr_05_ignores_ask: IgnoresAsk => Apr05;
    apr_06_ignores_ask: IgnoresAsk => Apr06;
    apr_07_leaks_approval_arguments: LeaksApprovalArguments => Apr07;
    cap_05_undeclared_prewarm: UndeclaredPrewarm => Cap05;
    prw_01_prewarm_does_nothing: PrewarmDoesNothing => Prw01;
    prw_02_prewarm_does_nothing: PrewarmDoesNothing => Prw02;
    str_01_refuses_follow_ups: RefusesFollowUps => Str01;
    str_01_acks_without_declaring: AcksWithoutDeclaring => Str01;
}

/// SES-06 through the reference driver's own fault: a guard from the exact fingerprint.
#[test]
fn ses_06_guard_from_exact_fingerprint() {
    let report = run_kit(&ReferenceFactory::new().with_fault(Fault::GuardFromExactFingerprint));
    assert_fails_with(&report, Clause::Ses06);
}

/// CUR-01 through the reference driver's own fault: a stale persistent process.
#[test]
fn cur_01_stale_persistent_process() {
    let report = run_kit(&ReferenceFactory::new().with_fault(Fault::ReuseStaleProcess));
    assert_fails_with(&report, Clause::Cur01);
}

#[test]
fn every_clause_has_a_breaking_test() {
    // The tests above cover these clauses; keep the list in step with `Clause::ALL`.
    let covered = [
        Clause::Dsc01,
        Clause::Dsc02,
        Clause::Cfg01,
        Clause::Cap01,
        Clause::Cap02,
        Clause::Cap03,
        Clause::Cap04,
        Clause::Cap05,
        Clause::Ses01,
        Clause::Ses02,
        Clause::Ses03,
        Clause::Ses04,
        Clause::Ses05,
        Clause::Ses06,
        Clause::Evt01,
        Clause::Evt02,
        Clause::Evt03,
        Clause::Evt04,
        Clause::Evt05,
        Clause::Rsp01,
        Clause::Rsp02,
        Clause::Rsp03,
        Clause::Cur01,
        Clause::Pol01,
        Clause::Pol02,
        Clause::Pol03,
        Clause::Apr01,
        Clause::Apr02,
        Clause::Apr03,
        Clause::Apr04,
        Clause::Apr05,
        Clause::Apr06,
        Clause::Apr07,
        Clause::Str01,
        Clause::Prc01,
        Clause::Prc02,
        Clause::Prw01,
        Clause::Prw02,
    ];
    assert_eq!(covered.as_slice(), Clause::ALL);
    let ids: std::collections::BTreeSet<&str> = Clause::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(ids.len(), Clause::ALL.len(), "clause ids are unique");
}

/// Without persistent processes the reference driver fails nothing, with PRC visibly skipped;
/// a factory without a materialization hook fails nothing, with CUR-01 visibly skipped, and
/// `assert_passed` refuses both.
#[test]
fn skips_are_visible_and_never_count_as_passed() {
    let report = run_kit(&ReferenceFactory::new().with_persistent_processes(false));
    assert!(report.failures().is_empty(), "{report}");
    assert!(!report.passed(), "a skip is not a pass");
    // The reference driver keeps no process to warm: PRW is skipped too.
    let no_prewarm = [Clause::Prw01, Clause::Prw02];
    assert_eq!(
        report.skipped(),
        [&[Clause::Prc01, Clause::Prc02][..], &no_prewarm].concat()
    );
    assert!(matches!(report.verdict(Clause::Prc01), Verdict::Skipped(_)));
    assert!(report.to_string().contains("SKIP PRC-01"));
    let panic = catch_unwind(AssertUnwindSafe(|| report.assert_passed()));
    assert!(panic.is_err());

    struct NoHooks(ReferenceFactory);
    impl conformance::Factory for NoHooks {
        fn create(&self) -> Arc<dyn Driver> {
            self.0.create()
        }
    }
    let report = run_kit(&NoHooks(ReferenceFactory::new()));
    assert!(report.failures().is_empty(), "{report}");
    let mut skipped = vec![Clause::Cur01];
    skipped.extend([
        Clause::Pol01,
        Clause::Pol02,
        Clause::Pol03,
        Clause::Apr01,
        Clause::Apr02,
        Clause::Apr03,
        Clause::Apr04,
        Clause::Apr05,
        Clause::Apr06,
        Clause::Apr07,
        Clause::Str01,
    ]);
    skipped.push(Clause::Prc02);
    skipped.extend(no_prewarm);
    assert_eq!(report.skipped(), skipped);
}

/// A stateless driver: resume clauses are skipped, the rest still apply.
#[test]
fn a_stateless_driver_is_judged_on_what_it_declares() {
    struct Stateless(ReferenceDriver);
    #[driver_spi::async_trait]
    impl Driver for Stateless {
        fn descriptor(&self) -> Descriptor {
            let mut d = self.0.descriptor();
            d.capabilities = d
                .capabilities
                .with_resume(false)
                .with_fork(false)
                .with_persistent_processes(false);
            d
        }
        fn validate_config(&self) -> Result<(), ConfigError> {
            self.0.validate_config()
        }
        async fn run(
            &self,
            request: Request,
            sink: Arc<dyn EventSink>,
        ) -> Result<Response, DriverError> {
            self.0.run(request, sink).await
        }
    }
    struct Factory(ReferenceFactory);
    impl conformance::Factory for Factory {
        fn create(&self) -> Arc<dyn Driver> {
            Arc::new(Stateless(ReferenceDriver::with_backend(
                self.0.backend().clone(),
            )))
        }
        fn observed_materialization(&self) -> Option<SecretString> {
            self.0.observed_materialization()
        }
    }
    let report = run_kit(&Factory(ReferenceFactory::new()));
    assert!(report.failures().is_empty(), "{report}");
    for clause in [Clause::Ses06, Clause::Rsp02, Clause::Rsp03, Clause::Prc01] {
        assert!(
            matches!(report.verdict(clause), Verdict::Skipped(_)),
            "{clause}: {report}"
        );
    }
    assert_eq!(report.verdict(Clause::Cur01), &Verdict::Passed);
    assert_eq!(report.subject(), "reference");
}
