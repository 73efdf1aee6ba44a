//! The canary check (`cli_test_kit::assert_canary_hidden`) for Cursor: the model key
//! the namespace injects (`CURSOR_API_KEY`), echoed by the model in a shell command, the
//! command's output and its answer, shows in no event, output or log.

use cli_test_kit::{CANARY, assert_canary_hidden, canary_request, canary_secret};
use fake_cli::{Rule, Scenario};

use crate::fixtures::{self, NEW_CHAT};
use crate::support::FakeCursor;

#[test]
fn hides_the_namespace_model_key() {
    let args = format!(r#"{{"command":"echo {CANARY}"}}"#);
    let rule = Rule::any()
        .stdout(fixtures::init(NEW_CHAT))
        .stdout(fixtures::user(NEW_CHAT))
        .stdout(format!(
            r#"{{"type":"tool_call","subtype":"started","call_id":"c1","tool_call":{{"shellToolCall":{{"args":{args}}}}},"session_id":"{NEW_CHAT}"}}"#
        ))
        .stdout(format!(
            r#"{{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{{"shellToolCall":{{"args":{args},"result":{{"success":{{"stdout":"{CANARY}\n","exitCode":0}}}}}}}},"session_id":"{NEW_CHAT}"}}"#
        ))
        .stdout(fixtures::assistant(NEW_CHAT, &format!("the key is {CANARY}")))
        .stdout(fixtures::result(NEW_CHAT, &format!("the key is {CANARY}")))
        .stderr(format!("warning: key {CANARY}"));
    let scenario = Scenario::new()
        .capture_dir_from_env("CURSOR_CONFIG_DIR")
        .rule(Rule::when(["create-chat"]).stdout(fixtures::created_chat()))
        .rule(rule);
    let fake = FakeCursor::with_secrets(
        scenario,
        fixtures::VERSION,
        &[],
        &["CURSOR_AUTH_TOKEN"],
        &[canary_secret("CURSOR_API_KEY")],
    );
    let driver = fake.driver(fake.options());
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}
