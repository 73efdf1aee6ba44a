//! The JSON-RPC peer against a scripted peer on an in-memory pipe: correlation, notifications
//! and server requests in order, timeouts, bad lines that change nothing, and the end of the
//! peer's output.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use crate::peer::{Inbox, Incoming, JsonRpc, RpcError, RpcPeer};

const SECOND: Duration = Duration::from_secs(5);

/// A client peer and the other ends: what the client wrote (lines) and where the fake peer
/// writes.
fn pair() -> (
    RpcPeer,
    Inbox,
    tokio::io::Lines<BufReader<DuplexStream>>,
    DuplexStream,
) {
    let (client_in, peer_out) = tokio::io::duplex(1 << 16);
    let (peer_in, client_out) = tokio::io::duplex(1 << 16);
    let (peer, incoming) = RpcPeer::client(&JsonRpc, client_in, client_out, 4096);
    (peer, incoming, BufReader::new(peer_in).lines(), peer_out)
}

pub(super) async fn next_sent(lines: &mut tokio::io::Lines<BufReader<DuplexStream>>) -> Value {
    let line = lines.next_line().await.unwrap().unwrap();
    serde_json::from_str(&line).unwrap()
}

pub(super) async fn say(out: &mut DuplexStream, message: &str) {
    out.write_all(message.as_bytes()).await.unwrap();
    out.write_all(b"\n").await.unwrap();
}

#[tokio::test]
async fn answers_find_their_requests_in_any_order_and_peer_messages_arrive_in_order() {
    let (peer, mut incoming, mut sent, mut out) = pair();
    let peer = std::sync::Arc::new(peer);
    let first = tokio::spawn({
        let peer = std::sync::Arc::clone(&peer);
        async move {
            peer.request("thread/start", json!({"cwd": "/w"}), SECOND)
                .await
        }
    });
    let a = next_sent(&mut sent).await;
    assert_eq!(a["jsonrpc"], "2.0");
    assert_eq!(a["method"], "thread/start");
    let second = tokio::spawn({
        let peer = std::sync::Arc::clone(&peer);
        async move { peer.request("turn/start", json!({}), SECOND).await }
    });
    let b = next_sent(&mut sent).await;
    // The peer answers the second first, without "jsonrpc" (as Codex's app-server does), and
    // sends a notification and a request of its own in between.
    say(
        &mut out,
        &format!(r#"{{"id":{},"result":{{"turn":1}}}}"#, b["id"]),
    )
    .await;
    say(&mut out, r#"{"method":"turn/started","params":{"n":1}}"#).await;
    say(
        &mut out,
        r#"{"id":0,"method":"item/tool/call","params":{"x":true}}"#,
    )
    .await;
    say(
        &mut out,
        &format!(r#"{{"id":{},"result":{{"thread":"t1"}}}}"#, a["id"]),
    )
    .await;
    assert_eq!(second.await.unwrap().unwrap(), json!({"turn": 1}));
    assert_eq!(first.await.unwrap().unwrap(), json!({"thread": "t1"}));
    assert_eq!(
        incoming.recv().await.unwrap(),
        Incoming::Notification {
            method: "turn/started".into(),
            params: json!({"n": 1})
        }
    );
    let Incoming::Request { id, method, .. } = incoming.recv().await.unwrap() else {
        panic!("a request");
    };
    assert_eq!((id.clone(), method.as_str()), (json!(0), "item/tool/call"));
    peer.respond(id, json!({"ok": true})).await.unwrap();
    assert_eq!(next_sent(&mut sent).await["result"], json!({"ok": true}));
    assert_eq!(peer.dropped(), 0);
}

#[tokio::test]
async fn bad_lines_are_dropped_and_counted_and_errors_keep_the_peers_text_out_of_display() {
    let (peer, mut incoming, mut sent, mut out) = pair();
    let request = peer.request("thread/resume", json!({"threadId": "x"}), SECOND);
    let answer = async {
        let asked = next_sent(&mut sent).await;
        say(&mut out, "not json at all").await;
        say(&mut out, "[1,2,3]").await;
        say(&mut out, r#"{"id":999,"result":{}}"#).await;
        say(
            &mut out,
            &format!("{{\"method\":\"x\",\"params\":\"{}\"}}", "y".repeat(5000)),
        )
        .await;
        say(
            &mut out,
            &format!(
                r#"{{"id":{},"error":{{"code":-32600,"message":"no rollout found for thread id secret-thread-123"}}}}"#,
                asked["id"]
            ),
        )
        .await;
    };
    let (result, ()) = tokio::join!(request, answer);
    let err = result.unwrap_err();
    let RpcError::Remote { code, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*code, -32600);
    assert!(
        message.0.contains("no rollout found"),
        "kept for classification"
    );
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("secret-thread-123"), "{shown}");
    }
    assert_eq!(peer.dropped(), 4);
    assert!(incoming.try_recv().is_none(), "nothing from the bad lines");
    // The peer still works.
    let again = peer.request("initialize", json!({}), SECOND);
    let answer = async {
        let asked = next_sent(&mut sent).await;
        say(
            &mut out,
            &format!(r#"{{"id":{},"result":{{}}}}"#, asked["id"]),
        )
        .await;
    };
    assert_eq!(tokio::join!(again, answer).0.unwrap(), json!({}));
}

#[tokio::test]
async fn an_unanswered_request_times_out_and_a_closed_peer_fails_what_waits() {
    let (peer, mut incoming, _sent, out) = pair();
    let err = peer
        .request("turn/interrupt", json!({}), Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RpcError::Timeout {
                method: "turn/interrupt",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(peer.pending_count(), 0, "a timed-out request is forgotten");

    let waiting = peer.request("turn/start", json!({}), SECOND);
    let close = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(out);
    };
    let (result, ()) = tokio::join!(waiting, close);
    assert!(matches!(result, Err(RpcError::Closed)), "{result:?}");
    assert!(
        incoming.recv().await.is_none(),
        "the incoming channel ends with the output"
    );
    // Asked after the output ended (a process that exited at start-up), a request fails at
    // once: nobody would ever answer it, and waiting out its timeout would hide why.
    let late = peer.request("initialize", json!({}), Duration::from_secs(60));
    let late = tokio::time::timeout(Duration::from_secs(5), late).await;
    assert!(matches!(late, Ok(Err(RpcError::Closed))), "{late:?}");
}

#[tokio::test]
async fn a_write_to_a_gone_peer_fails_typed() {
    let (client_in, _peer_out) = tokio::io::duplex(64);
    let (peer_in, client_out) = tokio::io::duplex(64);
    drop(peer_in);
    let (peer, _incoming) = RpcPeer::client(&JsonRpc, client_in, client_out, 4096);
    let err = peer.notify("initialized", json!({})).await.unwrap_err();
    assert!(matches!(err, RpcError::Write(_)), "{err:?}");
}

/// Writes `LINES` lines (`line(n)`) to the peer without reading its inbox: the writer must
/// block, not be buffered without bound; then every message arrives, in order (`check`).
pub(super) async fn assert_an_unread_inbox_blocks_the_writer(
    mut out: DuplexStream,
    inbox: &mut Inbox,
    line: fn(usize) -> String,
    check: fn(usize, Incoming),
) {
    const LINES: usize = 10_000;
    let writer = tokio::spawn(async move {
        for n in 0..LINES {
            say(&mut out, &line(n)).await;
        }
        out
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !writer.is_finished(),
        "nobody reads the inbox: the writer must block, not be buffered without bound"
    );
    for n in 0..LINES {
        check(n, inbox.recv().await.expect("every message, in order"));
    }
    let _out = writer.await.unwrap();
}

#[tokio::test]
async fn an_unread_inbox_stops_the_reader_so_the_peer_blocks_on_its_pipe() {
    let (peer, mut incoming, _sent, out) = pair();
    assert_an_unread_inbox_blocks_the_writer(
        out,
        &mut incoming,
        |n| format!(r#"{{"method":"noise","params":{{"n":{n}}}}}"#),
        |n, message| {
            let Incoming::Notification { params, .. } = message else {
                panic!("notification {n}");
            };
            assert_eq!(params["n"], n);
        },
    )
    .await;
    drop(peer);
}

#[tokio::test]
async fn between_turns_the_peer_is_quiet_and_past_its_budget_it_is_ended() {
    let (peer, mut incoming, _sent, mut out) = pair();
    let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ended.clone();
    peer.on_flood(1000, move || {
        flag.store(true, std::sync::atomic::Ordering::SeqCst)
    });

    say(&mut out, r#"{"method":"during","params":{}}"#).await;
    peer.end_turn();
    // Read before the turn ended, taken after: not this turn's, nor the next one's.
    say(&mut out, r#"{"method":"leftover","params":{}}"#).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    peer.begin_turn();
    say(&mut out, r#"{"method":"next","params":{}}"#).await;
    let Some(Incoming::Notification { method, .. }) = incoming.recv().await else {
        panic!("the next turn's notification");
    };
    assert_eq!(
        method, "next",
        "nothing read before the turn began reaches it"
    );
    assert!(!peer.flooded());

    peer.end_turn();
    for _ in 0..40 {
        say(
            &mut out,
            r#"{"method":"noise","params":{"pad":"xxxxxxxxxxxxxxxx"}}"#,
        )
        .await;
    }
    for _ in 0..100 {
        if peer.flooded() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(peer.flooded(), "more than the budget while quiet");
    assert!(
        ended.load(std::sync::atomic::Ordering::SeqCst),
        "and it was ended"
    );
    assert!(incoming.try_recv().is_none(), "nothing of it was queued");
}
