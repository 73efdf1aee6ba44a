//! The canary check (`cli_test_kit::assert_canary_hidden`) for Codex, `exec` and
//! app-server: the model key the namespace injects (`CODEX_API_KEY`), echoed by the model in
//! its answer, a command and its output, an MCP tool's arguments and result (and, in
//! app-server, a command's approval request), shows in no event, output or log.

use cli_test_kit::{
    CANARY, assert_canary_hidden, assert_canary_hidden_in_approvals, canary_request, canary_secret,
};
use driver_cli::ProcessMode;
use driver_codex::{CodexOptions, CommonOptions};
use driver_process::pool::PoolLimits;
use fake_cli::{LineRule, Rule, Scenario};

use crate::support::{FakeCodex, VERSION};

/// A fake whose namespace injects the canary as Codex's model key.
fn fake(scenario: Scenario) -> FakeCodex {
    FakeCodex::with_secrets(
        scenario,
        VERSION,
        &[],
        &["OPENAI_API_KEY"],
        &[canary_secret("CODEX_API_KEY")],
    )
}

/// The items of a turn that echoes the canary, as `exec --json` names them (`item.*`) or as
/// app-server does (`item/*` notifications, camelCase types).
fn items(app_server: bool) -> Vec<String> {
    let (mcp, command, output, message) = if app_server {
        (
            "mcpToolCall",
            "commandExecution",
            "aggregatedOutput",
            "agentMessage",
        )
    } else {
        (
            "mcp_tool_call",
            "command_execution",
            "aggregated_output",
            "agent_message",
        )
    };
    let exit = if app_server { "exitCode" } else { "exit_code" };
    let items = [
        format!(
            r#"{{"id":"c1","type":"{mcp}","server":"agent-ui","tool":"lookup","arguments":{{"key":"{CANARY}"}},"result":{{"content":[{{"type":"text","text":"found {CANARY}"}}]}},"status":"completed"}}"#
        ),
        format!(
            r#"{{"id":"c2","type":"{command}","command":"echo {CANARY}","{output}":"{CANARY}\n","{exit}":0,"status":"completed"}}"#
        ),
        format!(r#"{{"id":"m1","type":"{message}","text":"the key is {CANARY}"}}"#),
    ];
    items
        .into_iter()
        .map(|item| {
            if app_server {
                format!(
                    r#"{{"method":"item/completed","params":{{"threadId":"${{SESSION}}","turnId":"turn-1","item":{item}}}}}"#
                )
            } else {
                format!(r#"{{"type":"item.completed","item":{item}}}"#)
            }
        })
        .collect()
}

#[test]
fn exec_hides_the_namespace_model_key() {
    let mut rule = Rule::any()
        .stdout(r#"{"type":"thread.started","thread_id":"${NEW_UUID}"}"#)
        .stdout(r#"{"type":"turn.started"}"#);
    for line in items(false) {
        rule = rule.stdout(line);
    }
    let rule = rule
        .stdout(r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0}}"#)
        .stderr(format!("warning: key {CANARY}"));
    let fake = fake(Scenario::new().rule(rule));
    let driver = fake.driver(CodexOptions::new());
    assert_canary_hidden(&driver, canary_request(&fake.workspace));
}

#[test]
fn app_server_hides_the_namespace_model_key_and_its_approval_arguments() {
    let mut turn = LineRule::when([r#""method":"turn/start""#])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-1","status":"inProgress"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${SESSION}","turn":{"id":"turn-1","status":"inProgress"}}}"#)
        // The command the model wants to run asks first: its arguments echo the key.
        .stdout(format!(
            r#"{{"id":"perm-1","method":"item/commandExecution/requestApproval","params":{{"threadId":"${{SESSION}}","turnId":"turn-1","itemId":"c2","command":"echo {CANARY}"}}}}"#
        ));
    for line in items(true) {
        turn = turn.stdout(line);
    }
    let turn = turn
        .stdout(r#"{"method":"turn/completed","params":{"threadId":"${SESSION}","turn":{"id":"turn-1","items":[],"status":"completed","error":null}}}"#)
        .stderr(format!("warning: key {CANARY}"));
    let scenario = Scenario::new()
        .serve(
            LineRule::when([r#""method":"initialize""#])
                .stdout(r#"{"id":${ID},"result":{"userAgent":"fake/0.169.0"}}"#),
        )
        .serve(
            LineRule::when([r#""method":"thread/start""#])
                .stdout(r#"{"id":${ID},"result":{"thread":{"id":"${SESSION}"}}}"#),
        )
        .serve(turn);
    let fake = fake(scenario);
    let options =
        CodexOptions::new().with_process_mode(ProcessMode::Resident(PoolLimits::default()));
    let driver = fake.driver(options);
    assert_canary_hidden_in_approvals(&driver, &fake.workspace);
}
