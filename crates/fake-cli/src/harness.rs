//! A test harness around the fake: a temporary directory, a credential namespace whose child
//! environment points the fake at its scenario, and the record of the fake's invocations.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use runtime_env::{HostEnv, RuntimeDescriptor, RuntimeEnv};
use secrecy::SecretString;
use tempfile::TempDir;

use crate::{Invocation, SCENARIO_ENV, Scenario, read_invocations};

/// The value of every host credential variable a [`Harness`] puts in the host environment; a
/// child must never see it.
pub const HOST_CREDENTIAL: &str = "host-credential-canary-73d1";

/// A temporary directory with a namespace (`<dir>/rt`, `user:fake`) that serves one runtime, a
/// workspace
/// (`<dir>/workspace`) and a fake CLI scenario whose invocations are recorded.
///
/// The host environment it builds the namespace from holds `PATH` and, set to
/// [`HOST_CREDENTIAL`], the credential variables the test names: the runtime environment must
/// keep them from the child, and a test checks that it did.
#[derive(Debug)]
pub struct Harness {
    /// The temporary directory; removed when the harness drops.
    pub dir: TempDir,
    /// The file the fake appends its invocations to.
    pub record: PathBuf,
    /// The scenario file, which the namespace names to the fake in [`SCENARIO_ENV`] (a plain
    /// variable of its environment): what a test that builds its own environment for the
    /// fake (a worker's) names too.
    pub scenario: PathBuf,
    /// The namespace; its child environment names the scenario file.
    pub env: Arc<RuntimeEnv>,
    /// The workspace directory (exists).
    pub workspace: PathBuf,
}

impl Harness {
    /// A harness for `runtime` (the namespace serves it: its state directory and variable)
    /// and `scenario`, whose `--version` answer becomes `version` and whose invocations record
    /// the values of `record_env`.
    ///
    /// # Panics
    /// When the temporary directory, the scenario file or the namespace cannot be made: this
    /// is test support.
    pub fn new(
        runtime: &'static RuntimeDescriptor,
        scenario: Scenario,
        version: &str,
        record_env: &[&str],
        host_credentials: &[&str],
    ) -> Self {
        Self::with_secrets(
            runtime,
            scenario,
            version,
            record_env,
            host_credentials,
            &[],
        )
    }

    /// A harness like [`new`](Self::new) whose namespace also injects `secrets` (name, value)
    /// into the child's environment, as a host injects a model key
    /// ([`RuntimeEnvBuilder::secret`](runtime_env::RuntimeEnvBuilder::secret)).
    ///
    /// # Panics
    /// As [`new`](Self::new), and when a secret's name is refused by the namespace.
    pub fn with_secrets(
        runtime: &'static RuntimeDescriptor,
        scenario: Scenario,
        version: &str,
        record_env: &[&str],
        host_credentials: &[&str],
        secrets: &[(&str, SecretString)],
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let record = dir.path().join("invocations.jsonl");
        let scenario_path = dir.path().join("scenario.json");
        scenario
            .version(version)
            .record(&record)
            .record_env_values(record_env.iter().copied())
            .write_to(&scenario_path)
            .expect("scenario written");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir(&workspace).expect("workspace");
        let mut host = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        host.extend(
            host_credentials
                .iter()
                .map(|name| ((*name).to_owned(), HOST_CREDENTIAL.to_owned())),
        );
        let mut builder = RuntimeEnv::builder(
            dir.path().join("rt"),
            "user:fake".parse().expect("namespace"),
            &workspace,
        )
        .host_env(HostEnv::from_vars(host))
        .runtimes([runtime])
        .var(SCENARIO_ENV, scenario_path.as_os_str());
        for (name, value) in secrets {
            builder = builder.secret(*name, value.clone());
        }
        let env = builder.build().expect("runtime env");
        Self {
            dir,
            record,
            scenario: scenario_path,
            env: Arc::new(env),
            workspace,
        }
    }

    /// Every invocation but the version probes, oldest first.
    ///
    /// # Panics
    /// When the record cannot be read.
    pub fn invocations(&self) -> Vec<Invocation> {
        read_invocations(&self.record)
            .expect("record readable")
            .into_iter()
            .filter(|i| i.argv != ["--version"])
            .collect()
    }

    /// The last invocation.
    ///
    /// # Panics
    /// When the fake was not invoked.
    pub fn last(&self) -> Invocation {
        self.invocations().pop().expect("the fake was invoked")
    }

    /// The temporary directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
