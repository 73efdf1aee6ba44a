//! The driver-spi conformance kit over the Codex driver and the fake CLI (`cargo xtask
//! conformance` runs `conformance::codex_fake_cli` by exact name).

use cli_test_kit::{FakeCliFactory, unscripted_policy_clauses};
use driver_spi::conformance::Clause;

use crate::support::{codex_like, fake_codex};

/// Every clause passes. The only skips are the process-lifecycle clauses (PRC-01, PRC-02),
/// for a capability the driver does not claim: one `codex exec` process per turn.
#[test]
fn codex_fake_cli() {
    let fake = fake_codex(codex_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options).run_kit();
    println!("{report}");
    // The per-turn fake cannot model Codex's sandbox: the policy and approval clauses run on
    // the app-server factory below (a per-turn run that asks takes the same protocol path),
    // and the settings are checked by the argv tests and the real binary.
    let accepted = [
        // One process per turn: nothing to keep warm (CAP-05 judges the refusal).
        &[Clause::Prc01, Clause::Prc02, Clause::Prw01, Clause::Prw02][..],
        &unscripted_policy_clauses(true),
    ]
    .concat();
    report.assert_passed_except(&accepted);
}

/// Every clause passes in app-server mode, the process clauses included (the kit closes the
/// driver's processes and then counts the fake app-servers still running, from `/proc`), and
/// the policy and approval clauses, on the fake's scripted command approvals.
#[test]
fn codex_app_server_fake_cli() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.jsonl");
    let fake = fake_codex(
        crate::app_server_script::app_server().serve_record(&served),
        &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"],
    );
    let options = fake.options();
    FakeCliFactory::resident(fake.into_harness(), options)
        .with_tool_use(
            driver_spi::Action::Write,
            &served,
            crate::app_server_script::ACCEPTED,
        )
        .with_steering()
        .assert_kit_passes();
}
