//! The peer as a server (a worker reading requests on its stdin) against a scripted client on
//! an in-memory pipe: its methods delivered and answered, everything else answered with the
//! fixed JSON-RPC errors (or, for a notification, only counted), and its inbox bounded.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

use super::peer::{assert_an_unread_inbox_blocks_the_writer, next_sent, say};
use crate::peer::{Inbox, Incoming, JsonRpc, RpcPeer};

const SECOND: Duration = Duration::from_secs(5);

/// What a server wrote, line by line.
type Written = tokio::io::Lines<BufReader<DuplexStream>>;

/// A server of `work/run` and `work/progress`, what it writes, and where the client writes.
fn server() -> (RpcPeer, Inbox, Written, DuplexStream) {
    let (stdin, client_writes) = tokio::io::duplex(1 << 16);
    let (client_reads, stdout) = tokio::io::duplex(1 << 16);
    let (peer, inbox) =
        RpcPeer::server(&JsonRpc, ["work/run", "work/progress"], stdin, stdout, 4096);
    (
        peer,
        inbox,
        BufReader::new(client_reads).lines(),
        client_writes,
    )
}

async fn next_written(lines: &mut Written) -> Value {
    tokio::time::timeout(SECOND, next_sent(lines))
        .await
        .expect("the server wrote a line")
}

fn refusal(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Sends a request of a method the server serves, takes it from the inbox and answers it, so
/// the next written line is known to follow everything said before.
async fn round_trip(
    peer: &RpcPeer,
    inbox: &mut Inbox,
    written: &mut Written,
    to: &mut DuplexStream,
    id: u64,
) {
    say(
        to,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"work/run"}}"#),
    )
    .await;
    let Some(Incoming::Request {
        id: got, method, ..
    }) = inbox.recv().await
    else {
        panic!("the request of a served method");
    };
    assert_eq!((got.clone(), method.as_str()), (json!(id), "work/run"));
    peer.respond(got, json!({"ok": id})).await.unwrap();
    assert_eq!(
        next_written(written).await,
        json!({"jsonrpc": "2.0", "id": id, "result": {"ok": id}})
    );
}

#[tokio::test]
async fn a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_server_goes_on() {
    let (peer, mut inbox, mut written, mut to) = server();
    say(
        &mut to,
        r#"{"jsonrpc":"2.0","id":1,"method":"work/run","params":{"key":"parse-canary-x1"#,
    )
    .await;
    let answer = next_written(&mut written).await;
    assert_eq!(answer, refusal(Value::Null, -32700, "Parse error"));
    assert!(
        !answer.to_string().contains("canary"),
        "never echoes the input"
    );
    round_trip(&peer, &mut inbox, &mut written, &mut to, 2).await;
    assert_eq!(peer.dropped(), 1);
}

#[tokio::test]
async fn a_request_of_an_unknown_method_is_answered_method_not_found_with_its_id() {
    let (peer, mut inbox, mut written, mut to) = server();
    say(
        &mut to,
        r#"{"jsonrpc":"2.0","id":7,"method":"work/secret-canary"}"#,
    )
    .await;
    say(&mut to, r#"{"id":"req-8","method":"rm -rf","params":{}}"#).await;
    let answer = next_written(&mut written).await;
    assert_eq!(answer, refusal(json!(7), -32601, "Method not found"));
    assert!(
        !answer.to_string().contains("canary"),
        "never echoes the method"
    );
    assert_eq!(
        next_written(&mut written).await,
        refusal(json!("req-8"), -32601, "Method not found")
    );
    round_trip(&peer, &mut inbox, &mut written, &mut to, 9).await;
    assert!(inbox.try_recv().is_none(), "neither reached the inbox");
}

#[tokio::test]
async fn its_methods_are_delivered_and_answered_and_it_may_ask_the_client_too() {
    let (peer, mut inbox, mut written, mut to) = server();
    say(
        &mut to,
        r#"{"jsonrpc":"2.0","method":"work/progress","params":{"n":1}}"#,
    )
    .await;
    say(
        &mut to,
        r#"{"id":3,"method":"work/run","params":{"task":"t"}}"#,
    )
    .await;
    assert_eq!(
        inbox.recv().await.unwrap(),
        Incoming::Notification {
            method: "work/progress".into(),
            params: json!({"n": 1})
        }
    );
    assert_eq!(
        inbox.recv().await.unwrap(),
        Incoming::Request {
            id: json!(3),
            method: "work/run".into(),
            params: json!({"task": "t"})
        }
    );
    peer.respond_error(json!(3), -32602, "Invalid params")
        .await
        .unwrap();
    assert_eq!(
        next_written(&mut written).await,
        refusal(json!(3), -32602, "Invalid params")
    );
    // A server may ask the client, whose answer reaches the request, not the inbox.
    let ask = peer.request("client/approve", json!({}), SECOND);
    let answer = async {
        let asked = next_written(&mut written).await;
        assert_eq!(asked["method"], "client/approve");
        say(
            &mut to,
            &format!(r#"{{"id":{},"result":{{"yes":true}}}}"#, asked["id"]),
        )
        .await;
    };
    assert_eq!(tokio::join!(ask, answer).0.unwrap(), json!({"yes": true}));
    assert_eq!(peer.dropped(), 0);
}

#[tokio::test]
async fn a_notification_of_an_unknown_method_is_dropped_and_counted_never_answered() {
    let (peer, mut inbox, mut written, mut to) = server();
    say(
        &mut to,
        r#"{"jsonrpc":"2.0","method":"work/unknown","params":{}}"#,
    )
    .await;
    // The next line the server writes answers the next request: nothing answered the
    // notification.
    round_trip(&peer, &mut inbox, &mut written, &mut to, 1).await;
    assert_eq!(peer.dropped(), 1);
    assert!(inbox.try_recv().is_none());
}

#[tokio::test]
async fn json_that_is_no_valid_request_is_answered_invalid_request_with_its_id_if_any() {
    let (peer, mut inbox, mut written, mut to) = server();
    let cases = [
        (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"work/run","params":"s"}"#,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"work/run"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0"}"#, Value::Null),
        (r#"42"#, Value::Null),
        // A batch: not supported.
        (
            r#"[{"jsonrpc":"2.0","id":5,"method":"work/run"}]"#,
            Value::Null,
        ),
    ];
    for (line, id) in cases {
        say(&mut to, line).await;
        assert_eq!(
            next_written(&mut written).await,
            refusal(id, -32600, "Invalid Request"),
            "{line}"
        );
    }
    // Too long to read: refused without an id.
    say(
        &mut to,
        &format!(
            r#"{{"id":6,"method":"work/run","params":"{}"}}"#,
            "y".repeat(5000)
        ),
    )
    .await;
    assert_eq!(
        next_written(&mut written).await,
        refusal(Value::Null, -32600, "Invalid Request")
    );
    // Answers to nothing (an error answer like the server's own among them) are never
    // answered: two servers cannot ping-pong.
    say(&mut to, r#"{"jsonrpc":"2.0","id":9,"result":{}}"#).await;
    say(
        &mut to,
        &refusal(Value::Null, -32700, "Parse error").to_string(),
    )
    .await;
    round_trip(&peer, &mut inbox, &mut written, &mut to, 10).await;
    assert_eq!(peer.dropped(), 9);
    assert!(inbox.try_recv().is_none());
}

#[tokio::test]
async fn an_unread_server_inbox_stops_the_reader_so_the_client_blocks_on_its_pipe() {
    let (peer, mut inbox, _written, to) = server();
    assert_an_unread_inbox_blocks_the_writer(
        to,
        &mut inbox,
        |n| format!(r#"{{"id":{n},"method":"work/run","params":{{}}}}"#),
        |n, message| {
            let Incoming::Request { id, .. } = message else {
                panic!("request {n}");
            };
            assert_eq!(id, n);
        },
    )
    .await;
    drop(peer);
}
