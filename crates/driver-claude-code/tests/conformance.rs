//! The driver-spi conformance kit over the Claude Code driver and the fake CLI (`cargo xtask
//! conformance` runs `claude_code_fake_cli` by exact name).

#![allow(clippy::unwrap_used, reason = "tests")]

mod support;

use std::sync::Arc;

use driver_spi::conformance::{self, Clause, Factory};
use driver_spi::{Driver, Request};
use secrecy::SecretString;
use support::{FakeClaude, claude_like};

/// Drivers over one fake `claude`; the materialization the kit inspects is the last
/// invocation's argv, its MCP file and the values of the kit's bearer variables.
struct ClaudeFactory {
    fake: FakeClaude,
}

impl Factory for ClaudeFactory {
    fn create(&self) -> Arc<dyn Driver> {
        Arc::new(self.fake.driver(self.fake.options()))
    }

    fn prepare(&self, request: Request) -> Request {
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
/// the driver does not claim (one `claude` process per turn).
#[test]
fn claude_code_fake_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeClaude::new(claude_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let report = runtime.block_on(conformance::run(&ClaudeFactory { fake }));
    println!("{report}");
    assert!(report.failures().is_empty(), "{report}");
    assert_eq!(
        report.skipped(),
        [Clause::Prc01, Clause::Prc02],
        "only unclaimed clauses may be skipped"
    );
}
