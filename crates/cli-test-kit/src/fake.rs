//! One typed fake CLI for every dialect's tests: the scripted fake over the dialect's own
//! runtime descriptor, with that dialect's options and drivers pointed at the fake binary.

use std::marker::PhantomData;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_spi::{CollectingSink, Driver, DriverEvent, FailureKind, Request};
use fake_cli::{Harness, Invocation, Scenario};
use secrecy::SecretString;

use driver_cli::{CliDriver, CommonOptions, Dialect};
use driver_process::error::ProcessError;

/// A namespace and a scripted fake of the CLI that options `O` drive: a [`Harness`] over the
/// dialect's [`runtime`](Dialect::runtime) descriptor, whose drivers and options run the fake
/// binary. Derefs to the harness (its environment, workspace and recorded invocations).
/// (`ignore`d: the scenario and options are a driver crate's, and a doc test cannot find the
/// fake's binary, which `fake_cli::binary_path` locates from a test executable's directory.)
///
/// ```ignore
/// let fake = FakeCli::<CodexOptions>::new(codex_like(), "0.169.0", &[], &["OPENAI_API_KEY"]);
/// let driver = fake.driver(fake.options().with_model("m"));
/// ```
pub struct FakeCli<O> {
    harness: Harness,
    options: PhantomData<fn() -> O>,
}

impl<O: CommonOptions + Default> FakeCli<O> {
    /// A fake that answers `--version` with `version`, follows `scenario` and records the
    /// values of `record_env` with each invocation. The host environment carries each of
    /// `host_credentials` (with a canary value a child must never see).
    pub fn new(
        scenario: Scenario,
        version: &str,
        record_env: &[&str],
        host_credentials: &[&str],
    ) -> Self {
        Self::with_secrets(scenario, version, record_env, host_credentials, &[])
    }

    /// A fake like [`new`](Self::new) whose namespace also injects `secrets` (name, value)
    /// into the CLI's environment, as a host injects a model key
    /// ([`canary_secret`](crate::canary_secret) for the canary check).
    pub fn with_secrets(
        scenario: Scenario,
        version: &str,
        record_env: &[&str],
        host_credentials: &[&str],
        secrets: &[(&str, SecretString)],
    ) -> Self {
        Self {
            harness: Harness::with_secrets(
                &O::Dialect::from(O::default()).runtime().descriptor,
                scenario,
                version,
                record_env,
                host_credentials,
                secrets,
            ),
            options: PhantomData,
        }
    }

    /// Default options pointing at the fake binary.
    pub fn options(&self) -> O {
        O::default().with_binary(fake_cli::binary_path())
    }

    /// A driver with `options`, whose binary is replaced by the fake's.
    pub fn driver(&self, options: O) -> CliDriver<O::Dialect> {
        CliDriver::new(
            self.harness.env.clone(),
            options.with_binary(fake_cli::binary_path()),
        )
    }

    /// A driver with `options` whose binary does not exist.
    pub fn driver_without_binary(&self, options: O) -> CliDriver<O::Dialect> {
        CliDriver::new(
            self.harness.env.clone(),
            options.with_binary(self.harness.path().join("no-such-cli")),
        )
    }

    /// The runtime's state directory in the namespace (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, …).
    ///
    /// # Panics
    /// If the harness's environment keeps no state directory for the runtime.
    #[allow(clippy::expect_used, reason = "a test kit: a harness always has one")]
    pub fn state_dir(&self) -> PathBuf {
        self.harness
            .env
            .state_dir(&O::Dialect::from(O::default()).runtime().descriptor)
            .expect("the harness serves this runtime")
            .to_owned()
    }

    /// Cancels a turn: runs `request` on `driver` until the fake's grandchild wrote
    /// `pid_file` (a scenario rule ending `.spawn_grandchild(pid_file).hang()`), drops the
    /// run, and asserts that the CLI process and its grandchild both ended. Returns the
    /// cancelled turn's invocation and the events it emitted, for the dialect's own checks
    /// (its per-run file removed, its namespace files put back).
    ///
    /// # Panics
    /// When the run ends by itself, the grandchild does not start within 30 s, or a process
    /// outlives the cancelled run.
    pub async fn cancel_mid_turn(
        &self,
        driver: &CliDriver<O::Dialect>,
        request: Request,
        pid_file: &Path,
    ) -> (Invocation, Vec<DriverEvent>) {
        let sink = Arc::new(CollectingSink::new());
        // Boxed so that `drop` below really drops the future (a pinned reference would not).
        let mut running = Box::pin(driver.run(request, sink.clone()));
        fake_cli::run_until_pid_file(&mut running, pid_file).await;
        drop(running);
        let call = self.harness.last();
        assert!(
            fake_cli::processes_ended(call.pid, pid_file).await,
            "a process outlived the cancelled run"
        );
        (call, sink.take())
    }

    /// Asserts that a driver of `options` whose binary does not exist fails typed:
    /// `check_version` is [`ProcessError::NotFound`], and a run of `request` fails as
    /// [`FailureKind::Process`] before any event, with an error whose `Display` names the
    /// binary's path and says it is not found (issue 40). Returns the driver, for the
    /// dialect's own checks.
    ///
    /// # Panics
    /// When the driver fails otherwise.
    pub async fn assert_missing_binary_fails(
        &self,
        options: O,
        request: Request,
    ) -> CliDriver<O::Dialect> {
        let driver = self.driver_without_binary(options);
        let probed = driver.check_version().await;
        assert!(
            matches!(probed, Err(ProcessError::NotFound { .. })),
            "check_version: {probed:?}"
        );
        let sink = Arc::new(CollectingSink::new());
        let result = driver.run(request, sink.clone()).await;
        assert_eq!(
            crate::failed_kind(&result),
            Some(FailureKind::Process),
            "{result:?}"
        );
        let shown = result
            .as_ref()
            .map_or_else(ToString::to_string, |r| format!("{r:?}"));
        let binary = self.harness.path().join("no-such-cli");
        let expected = format!("`{}` not found", binary.display());
        assert!(shown.contains(&expected), "{shown}");
        assert_eq!(sink.take(), []);
        driver
    }

    /// The harness, for the conformance factory
    /// ([`FakeCliFactory::new`](crate::FakeCliFactory::new)).
    pub fn into_harness(self) -> Harness {
        self.harness
    }
}

impl<O> Deref for FakeCli<O> {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.harness
    }
}

impl<O> std::fmt::Debug for FakeCli<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCli")
            .field("harness", &self.harness)
            .finish()
    }
}
