//! The one conformance factory for every dialect over the scripted fake CLI
//! ([`FakeCliFactory`]), and what the real-binary and per-turn scenarios name with it.

/// The one conformance factory for any [`CliDriver`](driver_cli::CliDriver) over the scripted fake
/// CLI: drivers built from `options` with the fake as their binary, requests run in the
/// harness's workspace, and the materialization the kit inspects is the last invocation's
/// argv, its captured files and the recorded values of the kit's bearer variables.
#[derive(Debug)]
pub struct FakeCliFactory<D> {
    harness: fake_cli::Harness,
    options: D,
    before_run: fn(&fake_cli::Harness, &driver_spi::Request),
    tool_use: Option<ToolUse>,
    /// A tool use scripted for the next run: its prompt is rewritten to [`TOOL_USE_PROMPT`].
    scripted: std::sync::atomic::AtomicBool,
    /// With [`with_wire_materialization`](FakeCliFactory::with_wire_materialization): the
    /// served record, and how many lines it held when the last run was prepared.
    wire: Option<(std::path::PathBuf, std::sync::atomic::AtomicUsize)>,
    /// With [`with_steering`](FakeCliFactory::with_steering): whether the kit may hold a
    /// turn, and whether the next run is that turn (its prompt is [`STEER_PROMPT`]).
    steering: bool,
    steered: std::sync::atomic::AtomicBool,
}

/// The process mode a real-binary scenario asks for: resident (default pool limits) or one
/// process per turn.
pub fn process_mode(resident: bool) -> driver_cli::ProcessMode {
    if resident {
        driver_cli::ProcessMode::Resident(driver_process::pool::PoolLimits::default())
    } else {
        driver_cli::ProcessMode::PerTurn
    }
}

/// The permission-policy and approval clauses (POL, APR) the kit skips for a factory that
/// scripts no tool use (a per-turn fake, which cannot model its CLI's permission flags), to
/// name as accepted skips: all of them for a driver that declares approvals; POL-03 (a policy
/// that asks is refused) still runs for one that does not.
pub fn unscripted_policy_clauses(approvals: bool) -> Vec<driver_spi::conformance::Clause> {
    use driver_spi::conformance::Clause::*;
    let mut clauses = vec![Pol01, Pol02];
    if approvals {
        clauses.push(Pol03);
    }
    clauses.extend([Apr01, Apr02, Apr03, Apr04, Apr05, Apr06, Apr07]);
    clauses
}

/// The prompt a [`FakeCliFactory`] gives a run the kit scripted a tool use for (see
/// [`FakeCliFactory::with_tool_use`]): the fake's line rules match it.
pub const TOOL_USE_PROMPT: &str = "KIT-TOOL-USE";

/// The prompt a [`FakeCliFactory`] gives the run the kit holds open for a follow-up (see
/// [`FakeCliFactory::with_steering`]): the fake's line rules start a turn that ends only when
/// the follow-up ([`STEER_TEXT`](driver_spi::conformance::STEER_TEXT)) arrives.
pub const STEER_PROMPT: &str = "KIT-STEERED-TURN";

/// How a fake serves the kit's tool uses.
#[derive(Debug)]
struct ToolUse {
    action: driver_spi::Action,
    served: std::path::PathBuf,
    allowed: &'static str,
}

impl<D: driver_cli::CommonOptions + Clone> driver_spi::conformance::Factory for FakeCliFactory<D> {
    fn create(&self) -> std::sync::Arc<dyn driver_spi::Driver> {
        let options = self.options.clone().with_binary(fake_cli::binary_path());
        std::sync::Arc::new(driver_cli::CliDriver::<D::Dialect>::new(
            self.harness.env.clone(),
            options,
        ))
    }

    fn prepare(&self, mut request: driver_spi::Request) -> driver_spi::Request {
        (self.before_run)(&self.harness, &request);
        if self
            .scripted
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            request.prompt = TOOL_USE_PROMPT.to_owned();
        }
        if self
            .steered
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            request.prompt = STEER_PROMPT.to_owned();
        }
        if let Some((served, from)) = &self.wire {
            let sent = fake_cli::read_served_lines(served).map_or(0, |l| l.len());
            from.store(sent, std::sync::atomic::Ordering::SeqCst);
        }
        request.with_workspace(self.harness.workspace.to_string_lossy())
    }

    /// With [`with_tool_use`](FakeCliFactory::with_tool_use): the next run's prompt becomes
    /// [`TOOL_USE_PROMPT`], which the fake's line rules answer with a tool use of
    /// [`TOOL_ARGUMENTS`](driver_spi::conformance::TOOL_ARGUMENTS).
    fn script_tool_use(&self, _arguments: &str) -> Option<driver_spi::Action> {
        let tool_use = self.tool_use.as_ref()?;
        self.scripted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Some(tool_use.action)
    }

    /// With [`with_steering`](FakeCliFactory::with_steering): the next run's prompt becomes
    /// [`STEER_PROMPT`], whose turn the fake ends on the follow-up itself (nothing to
    /// release).
    fn script_steered_turn(&self) -> Option<driver_spi::conformance::Release> {
        if !self.steering {
            return None;
        }
        self.steered
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Some(std::sync::Arc::new(|| {}))
    }

    /// The answers that let the fake's tool run: lines sent to the fakes that contain the
    /// factory's `allowed` marker.
    fn tools_run(&self) -> Option<usize> {
        let tool_use = self.tool_use.as_ref()?;
        let lines = fake_cli::read_served_lines(&tool_use.served).ok()?;
        Some(
            lines
                .iter()
                .filter(|l| l.contains(tool_use.allowed))
                .count(),
        )
    }

    /// In resident mode, how many fake processes the drivers started are still running (read
    /// from `/proc`, not from the pool); `None` with one process per turn.
    fn live_processes(&self) -> Option<u64> {
        let driver_cli::ProcessMode::Resident(_) = self.options.cli().process_mode else {
            return None;
        };
        let live = self
            .harness
            .invocations()
            .iter()
            .filter(|call| fake_cli::is_running(call.pid))
            .count();
        Some(live as u64)
    }

    fn observed_materialization(&self) -> Option<secrecy::SecretString> {
        let call = self.harness.invocations().pop()?;
        let env: Vec<String> = call.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let files: Vec<&str> = call.files.values().map(|f| f.contents.as_str()).collect();
        let wire = self
            .wire
            .as_ref()
            .map_or_else(String::new, |(served, from)| {
                let lines = fake_cli::read_served_lines(served).unwrap_or_default();
                let from = from
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .min(lines.len());
                lines[from..].join("\n")
            });
        Some(secrecy::SecretString::from(format!(
            "argv: {}\nfiles: {}\nenv: {}\nwire: {}",
            call.argv.join(" "),
            files.join("\n"),
            env.join(" "),
            wire
        )))
    }
}

impl<D: driver_cli::CommonOptions + Clone> FakeCliFactory<D> {
    /// A factory of drivers built from `options` over the fake of `harness`.
    pub fn new(harness: fake_cli::Harness, options: D) -> Self {
        Self {
            harness,
            options,
            before_run: |_, _| {},
            tool_use: None,
            scripted: std::sync::atomic::AtomicBool::new(false),
            wire: None,
            steering: false,
            steered: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Lets the kit hold a turn open for a follow-up (STR-01, for a driver that declares
    /// steering): the run it asks one of gets the prompt [`STEER_PROMPT`], which the fake's
    /// line rules must answer with a turn that ends when the follow-up arrives.
    pub fn with_steering(mut self) -> Self {
        self.steering = true;
        self
    }

    /// Shows the kit, as what a run materialized, also the lines the fakes were sent during
    /// the run (recorded in `served`, [`Scenario::serve_record`](fake_cli::Scenario::serve_record)):
    /// for a protocol whose MCP servers and their secrets travel in a message (ACP's
    /// `session/new`), not in the argv, a file or the environment.
    pub fn with_wire_materialization(mut self, served: impl Into<std::path::PathBuf>) -> Self {
        self.wire = Some((served.into(), std::sync::atomic::AtomicUsize::new(0)));
        self
    }

    /// Lets the kit script tool uses (the POL and APR clauses): a run the kit scripts one for
    /// gets the prompt [`TOOL_USE_PROMPT`], which the fake's line rules answer with a permission
    /// request of the CLI for a tool taking `action`; the fake records every line it is sent in
    /// `served` ([`Scenario::serve_record`](fake_cli::Scenario::serve_record)), and a line
    /// containing `allowed` is an answer that lets the tool run.
    pub fn with_tool_use(
        mut self,
        action: driver_spi::Action,
        served: impl Into<std::path::PathBuf>,
        allowed: &'static str,
    ) -> Self {
        self.tool_use = Some(ToolUse {
            action,
            served: served.into(),
            allowed,
        });
        self
    }

    /// A factory of drivers in resident mode ([`ProcessMode::Resident`](driver_cli::ProcessMode),
    /// default pool limits), whose process clauses the kit then exercises for real.
    pub fn resident(harness: fake_cli::Harness, options: D) -> Self {
        let resident =
            driver_cli::ProcessMode::Resident(driver_process::pool::PoolLimits::default());
        Self::new(harness, options.with_process_mode(resident))
    }

    /// Runs the kit, prints its report, and asserts that every clause passed.
    ///
    /// # Panics
    /// When a clause did not pass: this is the test.
    pub fn assert_kit_passes(&self) {
        let report = self.run_kit();
        println!("{report}");
        report.assert_passed();
    }

    /// Runs `before_run` on every request the kit is about to run, for state the real CLI
    /// would have left that the fake does not (Gemini's recording of a forked session).
    pub fn with_before_run(
        mut self,
        before_run: fn(&fake_cli::Harness, &driver_spi::Request),
    ) -> Self {
        self.before_run = before_run;
        self
    }

    /// Runs the driver kit on a two-worker runtime of its own and returns its report.
    ///
    /// # Panics
    /// When the runtime cannot be built: this is test support.
    pub fn run_kit(&self) -> driver_spi::conformance::Report {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a test runtime");
        runtime.block_on(driver_spi::conformance::run(self))
    }
}
