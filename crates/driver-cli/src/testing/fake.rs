//! One typed fake CLI for every dialect's tests: the scripted fake over the dialect's own
//! runtime descriptor, with that dialect's options and drivers pointed at the fake binary.

use std::marker::PhantomData;
use std::ops::Deref;
use std::path::PathBuf;

use fake_cli::{Harness, Scenario};

use crate::{CliDriver, CommonOptions, Dialect};

/// A namespace and a scripted fake of the CLI that options `O` drive: a [`Harness`] over the
/// dialect's [`RUNTIME`](Dialect::RUNTIME) descriptor, whose drivers and options run the fake
/// binary. Derefs to the harness (its environment, workspace and recorded invocations).
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
        Self {
            harness: Harness::new(
                &O::Dialect::RUNTIME.descriptor,
                scenario,
                version,
                record_env,
                host_credentials,
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
            .state_dir(&O::Dialect::RUNTIME.descriptor)
            .expect("the harness serves this runtime")
            .to_owned()
    }

    /// The harness, for the conformance factory
    /// ([`FakeCliFactory::new`](super::FakeCliFactory::new)).
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
