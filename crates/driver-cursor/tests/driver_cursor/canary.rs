//! The canary check (`driver_cli::testing::assert_canary_hidden`) for Cursor: the model key
//! the namespace injects (`CURSOR_API_KEY`), echoed by the model in a shell command, the
//! command's output and its answer, shows in no event, output or log.

use driver_cli::testing::{CANARY, assert_canary_hidden, canary_secret};
use driver_spi::{ProfilePayload, Request};
use fake_cli::{Rule, Scenario};
use run_service::RunId;

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
    let k = compat_fingerprint::Kind::new("driver-cursor canary tests v1");
    let profile = ProfilePayload::new(
        compat_fingerprint::Fingerprint::of(k, |e| e.str("exact")),
        compat_fingerprint::Fingerprint::of(k, |e| e.str("session")),
    );
    let request = Request::new(RunId::new("canary"), "say the key", profile)
        .with_workspace(fake.workspace.to_str().unwrap());
    let driver = fake.driver(fake.options());
    assert_canary_hidden(&driver, request);
}
