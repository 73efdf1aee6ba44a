//! The hot-Thread messages: pre-warm, steering, held conversations.

use std::time::Duration;

use driver_spi::{DriverError, PrewarmTicket, Prewarmed, SteerError, Unsupported};
use serde_json::json;

use super::{CANARY, request};
use crate::*;

#[test]
fn a_prewarm_carries_its_request_and_secrets_like_a_start_and_its_ticket_comes_back() {
    let prewarm = Prewarm {
        driver: 3,
        session_id: Some("ref-1".into()),
        request: WireRequest::from_request(&request()),
    };
    assert!(!format!("{prewarm:?}").contains(CANARY));
    let sent = prewarm.to_wire().to_string();
    assert!(sent.contains(CANARY), "the pipe carries the value");
    let back: Prewarm = serde_json::from_str(&sent).expect("parses");
    assert_eq!(
        (back.driver, back.session_id.as_deref()),
        (3, Some("ref-1"))
    );
    assert_eq!(back.request.body, prewarm.request.body);

    let ticket = PrewarmTicket::new();
    let ready = Prewarmed::new(Some(ticket.clone()))
        .with_reused(true)
        .with_expires_after(Some(Duration::from_secs(600)));
    let answer = PrewarmAnswer::from_result(&Ok(ready.clone()));
    let json = serde_json::to_value(&answer).expect("serializes");
    assert_eq!(json["outcome"], "ready");
    let back: PrewarmAnswer = serde_json::from_value(json).expect("parses");
    assert_eq!(back.into_result(), Ok(ready));

    // The ticket rides in the next start's request, and only when there is one.
    let with = request().with_prewarmed(ticket.clone());
    let body = serde_json::to_value(WireRequest::from_request(&with).body).expect("body");
    assert_eq!(body["prewarmed"], json!(ticket.as_str()));
    let wire: WireRequest =
        serde_json::from_value(WireRequest::from_request(&with).to_wire()).expect("parses");
    let back = wire
        .into_request(driver_spi::Approvals::none())
        .expect("valid");
    assert_eq!(back.prewarmed, Some(ticket));
    let without = serde_json::to_value(WireRequest::from_request(&request()).body).expect("body");
    assert!(
        without.get("prewarmed").is_none(),
        "the old wire, unchanged"
    );
}

#[test]
fn a_refused_prewarm_crosses_as_the_same_driver_error() {
    for error in [
        DriverError::Unsupported(Unsupported::Prewarm),
        DriverError::resume_rejected(driver_spi::ResumeRejectReason::UnknownSession),
        DriverError::Cancelled,
    ] {
        let answer = PrewarmAnswer::from_result(&Err(error.clone()));
        let json = serde_json::to_value(&answer).expect("serializes");
        assert_eq!(json["outcome"], "failed");
        let back: PrewarmAnswer = serde_json::from_value(json).expect("parses");
        assert_eq!(back.into_result(), Err(error));
    }
}

#[test]
fn a_follow_up_hides_its_text_in_debug_and_every_refusal_keeps_its_class() {
    let steer = Steer {
        handle: 7,
        attempt: 2,
        text: format!("mind {CANARY}"),
        steer_id: 3,
    };
    assert!(!format!("{steer:?}").contains(CANARY));
    let json = serde_json::to_value(&steer).expect("serializes");
    assert_eq!(
        serde_json::from_value::<Steer>(json).expect("parses"),
        steer
    );

    let outcomes = [
        Ok(()),
        Err(SteerError::Unsupported),
        Err(SteerError::NoTurn),
        Err(SteerError::TurnEnded),
        Err(SteerError::Refused),
        Err(SteerError::TimedOut {
            after: Duration::from_millis(1500),
        }),
        Err(SteerError::Empty),
    ];
    for outcome in outcomes {
        let answer = SteerAnswer::from_result(outcome);
        let json = serde_json::to_value(answer).expect("serializes");
        let back: SteerAnswer = serde_json::from_value(json).expect("parses");
        assert_eq!(back.into_result(), outcome);
    }
    assert_eq!(
        serde_json::to_value(SteerAnswer::from_result(Err(SteerError::TurnEnded))).ok(),
        Some(json!({"outcome": "refused", "error": {"class": "turn_ended"}}))
    );
}

#[test]
fn held_conversations_and_their_changes_round_trip() {
    let holds = Holds {
        driver: 1,
        session_id: "thread-9".into(),
    };
    let json = serde_json::to_value(&holds).expect("serializes");
    assert_eq!(
        serde_json::from_value::<Holds>(json).expect("parses"),
        holds
    );
    let held: Held = serde_json::from_value(json!({"held": true})).expect("parses");
    assert!(held.held);
    let changed = ProcessesChanged {
        driver: 1,
        generation: 4,
    };
    let json = serde_json::to_value(changed).expect("serializes");
    assert_eq!(
        serde_json::from_value::<ProcessesChanged>(json).expect("parses"),
        changed
    );
    let abandon = AbandonSteer {
        handle: 7,
        steer_id: 3,
    };
    let json = serde_json::to_value(abandon).expect("serializes");
    assert_eq!(
        serde_json::from_value::<AbandonSteer>(json).expect("parses"),
        abandon
    );
    let old: Steer = serde_json::from_value(json!({"handle": 1, "attempt": 1, "text": "t"}))
        .expect("a follow-up without a number parses");
    assert_eq!(old.steer_id, 0);
    for method in [PREWARM, STEER, ABANDON_STEER, HOLDS] {
        assert!(WORKER_METHODS.contains(&method), "{method} is served");
    }
    assert!(
        !WORKER_METHODS.contains(&PROCESSES_CHANGED),
        "sent, not served"
    );
}
