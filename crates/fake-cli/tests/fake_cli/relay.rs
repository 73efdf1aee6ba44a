//! Relay mode: the fake copies its stdio to a Unix socket whose peer, in the test process,
//! answers.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::process::Stdio;

use fake_cli::{BAD_SCENARIO_EXIT, LineRule, Rule, Scenario, read_invocations};

use crate::support::{Run, stderr, stdout};

#[test]
fn lines_reach_the_sockets_peer_and_its_answers_reach_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("relay.sock");
    let record = dir.path().join("record.jsonl");
    let listener = UnixListener::bind(&socket).unwrap();
    // The peer: answers each line with its length, then closes at the driver's EOF.
    let peer = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut answers = stream.try_clone().unwrap();
        let mut received = Vec::new();
        for line in BufReader::new(stream).lines() {
            let line = line.unwrap();
            writeln!(answers, r#"{{"len":{}}}"#, line.len()).unwrap();
            received.push(line);
        }
        received
    });
    let scenario = Scenario::new()
        .record(&record)
        .rule(Rule::when(["serve"]).stdout("started"))
        .relay(&socket);
    let run = Run::new(&scenario);
    let mut child = run
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap()).lines();
    // The argv rule's steps come first; then each line is answered before the next is sent,
    // as a resident protocol waits for its answers.
    assert_eq!(answers.next().unwrap().unwrap(), "started");
    writeln!(stdin, "one").unwrap();
    assert_eq!(answers.next().unwrap().unwrap(), r#"{"len":3}"#);
    writeln!(stdin, "three").unwrap();
    assert_eq!(answers.next().unwrap().unwrap(), r#"{"len":5}"#);
    drop(stdin);
    assert!(answers.next().is_none(), "stdout ends with the relay");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(peer.join().unwrap(), ["one", "three"]);
    // Relay mode reads no stdin into the record: it went to the peer.
    assert_eq!(read_invocations(&record).unwrap()[0].stdin, "");
}

/// Runs `scenario` and asserts that the fake refused it, with `needle` in its message.
fn assert_refused(scenario: &Scenario, needle: &str) {
    let out = Run::new(scenario).output(&["serve"]);
    assert_eq!(out.status.code(), Some(BAD_SCENARIO_EXIT));
    assert!(stderr(&out).contains(needle), "{}", stderr(&out));
}

#[test]
fn a_missing_socket_is_a_bad_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Scenario::new().relay(dir.path().join("absent.sock"));
    assert_refused(&scenario, "cannot connect to");
}

#[test]
fn relaying_and_serving_at_once_is_a_bad_scenario() {
    let scenario = Scenario::new()
        .relay("/nonexistent.sock")
        .serve(LineRule::any().stdout("x"));
    assert_refused(&scenario, "relays or serves");
}

#[test]
fn the_version_probe_is_not_relayed() {
    let scenario = Scenario::new()
        .version("fake 1.0.0")
        .relay("/nonexistent.sock");
    let out = Run::new(&scenario).output(&["--version"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "fake 1.0.0\n");
}
