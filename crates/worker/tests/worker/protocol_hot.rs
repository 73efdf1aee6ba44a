//! The hot-Thread methods, served in process: `runtime.prewarm`, `runtime.steer` and
//! `runtime.holds` name their driver or task as `runtime.startTask` does, a follow-up's
//! acknowledgement follows its `follow_up` event, and `runtime.abandonSteer` abandons a
//! follow-up still pending.

use driver_spi::Request;
use run_service::RunId;
use serde_json::{Value, json};
use worker_protocol::{
    ABANDON_STEER, HOLDS, PREWARM, Prewarm, START_TASK, STEER, STOP, WireRequest, codes,
};

use crate::protocol::{awaiting_approval, configured, error_code, start_params};
use crate::support::profile;

fn prewarm_params(driver: u64) -> Value {
    let request = Request::new(RunId::new("w1"), "ignored", profile());
    Prewarm {
        driver,
        session_id: None,
        request: WireRequest::from_request(&request),
    }
    .to_wire()
}

#[tokio::test]
async fn a_prewarm_or_lookup_names_a_configured_driver_and_answers_the_drivers_own_answer() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    let mut others = Vec::new();
    let cases = [
        (PREWARM, prewarm_params(9)),
        (HOLDS, json!({"driver": 9, "session_id": "s"})),
    ];
    for (n, (method, params)) in (10..).zip(cases) {
        pipe.request(json!(n), method, params).await;
        let answer = pipe.answer(&json!(n), &mut others).await;
        assert_eq!(error_code(&answer), Some(codes::NOT_CONFIGURED), "{method}");
    }
    // The reference runtime pre-warms nothing and keeps no conversation.
    pipe.request(json!(20), PREWARM, prewarm_params(1)).await;
    let answer = pipe.answer(&json!(20), &mut others).await;
    assert_eq!(answer["result"]["outcome"], "failed", "{answer}");
    assert_eq!(answer["result"]["error"]["unsupported"]["what"], "prewarm");
    pipe.request(json!(21), HOLDS, json!({"driver": 1, "session_id": "s"}))
        .await;
    let answer = pipe.answer(&json!(21), &mut others).await;
    assert_eq!(answer["result"], json!({"held": false}));
    assert!(others.is_empty(), "{others:?}");
}

#[tokio::test]
async fn a_follow_up_is_acknowledged_after_its_event_and_refused_once_its_task_is_gone() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &["stall"]).await;
    let mut others = Vec::new();
    pipe.request(
        json!(2),
        STEER,
        json!({"handle": 42, "attempt": 1, "text": "x"}),
    )
    .await;
    let answer = pipe.answer(&json!(2), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::UNKNOWN_HANDLE));

    pipe.request(json!(3), START_TASK, start_params(1, "t1", "wait"))
        .await;
    let handle = pipe.answer(&json!(3), &mut others).await["result"]["handle"]
        .as_u64()
        .expect("a handle");
    let steer = |attempt: u32| json!({"handle": handle, "attempt": attempt, "text": "go left"});
    pipe.request(json!(4), STEER, steer(2)).await;
    let answer = pipe.answer(&json!(4), &mut others).await;
    assert_eq!(
        answer["result"],
        json!({"outcome": "refused", "error": {"class": "turn_ended"}}),
        "another attempt's follow-up"
    );
    pipe.request(json!(5), STEER, steer(1)).await;
    let answer = pipe.answer(&json!(5), &mut others).await;
    assert_eq!(answer["result"], json!({"outcome": "acknowledged"}));
    let follow_up = others
        .iter()
        .find(|m| m["params"]["event"]["event"]["type"] == "follow_up")
        .expect("the follow_up event came before the acknowledgement");
    assert_eq!(follow_up["params"]["event"]["event"]["text"], "go left");

    pipe.request(json!(6), STOP, json!({"handle": handle}))
        .await;
    pipe.answer(&json!(6), &mut others).await;
    pipe.request(json!(7), STEER, steer(1)).await;
    let answer = pipe.answer(&json!(7), &mut others).await;
    assert_eq!(
        answer["result"],
        json!({"outcome": "refused", "error": {"class": "turn_ended"}})
    );
}

#[tokio::test]
async fn a_follow_up_the_host_abandons_is_abandoned_in_the_worker() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    // A turn that waits for the host's approval: running, but taking no follow-up.
    let (handle, _ask, _events) = awaiting_approval(&mut pipe).await;
    let steer = json!({"handle": handle, "attempt": 1, "text": "go left", "steer_id": 1});
    pipe.request(json!(3), STEER, steer).await;
    let abandon = json!({"handle": handle, "steer_id": 1});
    pipe.request(json!(4), ABANDON_STEER, abandon.clone()).await;
    let mut others = Vec::new();
    let answer = pipe.answer(&json!(4), &mut others).await;
    assert_eq!(answer["result"], json!({"abandoned": true}));
    let answer = pipe.answer(&json!(3), &mut others).await;
    assert_eq!(
        answer["result"]["error"]["class"], "timed_out",
        "the pending follow-up ended unanswered: {answer}"
    );
    pipe.request(json!(5), ABANDON_STEER, abandon).await;
    let answer = pipe.answer(&json!(5), &mut others).await;
    assert_eq!(answer["result"], json!({"abandoned": false}), "once");
    pipe.request(
        json!(6),
        ABANDON_STEER,
        json!({"handle": 99, "steer_id": 1}),
    )
    .await;
    let answer = pipe.answer(&json!(6), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::UNKNOWN_HANDLE));
    pipe.request(json!(7), STOP, json!({"handle": handle}))
        .await;
    pipe.answer(&json!(7), &mut others).await;
}
