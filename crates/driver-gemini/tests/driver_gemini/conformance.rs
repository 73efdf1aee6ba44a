//! The driver-spi conformance kit over the Gemini driver and the fake CLI (`cargo xtask
//! conformance` runs `gemini_fake_cli` by exact name).

use std::sync::Arc;

use crate::support::{FakeGemini, gemini_like};
use driver_spi::conformance::{self, Clause, Factory};
use driver_spi::{Driver, Request, SessionMode};
use secrecy::SecretString;

/// Drivers over one fake `gemini`; the materialization the kit inspects is the last
/// invocation's argv, every file under its `GEMINI_CLI_HOME` (the settings file) and the
/// values of the kit's bearer variables.
struct GeminiFactory {
    fake: FakeGemini,
}

impl Factory for GeminiFactory {
    fn create(&self) -> Arc<dyn Driver> {
        Arc::new(self.fake.driver(self.fake.options()))
    }

    /// Sets the workspace; before a fork, writes the recording of the parent session that the
    /// real CLI would have left (the fake records nothing).
    fn prepare(&self, request: Request) -> Request {
        if request.session.mode == SessionMode::Fork
            && let Some(state) = &request.session.state
            && driver_cli::is_uuid(&state.resume_id)
        {
            self.fake.record_session(&state.resume_id);
        }
        request.with_workspace(self.fake.workspace.to_str().unwrap())
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        let call = self.fake.invocations().pop()?;
        let env: Vec<String> = call.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let files: Vec<&str> = call.files.values().map(|f| f.contents.as_str()).collect();
        Some(SecretString::from(format!(
            "argv: {}\nfiles: {}\nenv: {}",
            call.argv.join(" "),
            files.join("\n"),
            env.join(" ")
        )))
    }
}

/// Every clause passes; the only skips are the process-lifecycle clauses, for a capability
/// the driver does not claim (one `gemini` process per turn).
#[test]
fn gemini_fake_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeGemini::new(gemini_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let report = runtime.block_on(conformance::run(&GeminiFactory { fake }));
    println!("{report}");
    assert!(report.failures().is_empty(), "{report}");
    assert_eq!(
        report.skipped(),
        [Clause::Prc01, Clause::Prc02],
        "only unclaimed clauses may be skipped"
    );
}
