//! The driver-spi conformance kit over the Claude Code driver and the fake CLI (`cargo xtask
//! conformance` runs `conformance::claude_code_fake_cli` by exact name).

use cli_test_kit::{FakeCliFactory, unscripted_policy_clauses};
use driver_spi::conformance::Clause;

use crate::support::{claude_like, fake_claude};

/// Every clause passes. The skips are the process-lifecycle clauses (PRC-01, PRC-02), for a
/// capability the driver does not claim, and the policy clauses (see below): one `claude` process per turn.
#[test]
fn claude_code_fake_cli() {
    let fake = fake_claude(claude_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options).run_kit();
    println!("{report}");
    // The per-turn fake cannot model the CLI's permission flags: the policy and approval
    // clauses run on the resident factory below (a per-turn run that asks takes the same
    // protocol path), and the flags are checked by the argv tests and the real binary.
    let accepted = [
        // One process per turn: nothing to keep warm (CAP-05 judges the refusal).
        &[Clause::Prc01, Clause::Prc02, Clause::Prw01, Clause::Prw02][..],
        &unscripted_policy_clauses(true),
    ]
    .concat();
    report.assert_passed_except(&accepted);
}

/// Every clause passes in resident mode (`--input-format stream-json`), the process clauses
/// included (the kit closes the driver's processes, then counts the fakes still running), and
/// the policy and approval clauses, on the fake's scripted `can_use_tool` requests.
#[test]
fn claude_code_resident_fake_cli() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.jsonl");
    let fake = fake_claude(
        cli_test_kit::stream_json::resident_kit(&served),
        &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"],
    );
    let options = fake.options();
    cli_test_kit::stream_json::resident_factory(fake.into_harness(), options, &served)
        .assert_kit_passes();
}
