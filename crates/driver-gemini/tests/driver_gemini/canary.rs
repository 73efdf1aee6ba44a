//! The canary check (`cli_test_kit::assert_canary_hidden`) for Gemini: its key option
//! (a construction-time key the driver puts in the child's environment), or a model key the
//! namespace injects, echoed by the model in its streamed answer, a tool's parameters and the
//! tool's output, shows in no event, output or log.

use cli_test_kit::{CANARY, assert_canary_hidden, canary_request, canary_secret};
use driver_gemini::GeminiOptions;
use fake_cli::{Rule, Scenario};
use secrecy::SecretString;

use crate::support::{FakeGemini, RESULT, VERSION, init};

/// A fake whose turn echoes the canary, in a namespace that injects `secrets`.
fn fake(secrets: &[(&str, SecretString)]) -> FakeGemini {
    let rule = Rule::any()
        .stdout(init("${ARG_AFTER:--session-id}"))
        .stdout(format!(
            r#"{{"type":"tool_use","timestamp":"2026-12-01T01:06:19.300Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{{"command":"echo {CANARY}"}}}}"#
        ))
        .stdout(format!(
            r#"{{"type":"tool_result","timestamp":"2026-12-01T01:06:19.310Z","tool_id":"t1","status":"success","output":"{CANARY}"}}"#
        ))
        .stdout(r#"{"type":"message","timestamp":"2026-12-01T01:06:19.387Z","role":"assistant","content":"the key ","delta":true}"#)
        .stdout(format!(
            r#"{{"type":"message","timestamp":"2026-12-01T01:06:19.388Z","role":"assistant","content":"is {CANARY}","delta":true}}"#
        ))
        .stdout(RESULT)
        .stderr(format!("warning: key {CANARY}"));
    FakeGemini::with_secrets(
        Scenario::new().rule(rule),
        VERSION,
        &[],
        &["GOOGLE_API_KEY"],
        secrets,
    )
}

#[test]
fn hides_the_key_option() {
    let fake = fake(&[]);
    let options: GeminiOptions = fake.options().with_api_key(SecretString::from(CANARY));
    let driver = fake.driver(options);
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}

#[test]
fn hides_the_namespace_model_key() {
    let fake = fake(&[canary_secret("GEMINI_API_KEY")]);
    let driver = fake.driver(fake.options());
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}
