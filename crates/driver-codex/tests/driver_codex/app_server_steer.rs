//! Steering the Codex driver in app-server mode against the scripted fake: the follow-up goes
//! out as `turn/steer` naming the thread and the running turn (`expectedTurnId`); an error
//! answer is [`SteerError::Refused`], typed, and the turn goes on and ends clean without a
//! follow-up event.

use std::sync::Arc;

use driver_cli::ProcessMode;
use driver_codex::{CodexOptions, CommonOptions};
use driver_process::pool::PoolLimits;
use driver_spi::{
    CollectingSink, Driver, DriverEvent, ProcessLifecycle as _, SteerError, check_sequence,
    steering,
};
use fake_cli::{LineRule, Scenario, read_served_lines};

use crate::app_server_script::{TURN_START, TURN_STEER, initialize, threads, turn};
use crate::support::fake_codex;

const PROMPT: &str = "STEER-REFUSED";

/// A turn that waits; Codex refuses its `turn/steer` (the turn ended on its side), then
/// completes it.
fn refusing() -> Scenario {
    let wait = LineRule::when([TURN_START, PROMPT])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-r","status":"inProgress"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-r","status":"inProgress"}}}"#);
    let refuse = LineRule::when([TURN_STEER, r#""expectedTurnId":"turn-r""#])
        .stdout(r#"{"id":${ID},"error":{"code":-32600,"message":"no active turn to steer"}}"#)
        .stdout(r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","turnId":"turn-r","item":{"type":"agentMessage","id":"msg_r","text":"done"}}}"#)
        .stdout(r#"{"method":"turn/completed","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-r","items":[],"status":"completed","error":null}}}"#);
    let mut scenario = Scenario::new().serve(initialize());
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    scenario.serve(wait).serve(refuse).serve(turn())
}

#[tokio::test]
async fn a_refused_turn_steer_is_a_typed_refusal_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.jsonl");
    let codex = fake_codex(refusing().serve_record(&served), &[]);
    let driver = codex.driver(
        CodexOptions::new().with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    assert!(driver.descriptor().capabilities.steer);
    let (steerer, receiver) = steering();
    let request = crate::app_server_fake::request(PROMPT, &codex.workspace).with_steering(receiver);
    let sink = Arc::new(CollectingSink::new());
    let (response, answer) =
        tokio::join!(driver.run(request, sink.clone()), steerer.steer("go left"));
    assert_eq!(answer, Err(SteerError::Refused));
    let response = response.unwrap();
    assert_eq!(response.output, "done");
    let events = sink.take();
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DriverEvent::FollowUp { .. }))
    );
    let steer: Vec<serde_json::Value> = read_served_lines(&served)
        .unwrap()
        .iter()
        .filter(|l| l.contains("turn/steer"))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(steer.len(), 1);
    let params = &steer[0]["params"];
    assert_eq!(params["expectedTurnId"], "turn-r");
    assert_eq!(
        params["input"],
        serde_json::json!([{"type": "text", "text": "go left"}])
    );
    assert!(params["threadId"].as_str().is_some_and(|t| !t.is_empty()));
    driver.close_processes().await.unwrap();
}
