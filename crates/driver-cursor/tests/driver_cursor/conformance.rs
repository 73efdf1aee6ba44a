//! The driver-spi conformance kit over the Cursor driver and the fake CLI (`cargo xtask
//! conformance` runs `cursor_fake_cli` by exact name). The Cursor CLI cannot be installed
//! here, so this is the driver's only end-to-end check.

use std::sync::Arc;

use crate::support::{FakeCursor, cursor_like};
use driver_spi::conformance::{self, Clause, Factory};
use driver_spi::{Driver, Request};
use secrecy::SecretString;

/// Drivers over one fake `cursor-agent`; the materialization the kit inspects is the last
/// invocation's argv, the files of its `CURSOR_CONFIG_DIR` (`mcp.json`) and the values of the
/// kit's bearer variables.
struct CursorFactory {
    fake: FakeCursor,
}

impl Factory for CursorFactory {
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

/// Every clause passes. The only skips are for capabilities the driver does not claim: fork
/// (Cursor has none, RSP-03) and the process lifecycle (one process per turn, PRC-01/02).
#[test]
fn cursor_fake_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = FakeCursor::new(cursor_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let report = runtime.block_on(conformance::run(&CursorFactory { fake }));
    println!("{report}");
    assert!(report.failures().is_empty(), "{report}");
    assert_eq!(
        report.skipped(),
        [Clause::Rsp03, Clause::Prc01, Clause::Prc02],
        "only unclaimed clauses may be skipped"
    );
}
