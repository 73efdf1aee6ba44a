//! The scripted fake app-server the Codex driver's tests share (the fake CLI's serve mode
//! answering Codex's JSON-RPC shapes, from `docs/codex-app-server.md`): `initialize`, threads
//! and turns, and the driver kit's scripted tool use. Its own module so that the worker's tests
//! run the driver kit through a worker on the very same script (they compile this file).

use fake_cli::{LineRule, Scenario};

pub(crate) const INITIALIZE: &str = r#""method":"initialize""#;
pub(crate) const THREAD_START: &str = r#""method":"thread/start""#;
pub(crate) const THREAD_RESUME: &str = r#""method":"thread/resume""#;
pub(crate) const THREAD_FORK: &str = r#""method":"thread/fork""#;
pub(crate) const TURN_START: &str = r#""method":"turn/start""#;
pub(crate) const TURN_INTERRUPT: &str = r#""method":"turn/interrupt""#;
pub(crate) const TURN_STEER: &str = r#""method":"turn/steer""#;

/// Answers `initialize`, with the unprompted notifications the pinned binary sends.
pub(crate) fn initialize() -> LineRule {
    LineRule::when([INITIALIZE])
        .stdout(r#"{"id":${ID},"result":{"userAgent":"fake/0.169.0","platformOs":"linux"}}"#)
        .stdout(r#"{"method":"configWarning","params":{"summary":"no bubblewrap","details":null},"emittedAtMs":1}"#)
}

/// Opens threads like Codex: a new one gets the process's own id, a resumed one keeps its
/// id, a fork gets the process's id (a fork runs on a new process).
pub(crate) fn threads() -> [LineRule; 3] {
    [
        LineRule::when([THREAD_START])
            .stdout(r#"{"id":${ID},"result":{"thread":{"id":"${SESSION}","forkedFromId":null}}}"#),
        LineRule::when([THREAD_RESUME])
            .stdout(r#"{"id":${ID},"result":{"thread":{"id":"${PARAM:threadId}"}}}"#),
        LineRule::when([THREAD_FORK]).stdout(
            r#"{"id":${ID},"result":{"thread":{"id":"${SESSION}","forkedFromId":"${PARAM:threadId}"}}}"#,
        ),
    ]
}

/// A clean turn whose answer names the process (`pid N: <prompt>`).
pub(crate) fn turn() -> LineRule {
    LineRule::when([TURN_START])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-${COUNT}","status":"inProgress"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-${COUNT}","status":"inProgress"}},"emittedAtMs":2}"#)
        .stdout(r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","turnId":"turn-${COUNT}","item":{"type":"agentMessage","id":"msg_${COUNT}","text":"pid ${PID}: ${PARAM:input.0.text}"}}}"#)
        .stdout(r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"${PARAM:threadId}","turnId":"turn-${COUNT}","tokenUsage":{"total":{"totalTokens":15,"inputTokens":10,"cachedInputTokens":0,"outputTokens":5,"reasoningOutputTokens":0},"last":{"totalTokens":15,"inputTokens":10,"cachedInputTokens":0,"outputTokens":5,"reasoningOutputTokens":0}}}}"#)
        .stdout(r#"{"method":"turn/completed","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-${COUNT}","items":[],"status":"completed","error":null}}}"#)
}

/// What the driver's answer to an approval request contains when it lets the command run.
pub(crate) const ACCEPTED: &str = r#""decision":"accept""#;

/// The kit's scripted tool use (before [`turn`]): a turn of the prompt
/// [`TOOL_USE_PROMPT`](cli_test_kit::TOOL_USE_PROMPT) starts a command that writes a
/// file (its command line carries the kit's arguments, secret included) and asks
/// `item/commandExecution/requestApproval`; an accepting answer completes the command and the
/// turn, a declining one declines the command and completes the turn.
pub(crate) fn tool_use() -> [LineRule; 3] {
    let command = format!(
        "write kit-approval.txt {}",
        driver_spi::conformance::TOOL_ARGUMENTS
    );
    let command = serde_json::to_string(&command).unwrap();
    let item = |status: &str| {
        format!(
            r#"{{"type":"commandExecution","id":"call_kit","command":{command},"status":"{status}","aggregatedOutput":"","exitCode":null}}"#
        )
    };
    let ask = LineRule::when([TURN_START, cli_test_kit::TOOL_USE_PROMPT])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-kit","status":"inProgress"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-kit","status":"inProgress"}}}"#)
        .stdout(format!(
            r#"{{"method":"item/started","params":{{"threadId":"${{PARAM:threadId}}","turnId":"turn-kit","item":{}}}}}"#,
            item("inProgress")
        ))
        .stdout(format!(
            r#"{{"id":"perm-${{COUNT}}","method":"item/commandExecution/requestApproval","params":{{"threadId":"${{PARAM:threadId}}","turnId":"turn-kit","itemId":"call_kit","command":{command}}}}}"#
        ));
    let end = |rule: LineRule, status: &str| {
        rule.stdout(format!(
            r#"{{"method":"item/completed","params":{{"turnId":"turn-kit","item":{}}}}}"#,
            item(status)
        ))
        .stdout(r#"{"method":"turn/completed","params":{"turn":{"id":"turn-kit","items":[],"status":"completed","error":null}}}"#)
    };
    [
        ask,
        end(LineRule::when([ACCEPTED]), "completed"),
        end(LineRule::when([r#""decision":"decline""#]), "declined"),
    ]
}

/// The kit's steered turn (before [`turn`]): a turn of the prompt
/// [`STEER_PROMPT`](cli_test_kit::STEER_PROMPT) starts and waits; `turn/steer` naming it is
/// answered with its id, and the turn then answers and completes.
pub(crate) fn steered_turn() -> [LineRule; 2] {
    [
        LineRule::when([TURN_START, cli_test_kit::STEER_PROMPT])
            .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-steer","status":"inProgress"}}}"#)
            .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-steer","status":"inProgress"}}}"#),
        LineRule::when([TURN_STEER, r#""expectedTurnId":"turn-steer""#])
            .stdout(r#"{"id":${ID},"result":{"turnId":"turn-steer"}}"#)
            .stdout(r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","turnId":"turn-steer","item":{"type":"agentMessage","id":"msg_steer","text":"steered"}}}"#)
            .stdout(r#"{"method":"turn/completed","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-steer","items":[],"status":"completed","error":null}}}"#),
    ]
}

/// The usual script: initialize, threads, turns.
pub(crate) fn app_server() -> Scenario {
    let mut scenario = Scenario::new().serve(initialize());
    for rule in threads()
        .into_iter()
        .chain(tool_use())
        .chain(steered_turn())
    {
        scenario = scenario.serve(rule);
    }
    scenario.serve(turn())
}
