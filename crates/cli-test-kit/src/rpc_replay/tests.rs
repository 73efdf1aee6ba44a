//! The two-way replay's rules, on small transcripts: ids remapped, methods and params matched,
//! server requests answered by id, and every mismatch named.
#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::{Value, json};

use super::{RpcReplay, RpcTranscript};

/// A session: a greeting, a request answered, a turn with a notification, a server request
/// whose answer releases the turn's end, and a client notification.
const SESSION: &str = r#"
{"server":{"jsonrpc":"2.0","method":"server/ready","params":{}}}
{"client":{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"version":1}}}
{"server":{"jsonrpc":"2.0","id":7,"result":{"version":1}}}
{"client":{"jsonrpc":"2.0","id":8,"method":"turn/start","params":{"text":"hello","cwd":"${ANY}"}}}
{"server":{"jsonrpc":"2.0","method":"turn/delta","params":{"text":"Hi"}}}
{"server":{"jsonrpc":"2.0","id":"ask-1","method":"approval/request","params":{"command":"ls"}}}
{"client":{"jsonrpc":"2.0","id":"ask-1","result":{"decision":"allow"}}}
{"server":{"jsonrpc":"2.0","method":"turn/delta","params":{"text":" there"}}}
{"server":{"jsonrpc":"2.0","id":8,"result":{"stop":"done"}}}
{"client":{"jsonrpc":"2.0","method":"turn/ack","params":{}}}
"#;

fn replay() -> RpcReplay {
    RpcReplay::new(&RpcTranscript::parse(SESSION).unwrap())
}

fn methods(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(response)"))
        .collect()
}

#[test]
fn a_client_whose_ids_differ_from_the_recorded_ones_still_replays() {
    let mut replay = replay();
    assert_eq!(methods(&replay.start()), ["server/ready"]);

    let answers = replay
        .receive(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"version":1}}))
        .unwrap();
    // The recorded answer to id 7 goes out under the client's id 0.
    assert_eq!(
        answers,
        [json!({"jsonrpc":"2.0","id":0,"result":{"version":1}})]
    );

    let turn = json!({"jsonrpc":"2.0","id":"c-1","method":"turn/start",
        "params":{"text":"hello","cwd":"/tmp/anywhere"}});
    let answers = replay.receive(&turn).unwrap();
    assert_eq!(methods(&answers), ["turn/delta", "approval/request"]);
    // The server request keeps its recorded id; the client answers under it.
    assert_eq!(answers[1]["id"], "ask-1");

    let answers = replay
        .receive(&json!({"jsonrpc":"2.0","id":"ask-1","result":{"decision":"allow"}}))
        .unwrap();
    assert_eq!(methods(&answers), ["turn/delta", "(response)"]);
    assert_eq!(
        answers[1]["id"], "c-1",
        "the turn's answer under the client's id"
    );
    assert_eq!(answers[1]["result"]["stop"], "done");

    assert!(
        replay.finish().is_err(),
        "the notification has not come yet"
    );
    let answers = replay
        .receive(&json!({"jsonrpc":"2.0","method":"turn/ack","params":{}}))
        .unwrap();
    assert!(answers.is_empty());
    replay.finish().unwrap();
}

#[test]
fn an_unexpected_method_fails_naming_it() {
    let mut replay = replay();
    let mismatch = replay
        .receive(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{}}))
        .unwrap_err();
    assert_eq!(mismatch.method(), Some("session/load"));
    let text = mismatch.to_string();
    assert!(text.contains("`session/load` request (id 1)"), "{text}");
    assert!(text.contains("no match"), "{text}");
    // Nothing was replayed: the recorded session is still whole.
    replay
        .receive(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"version":1}}))
        .unwrap();
}

#[test]
fn a_known_method_with_other_params_fails_showing_both() {
    let mut replay = replay();
    let mismatch = replay
        .receive(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"version":2}}))
        .unwrap_err();
    assert_eq!(mismatch.method(), Some("initialize"));
    let text = mismatch.to_string();
    assert!(text.contains(r#"sent {"version":2}"#), "{text}");
    assert!(text.contains(r#"recorded {"version":1}"#), "{text}");
}

#[test]
fn a_request_is_replayed_once() {
    let mut replay = replay();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"version":1}});
    replay.receive(&init).unwrap();
    let again = replay.receive(&init).unwrap_err();
    assert_eq!(again.method(), Some("initialize"));
}

#[test]
fn server_requests_and_the_clients_answers_are_matched_by_id() {
    let mut replay = replay();
    replay.start();
    // An answer to a request the server has not sent yet matches nothing.
    let early = replay
        .receive(&json!({"jsonrpc":"2.0","id":"ask-1","result":{"decision":"allow"}}))
        .unwrap_err();
    assert_eq!(early.method(), None);
    assert!(early.to_string().contains("did not ask"), "{early}");

    replay
        .receive(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"version":1}}))
        .unwrap();
    replay
        .receive(&json!({"jsonrpc":"2.0","id":2,"method":"turn/start",
            "params":{"text":"hello","cwd":"/w"}}))
        .unwrap();
    // An answer to another id is not the answer to the server's request.
    let wrong_id = replay
        .receive(&json!({"jsonrpc":"2.0","id":"ask-2","result":{"decision":"allow"}}))
        .unwrap_err();
    assert!(wrong_id.to_string().contains("ask-2"), "{wrong_id}");
    // An answer under the right id with another decision is named by the server's method.
    let denied = replay
        .receive(&json!({"jsonrpc":"2.0","id":"ask-1","result":{"decision":"deny"}}))
        .unwrap_err();
    assert_eq!(denied.method(), Some("approval/request"));
    assert!(
        denied.to_string().contains("`approval/request` request"),
        "{denied}"
    );
    // The recorded answer releases the rest of the turn.
    let rest = replay
        .receive(&json!({"jsonrpc":"2.0","id":"ask-1","result":{"decision":"allow"}}))
        .unwrap();
    assert_eq!(rest.len(), 2);
}

#[test]
fn requests_are_matched_by_params_not_by_order() {
    let transcript = RpcTranscript::parse(
        r#"
{"client":{"id":1,"method":"turn/start","params":{"text":"one"}}}
{"server":{"id":1,"result":{"answer":"first"}}}
{"client":{"id":2,"method":"turn/start","params":{"text":"two"}}}
{"server":{"id":2,"result":{"answer":"second"}}}
"#,
    )
    .unwrap();
    let mut replay = RpcReplay::new(&transcript);
    let second = replay
        .receive(&json!({"id":10,"method":"turn/start","params":{"text":"two"}}))
        .unwrap();
    assert_eq!(second, [json!({"id":10,"result":{"answer":"second"}})]);
    let first = replay
        .receive(&json!({"id":11,"method":"turn/start","params":{"text":"one"}}))
        .unwrap();
    assert_eq!(first, [json!({"id":11,"result":{"answer":"first"}})]);
    replay.finish().unwrap();
}

#[test]
fn finish_names_what_never_came() {
    let replay = replay();
    let missing = replay.finish().unwrap_err();
    assert_eq!(missing.method(), Some("initialize"));
    let text = missing.to_string();
    assert!(text.contains("`initialize` request (id 7)"), "{text}");
    assert!(text.contains("`turn/ack` notification"), "{text}");
}

#[test]
fn a_line_that_is_no_transcript_line_is_refused_with_its_number() {
    for (text, reason) in [
        (
            "{\"client\":{\"id\":1,\"method\":\"a\"}}\nnot json",
            "line 2: not JSON",
        ),
        (r#"{"client":{},"server":{}}"#, "line 1: not one"),
        (r#"{"peer":{"id":1}}"#, "line 1: not one"),
        (
            r#"{"client":{"params":{}}}"#,
            "line 1: the client message is not JSON-RPC",
        ),
        (
            r#"{"client":{"id":1}}"#,
            "line 1: the client message is not JSON-RPC",
        ),
    ] {
        let error = RpcTranscript::parse(text).unwrap_err().to_string();
        assert!(error.starts_with(reason), "{text}: {error}");
    }
}

#[test]
fn the_client_sending_no_json_rpc_is_a_mismatch() {
    let mut replay = replay();
    let mismatch = replay.receive(&json!([1, 2])).unwrap_err();
    assert!(mismatch.to_string().contains("no JSON-RPC"), "{mismatch}");
}
