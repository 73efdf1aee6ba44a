//! The driver-spi conformance kit over the Codex driver and the fake CLI (`cargo xtask
//! conformance` runs `conformance::codex_fake_cli` by exact name).

use std::sync::Arc;

use crate::support::{FakeCodex, codex_like};
use driver_spi::conformance::{self, Clause, Factory};
use driver_spi::{Driver, Request};
use secrecy::SecretString;

/// Drivers over one fake `codex`; the materialization the kit inspects is the last
/// invocation's argv plus the values of the kit's bearer variables in its environment.
struct CodexFactory {
    fake: FakeCodex,
}

impl Factory for CodexFactory {
    fn create(&self) -> Arc<dyn Driver> {
        Arc::new(self.fake.driver(self.fake.options()))
    }

    fn prepare(&self, request: Request) -> Request {
        request.with_workspace(self.fake.workspace.to_str().unwrap())
    }

    fn observed_materialization(&self) -> Option<SecretString> {
        let call = self.fake.invocations().pop()?;
        let env: Vec<String> = call.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Some(SecretString::from(format!(
            "argv: {}\nenv: {}",
            call.argv.join(" "),
            env.join(" ")
        )))
    }
}

/// Every clause passes. The accepted skips are the process-lifecycle clauses PRC-01 and
/// PRC-02, for a capability the driver does not claim (one `codex exec` process per turn);
/// any other skip fails, so `assert_passed` (which refuses every skip) is not used.
#[test]
fn codex_fake_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeCodex::new(codex_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let factory = CodexFactory { fake };
    let report = runtime.block_on(conformance::run(&factory));
    println!("{report}");
    assert!(report.failures().is_empty(), "{report}");
    assert_eq!(
        report.skipped(),
        [Clause::Prc01, Clause::Prc02],
        "only unclaimed clauses may be skipped"
    );
}
