//! The driver kit on the worker driver wrapping each CLI driver, over the scripted fake CLI:
//! the configuration of the in-process kit (`cli_test_kit::FakeCliFactory` over each driver
//! crate's own fake, compiled here: [`cli_fakes`](crate::cli_fakes)), built inside the worker
//! from a `DriverConfig::Registry` whose binary is the fake, in per-turn and (where the CLI
//! has one) resident mode. `cargo xtask conformance` runs each test by exact name.
//!
//! The fake finds its scenario as it does in process: through a plain variable of the
//! namespace's environment, which crosses as `WireEnv::vars` and which the worker sets on the
//! environment it builds; nothing else of the host's reaches it beyond the allow-list.
//!
//! What the kit observes from inside the provider is where the fake records it, in the harness
//! on this machine, and read as in process: the last invocation (CUR-01), the lines the
//! resident fakes were sent (the tools that ran), `/proc` for the fakes still running, plus the
//! workers still running. The scripted tool use is the in-process factory's own prompt,
//! rewritten on the host before the request crosses.
//!
//! The accepted skips are those of the in-process run of the same configuration, less the
//! process clauses (PRC-01, PRC-02): a worker is a process kept between runs, which the worker
//! driver declares and closes, so they run through a worker for every driver. Pre-warm
//! (PRW-01, PRW-02) and steering (STR-01) run through the worker wherever the wrapped driver
//! declares them (the resident modes), as in process; the per-turn modes skip PRW as in
//! process.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use cli_test_kit::{FakeCli, FakeCliFactory, unscripted_policy_clauses};
use driver_cli::{CommonOptions, Dialect, ProcessMode};
use driver_process::pool::PoolLimits;
use driver_spi::conformance::{self, Clause, Factory, Report};
use driver_spi::{Action, Driver, Request, SessionMode};
use fake_cli::{Harness, SCENARIO_ENV};
use runtime_env::RuntimeEnv;
use secrecy::SecretString;
use worker::{WorkerDriver, Workers};
use worker_protocol::{DriverConfig, WireEnv};

use crate::cli_fakes;

/// The bearer variables the kit's turns use, whose values the fakes record (CUR-01).
const KIT_TOKENS: &[&str] = &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"];

/// The in-process kit's factory, but every driver is a [`WorkerDriver`] of the same
/// configuration on one pool of workers.
struct ThroughWorker<D> {
    kit: FakeCliFactory<D>,
    env: Arc<RuntimeEnv>,
    config: DriverConfig,
    workers: Arc<Workers>,
    record: PathBuf,
}

impl<D: CommonOptions + Clone> Factory for ThroughWorker<D> {
    fn create(&self) -> Arc<dyn Driver> {
        let driver = WorkerDriver::new(
            Arc::clone(&self.workers),
            Arc::clone(&self.env),
            self.config.clone(),
        );
        Arc::new(driver.expect("a worker driver of the fake's configuration"))
    }

    fn prepare(&self, request: Request) -> Request {
        self.kit.prepare(request)
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        self.kit.observed_materialization()
    }

    /// The workers, and the fake processes (started by the workers' drivers) still running.
    fn live_processes(&self) -> Option<u64> {
        let fakes = fake_cli::read_invocations(&self.record)
            .ok()?
            .iter()
            .filter(|call| call.argv != ["--version"] && fake_cli::is_running(call.pid))
            .count();
        u64::try_from(self.workers.live() + fakes).ok()
    }

    fn script_tool_use(&self, arguments: &str) -> Option<Action> {
        self.kit.script_tool_use(arguments)
    }

    fn tools_run(&self) -> Option<usize> {
        self.kit.tools_run()
    }

    fn script_steered_turn(&self) -> Option<conformance::Release> {
        self.kit.script_steered_turn()
    }
}

/// The registry configuration of `options` in the harness's environment: the fake as binary,
/// the options' model and process mode, and the namespace's variable naming the fake's
/// scenario.
pub(crate) fn registry_config<D: CommonOptions>(harness: &Harness, options: &D) -> DriverConfig {
    let env = &harness.env;
    assert!(env.child_env().contains(SCENARIO_ENV));
    let scenario = harness.scenario.to_str().expect("a UTF-8 path");
    let resident = match options.cli().process_mode {
        ProcessMode::PerTurn => false,
        ProcessMode::Resident(limits) => {
            assert_eq!(
                limits,
                PoolLimits::default(),
                "the worker's resident limits"
            );
            true
        }
        other => panic!("a process mode the registry configuration cannot name: {other:?}"),
    };
    DriverConfig::Registry {
        env: WireEnv {
            base_dir: env.base_dir().to_path_buf(),
            namespace: env.namespace().as_str().to_owned(),
            cwd: env.cwd().to_path_buf(),
            vars: BTreeMap::from([(SCENARIO_ENV.to_owned(), scenario.to_owned())]),
        },
        runtime: D::Dialect::from(options.clone()).runtime().name.to_owned(),
        binary: Some(options.binary().to_path_buf()),
        model: options.model().map(str::to_owned),
        base_url: None,
        key: None,
        resident,
    }
}

/// Runs the kit through a worker on `fake`, with its default options in the process mode
/// `resident` says; `kit` makes the in-process factory of the same harness and options.
async fn kit_through_worker<D: CommonOptions + Clone + Default>(
    fake: FakeCli<D>,
    resident: bool,
    kit: impl FnOnce(Harness, D) -> FakeCliFactory<D>,
) -> Report {
    let options = fake
        .options()
        .with_process_mode(cli_test_kit::process_mode(resident));
    let harness = fake.into_harness();
    let env = Arc::clone(&harness.env);
    let record = harness.record.clone();
    let config = registry_config(&harness, &options);
    let factory = ThroughWorker {
        kit: kit(harness, options),
        env,
        config,
        workers: crate::support::workers(),
        record,
    };
    let report = conformance::run(&factory).await;
    println!("{report}");
    assert!(
        !fake_cli::read_invocations(&factory.record)
            .expect("the record")
            .is_empty(),
        "the fake ran, in the worker"
    );
    factory.workers.close().await;
    report
}

/// The in-process per-turn skips, less PRC-01 and PRC-02 (see the module doc).
fn per_turn_skips(approvals: bool) -> Vec<Clause> {
    [unscripted_policy_clauses(approvals), NO_PREWARM.to_vec()].concat()
}

/// A per-turn driver declares no pre-warm, in process or through a worker: CAP-05 judges its
/// refusal.
const NO_PREWARM: [Clause; 2] = [Clause::Prw01, Clause::Prw02];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_a_worker() {
    let fake = cli_fakes::codex::fake_codex(cli_fakes::codex::codex_like(), KIT_TOKENS);
    let report = kit_through_worker(fake, false, FakeCliFactory::new).await;
    report.assert_passed_except(&per_turn_skips(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_app_server_through_a_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served.jsonl");
    let scenario = cli_fakes::codex_app_server::app_server().serve_record(&served);
    let fake = cli_fakes::codex::fake_codex(scenario, KIT_TOKENS);
    let report = kit_through_worker(fake, true, |harness, options| {
        FakeCliFactory::resident(harness, options)
            .with_tool_use(
                Action::Write,
                &served,
                cli_fakes::codex_app_server::ACCEPTED,
            )
            .with_steering()
    })
    .await;
    report.assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_a_worker() {
    let fake =
        cli_fakes::claude_code::fake_claude(cli_fakes::claude_code::claude_like(), KIT_TOKENS);
    let report = kit_through_worker(fake, false, FakeCliFactory::new).await;
    report.assert_passed_except(&per_turn_skips(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_resident_through_a_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served.jsonl");
    let scenario = cli_test_kit::stream_json::resident_kit(&served);
    let fake = cli_fakes::claude_code::fake_claude(scenario, KIT_TOKENS);
    let report = kit_through_worker(fake, true, |harness, options| {
        cli_test_kit::stream_json::resident_factory(harness, options, &served)
    })
    .await;
    report.assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codebuddy_through_a_worker() {
    let fake =
        cli_fakes::codebuddy::fake_codebuddy(cli_fakes::codebuddy::codebuddy_like(), KIT_TOKENS);
    let report = kit_through_worker(fake, false, FakeCliFactory::new).await;
    report.assert_passed_except(&per_turn_skips(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codebuddy_resident_through_a_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served.jsonl");
    let scenario = cli_test_kit::stream_json::resident_kit(&served);
    let fake = cli_fakes::codebuddy::fake_codebuddy(scenario, KIT_TOKENS);
    let report = kit_through_worker(fake, true, |harness, options| {
        cli_test_kit::stream_json::resident_factory(harness, options, &served)
    })
    .await;
    report.assert_passed();
}

/// Before a fork, writes the recording of the parent session that the real CLI would have
/// left (the fake records nothing), as the in-process Gemini kit does.
fn record_fork_parent(harness: &Harness, request: &Request) {
    if request.session.mode == SessionMode::Fork
        && let Some(state) = &request.session.state
        && driver_cli::is_uuid(&state.resume_id)
    {
        cli_fakes::gemini::record_session(harness, &state.resume_id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_through_a_worker() {
    let fake = cli_fakes::gemini::fake_gemini(cli_fakes::gemini::gemini_like(), KIT_TOKENS);
    let report = kit_through_worker(fake, false, |harness, options| {
        FakeCliFactory::new(harness, options).with_before_run(record_fork_parent)
    })
    .await;
    // Gemini cannot ask the host: POL-03 runs.
    report.assert_passed_except(&per_turn_skips(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_through_a_worker() {
    let fake = cli_fakes::cursor::fake_cursor(cli_fakes::cursor::cursor_like(), KIT_TOKENS);
    let report = kit_through_worker(fake, false, FakeCliFactory::new).await;
    // Cursor has no fork (RSP-03) and cannot ask the host: POL-03 runs.
    let accepted = [&[Clause::Rsp03][..], &per_turn_skips(false)].concat();
    report.assert_passed_except(&accepted);
}
