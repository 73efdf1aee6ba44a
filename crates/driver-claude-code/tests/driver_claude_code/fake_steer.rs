//! Steering the resident stream-json loop against the scripted fake: a follow-up that comes
//! too late for the running CLI turn (the fake, like Claude Code, runs it as a turn of its
//! own after the first `result`) keeps the driver's turn open until the CLI echoed it and
//! ended that turn too; the next turn on the same process reads only its own answer. One
//! process per turn refuses a follow-up at once, typed.

use std::time::Duration;

use cli_test_kit::stream_json::{USER_LINE, resident};
use driver_claude_code::CommonOptions;
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use driver_spi::{CollectingSink, Driver, DriverEvent, SteerError, check_sequence, steering};
use fake_cli::LineRule;
use std::sync::Arc;

use crate::support::fake_claude;

const PROMPT: &str = "LATE-PROMPT";
const FOLLOW_UP: &str = "late follow-up";

fn line(kind: &str, text: &str) -> String {
    match kind {
        "init" => r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"${SESSION}","tools":[],"mcp_servers":[{"name":"agent-ui","status":"connected"}],"model":"claude-test","permissionMode":"default"}"#.to_owned(),
        "echo" => format!(
            r#"{{"type":"user","message":{{"role":"user","content":"{text}"}},"session_id":"${{SESSION}}","isReplay":true}}"#
        ),
        "answer" => format!(
            r#"{{"type":"assistant","message":{{"id":"m","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"session_id":"${{SESSION}}"}}"#
        ),
        _ => format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"{text}","session_id":"${{SESSION}}","usage":{{"input_tokens":10,"output_tokens":5}}}}"#
        ),
    }
}

/// The prompt's turn answers slowly and ends without the follow-up; the follow-up's line
/// then runs as the CLI's next turn.
fn rules() -> [LineRule; 2] {
    [
        LineRule::when([USER_LINE, PROMPT])
            .stdout(line("init", ""))
            .stdout(line("echo", PROMPT))
            .stdout(line("answer", "first"))
            .sleep_ms(800)
            .stdout(line("result", "first")),
        LineRule::when([USER_LINE, FOLLOW_UP])
            .stdout(line("init", ""))
            .stdout(line("echo", FOLLOW_UP))
            .stdout(line("answer", "second"))
            .stdout(line("result", "second")),
    ]
}

#[tokio::test]
async fn a_follow_up_the_cli_runs_next_stays_in_the_turn_that_finalizes() {
    let claude = fake_claude(resident(&rules()), &[]);
    let driver = claude.driver(
        claude
            .options()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    let request = |prompt: &str| {
        crate::fake_cli::request(prompt, "http://127.0.0.1:4101/mcp", "UI_TOKEN", &claude)
    };
    let (steerer, receiver) = steering();
    let sink = Arc::new(CollectingSink::new());
    let run = driver.run(request(PROMPT).with_steering(receiver), sink.clone());
    let (response, answer) = tokio::join!(run, steerer.steer(FOLLOW_UP));
    let response = response.unwrap();
    assert_eq!(answer, Ok(()));
    assert_eq!(
        response.output, "second",
        "the turn took the follow-up's answer"
    );
    let usage = response.usage.unwrap();
    assert_eq!(usage.output_tokens, 10, "both CLI turns' usage");
    let events = sink.take();
    assert_eq!(check_sequence(&events), Ok(()));
    let follow_ups: Vec<&DriverEvent> = events
        .iter()
        .filter(|e| matches!(e, DriverEvent::FollowUp { .. }))
        .collect();
    assert_eq!(
        follow_ups,
        [&DriverEvent::FollowUp {
            text: FOLLOW_UP.into()
        }]
    );

    // The next turn on the same process answers its own prompt.
    let state = response.persistable_checkpoint().unwrap().clone();
    let next = request("after").with_session(driver_spi::SessionContext::continue_only(state));
    let sink = Arc::new(CollectingSink::new());
    let next = tokio::time::timeout(Duration::from_secs(30), driver.run(next, sink))
        .await
        .unwrap()
        .unwrap();
    assert!(next.output.contains("turn"), "{}", next.output);
    assert_eq!(driver.pool_stats().unwrap().reused, 1);
}

#[tokio::test]
async fn one_process_per_turn_refuses_a_follow_up_typed() {
    let claude = fake_claude(crate::support::claude_like(), &[]);
    let driver = claude.driver(claude.options());
    assert!(!driver.descriptor().capabilities.steer);
    let (steerer, receiver) = steering();
    let request =
        crate::fake_cli::request("hello", "http://127.0.0.1:4101/mcp", "UI_TOKEN", &claude)
            .with_steering(receiver);
    let sink = Arc::new(CollectingSink::new());
    let (response, answer) = tokio::join!(driver.run(request, sink), steerer.steer("left"));
    response.unwrap();
    assert_eq!(answer, Err(SteerError::Unsupported));
}
