//! The canary check (`cli_test_kit::assert_canary_hidden`) for Claude Code, one
//! process per turn and resident: the model key the namespace injects (`ANTHROPIC_API_KEY`),
//! echoed by the model in a command's input (and, resident, its permission request), the
//! command's result and the answer, shows in no event, output or log.

use cli_test_kit::stream_json::{USER_LINE, canary_turn, resident};
use cli_test_kit::{
    CANARY, assert_canary_hidden, assert_canary_hidden_in_approvals, canary_request, canary_secret,
};
use driver_claude_code::CommonOptions;
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use fake_cli::{LineRule, Rule, Scenario};

use crate::support::{FakeClaude, VERSION};

/// A fake whose namespace injects the canary as Claude Code's model key.
fn fake(scenario: Scenario) -> FakeClaude {
    FakeClaude::with_secrets(
        scenario,
        VERSION,
        &[],
        &["CLAUDE_CODE_OAUTH_TOKEN"],
        &[canary_secret("ANTHROPIC_API_KEY")],
    )
}

const SESSION: &str = "${ARG_AFTER:--session-id}";

#[test]
fn per_turn_hides_the_namespace_model_key() {
    let rule = canary_turn(SESSION, false)
        .into_iter()
        .fold(Rule::any(), Rule::stdout)
        .stderr(format!("warning: key {CANARY}"));
    let fake = fake(Scenario::new().rule(rule));
    let driver = fake.driver(fake.options());
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}

#[test]
fn resident_hides_the_namespace_model_key_and_its_approval_arguments() {
    let turn = canary_turn(SESSION, true)
        .into_iter()
        .fold(LineRule::when([USER_LINE]), LineRule::stdout)
        .stderr(format!("warning: key {CANARY}"));
    let fake = fake(resident(&[turn]));
    let driver = fake.driver(
        fake.options()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    assert_canary_hidden_in_approvals(&driver, &fake.workspace);
}
