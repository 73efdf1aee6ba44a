//! The control protocol through the resident peer, against a scripted CLI on an in-memory
//! pipe: requests both ways and their answers, events as notifications, a `user` message
//! written alone, and lines that are none of these dropped.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use driver_process::peer::{Inbox, Incoming, RpcError, RpcPeer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::ControlProtocol;

const SECOND: Duration = Duration::from_secs(5);

type Written = tokio::io::Lines<BufReader<DuplexStream>>;

/// A client peer in the control protocol, what it writes, and where the CLI writes.
fn pair() -> (RpcPeer, Inbox, Written, DuplexStream) {
    let (client_in, cli_out) = tokio::io::duplex(1 << 16);
    let (cli_in, client_out) = tokio::io::duplex(1 << 16);
    let (peer, inbox) = RpcPeer::client(&ControlProtocol, client_in, client_out, 4096);
    (peer, inbox, BufReader::new(cli_in).lines(), cli_out)
}

async fn next_written(lines: &mut Written) -> Value {
    serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap()
}

async fn say(out: &mut DuplexStream, message: &Value) {
    out.write_all(message.to_string().as_bytes()).await.unwrap();
    out.write_all(b"\n").await.unwrap();
}

fn success(request_id: &Value, response: Value) -> Value {
    json!({"type": "control_response", "response": {
        "subtype": "success", "request_id": request_id, "response": response}})
}

#[tokio::test]
async fn a_request_is_a_control_request_answered_by_its_control_response() {
    let (peer, _inbox, mut written, mut out) = pair();
    let interrupt = peer.request("interrupt", json!({"why": "cancel"}), SECOND);
    let answer = async {
        let asked = next_written(&mut written).await;
        assert_eq!(asked["type"], "control_request");
        assert_eq!(
            asked["request"],
            json!({"subtype": "interrupt", "why": "cancel"})
        );
        assert!(asked["request_id"].is_string(), "{asked}");
        say(
            &mut out,
            &success(&asked["request_id"], json!({"ok": true})),
        )
        .await;
    };
    assert_eq!(
        tokio::join!(interrupt, answer).0.unwrap(),
        json!({"ok": true})
    );

    let refused = peer.request("set_model", json!(null), SECOND);
    let answer = async {
        let asked = next_written(&mut written).await;
        assert_eq!(asked["request"], json!({"subtype": "set_model"}));
        say(
            &mut out,
            &json!({"type": "control_response", "response": {"subtype": "error",
                "request_id": asked["request_id"], "error": "unknown model secret-model-42"}}),
        )
        .await;
    };
    let err = tokio::join!(refused, answer).0.unwrap_err();
    let RpcError::Remote { code, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*code, 0, "the protocol has no codes");
    assert!(
        message.0.contains("unknown model"),
        "kept for classification"
    );
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("secret-model-42"), "{shown}");
    }
    assert_eq!(peer.dropped(), 0);
}

#[tokio::test]
async fn the_clis_requests_and_events_arrive_in_order_and_are_answered_in_kind() {
    let (peer, mut inbox, mut written, mut out) = pair();
    say(&mut out, &json!({"type": "system", "subtype": "init"})).await;
    say(
        &mut out,
        &json!({"type": "control_request", "request_id": "cli-1",
            "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}),
    )
    .await;
    assert_eq!(
        inbox.recv().await.unwrap(),
        Incoming::Notification {
            method: "system".into(),
            params: json!({"type": "system", "subtype": "init"})
        }
    );
    let Some(Incoming::Request { id, method, params }) = inbox.recv().await else {
        panic!("a control request");
    };
    assert_eq!((&id, method.as_str()), (&json!("cli-1"), "can_use_tool"));
    assert_eq!(params["tool_name"], "Bash");
    peer.respond(id.clone(), json!({"behavior": "allow"}))
        .await
        .unwrap();
    assert_eq!(
        next_written(&mut written).await,
        success(&id, json!({"behavior": "allow"}))
    );
    peer.respond_error(id, -32601, "not supported")
        .await
        .unwrap();
    assert_eq!(
        next_written(&mut written).await,
        json!({"type": "control_response", "response": {
            "subtype": "error", "request_id": "cli-1", "error": "not supported"}})
    );
    // A notification is its params alone: the `user` message.
    let user = json!({"type": "user", "message": {"role": "user", "content": "hi"}});
    peer.notify("user", user.clone()).await.unwrap();
    assert_eq!(next_written(&mut written).await, user);
}

#[tokio::test]
async fn lines_that_are_no_message_of_the_protocol_are_dropped_and_counted() {
    let (peer, mut inbox, _written, mut out) = pair();
    out.write_all(b"not json\n").await.unwrap();
    for line in [
        json!([1, 2]),
        json!({"no": "type"}),
        json!({"type": 5}),
        json!({"type": "control_request", "request_id": "x", "request": {}}),
        json!({"type": "control_response"}),
        success(&json!("999"), json!({})),
        success(&json!("not-a-number"), json!({})),
    ] {
        say(&mut out, &line).await;
    }
    say(&mut out, &json!({"type": "result"})).await;
    let Some(Incoming::Notification { method, .. }) = inbox.recv().await else {
        panic!("the event after the bad lines");
    };
    assert_eq!(
        method, "result",
        "nothing of the bad lines reached the inbox"
    );
    assert_eq!(peer.dropped(), 8);
}
