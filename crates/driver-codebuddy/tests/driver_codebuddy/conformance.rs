//! The driver-spi conformance kit over the CodeBuddy driver and the fake CLI (`cargo xtask
//! conformance` runs `conformance::codebuddy_fake_cli` by exact name).

use driver_cli::testing::FakeCliFactory;
use driver_spi::conformance::Clause;

use crate::support::{FakeCodeBuddy, codebuddy_like};

/// Every clause passes. The only skips are the process-lifecycle clauses (PRC-01, PRC-02),
/// for a capability the driver does not claim: one `codebuddy` process per turn.
#[test]
fn codebuddy_fake_cli() {
    let fake = FakeCodeBuddy::new(
        codebuddy_like(),
        &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"],
    );
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options).run_kit();
    println!("{report}");
    report.assert_passed_except(&[Clause::Prc01, Clause::Prc02]);
}

/// Every clause passes in resident mode (`--input-format stream-json`), the process clauses
/// included: the kit closes the driver's processes, then counts the fakes still running.
#[test]
fn codebuddy_resident_fake_cli() {
    let fake = FakeCodeBuddy::new(
        driver_stream_json::testing::resident(&[]),
        &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"],
    );
    let options = fake.options();
    FakeCliFactory::resident(fake.into_harness(), options).assert_kit_passes();
}
