//! The canary check (`cli_test_kit::assert_canary_hidden`) for CodeBuddy, one process
//! per turn and resident: its key option (a construction-time key the driver puts in the
//! child's environment), or a model key the namespace injects, echoed by the model in a
//! command's input (and, resident, its permission request), the command's result and the
//! answer, shows in no event, output or log.

use cli_test_kit::stream_json::{USER_LINE, canary_turn, resident};
use cli_test_kit::{
    CANARY, assert_canary_hidden, assert_canary_hidden_in_approvals, canary_request, canary_secret,
};
use driver_cli::ProcessMode;
use driver_codebuddy::{CodeBuddyOptions, CommonOptions};
use driver_process::pool::PoolLimits;
use fake_cli::{LineRule, Rule, Scenario};
use secrecy::SecretString;

use crate::support::{FakeCodeBuddy, VERSION};

/// A fake whose namespace injects `secrets`.
fn fake(scenario: Scenario, secrets: &[(&str, SecretString)]) -> FakeCodeBuddy {
    FakeCodeBuddy::with_secrets(scenario, VERSION, &[], &["CODEBUDDY_AUTH_TOKEN"], secrets)
}

/// Options whose key option is the canary.
fn keyed(fake: &FakeCodeBuddy) -> CodeBuddyOptions {
    fake.options().with_api_key(SecretString::from(CANARY))
}

const SESSION: &str = "${ARG_AFTER:--session-id}";

fn per_turn() -> Scenario {
    let rule = canary_turn(SESSION, false)
        .into_iter()
        .fold(Rule::any(), Rule::stdout)
        .stderr(format!("warning: key {CANARY}"));
    Scenario::new().rule(rule)
}

#[test]
fn per_turn_hides_the_key_option() {
    let fake = fake(per_turn(), &[]);
    let driver = fake.driver(keyed(&fake));
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}

#[test]
fn per_turn_hides_the_namespace_model_key() {
    let fake = fake(per_turn(), &[canary_secret("CODEBUDDY_API_KEY")]);
    let driver = fake.driver(fake.options());
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}

#[test]
fn resident_hides_the_key_option_and_its_approval_arguments() {
    let turn = canary_turn(SESSION, true)
        .into_iter()
        .fold(LineRule::when([USER_LINE]), LineRule::stdout)
        .stderr(format!("warning: key {CANARY}"));
    let fake = fake(resident(&[turn]), &[]);
    let driver =
        fake.driver(keyed(&fake).with_process_mode(ProcessMode::Resident(PoolLimits::default())));
    assert_canary_hidden_in_approvals(&driver, &fake.workspace);
}
