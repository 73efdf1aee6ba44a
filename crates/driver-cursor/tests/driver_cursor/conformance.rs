//! The driver-spi conformance kit over the Cursor driver and the fake CLI (`cargo xtask
//! conformance` runs `cursor_fake_cli` by exact name). The Cursor CLI cannot be installed
//! here, so this is the driver's only end-to-end check.

use cli_test_kit::{FakeCliFactory, unscripted_policy_clauses};
use driver_spi::conformance::Clause;

use crate::support::{cursor_like, fake_cursor};

/// Every clause passes. The only skips are for capabilities the driver does not claim: fork
/// (Cursor has none, RSP-03) and the process lifecycle (one process per turn, PRC-01/02).
#[test]
fn cursor_fake_cli() {
    let fake = fake_cursor(cursor_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options).run_kit();
    println!("{report}");
    // Cursor cannot ask the host: POL-03 (a policy that asks is refused) runs; the other
    // policy clauses need a scripted tool use the per-turn fake cannot model.
    let accepted = [
        // One process per turn: nothing to keep warm (CAP-05 judges the refusal).
        &[
            Clause::Rsp03,
            Clause::Prc01,
            Clause::Prc02,
            Clause::Prw01,
            Clause::Prw02,
        ][..],
        &unscripted_policy_clauses(false),
    ]
    .concat();
    report.assert_passed_except(&accepted);
}
