//! The driver-spi conformance kit over the Gemini driver and the fake CLI (`cargo xtask
//! conformance` runs `gemini_fake_cli` by exact name).

use cli_test_kit::{FakeCliFactory, unscripted_policy_clauses};
use driver_spi::conformance::Clause;
use driver_spi::{Request, SessionMode};
use fake_cli::Harness;

use crate::support::{fake_gemini, gemini_like, record_session};

/// Before a fork, writes the recording of the parent session that the real CLI would have
/// left (the fake records nothing).
fn record_fork_parent(harness: &Harness, request: &Request) {
    if request.session.mode == SessionMode::Fork
        && let Some(state) = &request.session.state
        && driver_cli::is_uuid(&state.resume_id)
    {
        record_session(harness, &state.resume_id);
    }
}

/// Every clause passes. The only skips are the process-lifecycle clauses (PRC-01, PRC-02),
/// for a capability the driver does not claim: one `gemini` process per turn.
#[test]
fn gemini_fake_cli() {
    let fake = fake_gemini(gemini_like(), &["KIT_MCP_TOKEN_OLD", "KIT_MCP_TOKEN_NEW"]);
    let options = fake.options();
    let report = FakeCliFactory::new(fake.into_harness(), options)
        .with_before_run(record_fork_parent)
        .run_kit();
    println!("{report}");
    // Gemini cannot ask the host: POL-03 (a policy that asks is refused) runs; the other
    // policy clauses need a scripted tool use the per-turn fake cannot model.
    let accepted = [
        // One process per turn: nothing to keep warm (CAP-05 judges the refusal).
        &[Clause::Prc01, Clause::Prc02, Clause::Prw01, Clause::Prw02][..],
        &unscripted_policy_clauses(false),
    ]
    .concat();
    report.assert_passed_except(&accepted);
}
