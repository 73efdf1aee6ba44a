//! The driver-spi conformance kit over the Codex driver and the fake CLI (`cargo xtask
//! conformance` runs `conformance::codex_fake_cli` by exact name).

use driver_cli::testing::FakeCliFactory;
use driver_spi::conformance::Clause;

use crate::support::{FakeCodex, codex_like};

/// Every clause passes. The only skips are the process-lifecycle clauses (PRC-01, PRC-02),
/// for a capability the driver does not claim: one `codex exec` process per turn.
#[test]
fn codex_fake_cli() {
    let fake = FakeCodex::new(codex_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options).run_kit();
    println!("{report}");
    report.assert_passed_except(&[Clause::Prc01, Clause::Prc02]);
}
