//! Serve mode: a resident fake that answers stdin lines (like `codex app-server`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fake_cli::{LineRule, Rule, Scenario, read_invocations, read_served_lines};
use serde_json::{Value, json};

use crate::support::Run;

/// How long a test waits for one line or for the exit before failing.
const WAIT: Duration = Duration::from_secs(20);

/// A running fake in serve mode: stdin kept open, stdout read line by line on a thread so a
/// missing answer fails the test instead of hanging it. Killed on drop.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(run: &Run, args: &[&str]) -> Self {
        let mut child = run
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn line(&self) -> String {
        self.lines.recv_timeout(WAIT).unwrap()
    }

    fn json(&self) -> Value {
        let line = self.line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Closes stdin.
    fn close(&mut self) {
        self.stdin = None;
    }

    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the fake did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether stdout ended (the fake and everything holding its stdout are gone).
    fn stdout_ended(&self) -> bool {
        matches!(
            self.lines.recv_timeout(WAIT),
            Err(mpsc::RecvTimeoutError::Disconnected)
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && text
            .chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
}

#[test]
fn answers_by_id_with_params_session_count_and_once_rules() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let served = dir.path().join("served.txt");
    let scenario = Scenario::new()
        .record(&record)
        .serve_record(&served)
        .rule(Rule::when(["app-server"]).stdout(r#"{"ready":"${SESSION}","id":${ID}}"#))
        .serve(
            LineRule::when([r#""method":"initialize""#])
                .stdout(r#"{"id":${ID},"result":{},"pid":${PID},"count":${COUNT}}"#),
        )
        .serve(
            LineRule::when([r#""method":"turn/start""#])
                .once()
                .stdout(
                    r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","session":"${SESSION}","text":"${PARAM:input.0.text}"}}"#,
                )
                .stdout(r#"{"id":${ID},"result":{"first":true,"count":${COUNT}}}"#),
        )
        .serve(
            LineRule::when([r#""method":"turn/start""#]).stdout(
                r#"{"id":${ID},"result":{"first":false,"count":${COUNT},"session":"${SESSION}","missing":"${PARAM:nope.0}","number":"${PARAM:n}"}}"#,
            ),
        )
        .serve(LineRule::when(["not json"]).stdout(r#"{"id":${ID},"x":"${PARAM:x}"}"#));
    let run = Run::new(&scenario);
    let mut server = Server::start(&run, &["app-server", "--listen", "stdio://"]);

    // The argv rule runs first, before any line: no id yet.
    let ready = server.json();
    let session = ready["ready"].as_str().unwrap().to_owned();
    assert!(is_uuid(&session), "{session}");
    assert_eq!(ready["id"], Value::Null);

    let initialize = r#"{"id":1,"method":"initialize","params":{"clientInfo":{}}}"#;
    server.send(initialize);
    let answer = server.json();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["pid"], server.child.id());
    assert_eq!(answer["count"], 1);

    let prompt = "say \"hi\"\n\tand \\ bye ✓";
    let turn = json!({
        "id": "a", "method": "turn/start",
        "params": {"threadId": "th-1", "input": [{"type": "text", "text": prompt}], "n": 5},
    })
    .to_string();
    server.send(&turn);
    let notification = server.json();
    assert_eq!(notification["method"], "turn/started");
    assert_eq!(notification["params"]["threadId"], "th-1");
    assert_eq!(notification["params"]["session"], session.as_str());
    assert_eq!(notification["params"]["text"], prompt);
    let answer = server.json();
    assert_eq!(answer["id"], "a");
    assert_eq!(answer["result"], json!({"first": true, "count": 2}));

    // A malformed line is recorded, matched by substring, and answered with a null id.
    let malformed = r#"not json {"id":7,"#;
    server.send(malformed);
    assert_eq!(server.json(), json!({"id": null, "x": ""}));
    // A line no rule matches gets no answer: the next answer is the next request's.
    let unmatched = r#"{"id":8,"method":"thread/start"}"#;
    server.send(unmatched);

    // The once rule is spent: the second turn gets the other rule's answer.
    let second = r#"{"id":2,"method":"turn/start","params":{"threadId":"th-1","n":5}}"#;
    server.send(second);
    let answer = server.json();
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"],
        json!({"first": false, "count": 5, "session": session, "missing": "", "number": ""})
    );

    server.close();
    assert_eq!(server.wait().code(), Some(0));
    assert!(server.stdout_ended());
    assert_eq!(
        read_served_lines(&served).unwrap(),
        [initialize, turn.as_str(), malformed, unmatched, second]
    );
    let runs = read_invocations(&record).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].argv, ["app-server", "--listen", "stdio://"]);
    assert_eq!(runs[0].stdin, "");
}

#[test]
fn any_matches_every_line_and_a_last_line_without_newline_counts() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.txt");
    let scenario = Scenario::new()
        .serve_record(&served)
        .serve(LineRule::any().stdout("${COUNT}:${ID}").stderr("seen"));
    let run = Run::new(&scenario);
    let out = run.with_stdin(&[], "{\"id\":\"x\"}\n\n[1]\n{\"id\":3}");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "1:\"x\"\n2:null\n3:null\n4:3\n"
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "seen\n".repeat(4));
    assert_eq!(
        read_served_lines(&served).unwrap(),
        ["{\"id\":\"x\"}", "", "[1]", "{\"id\":3}"]
    );
}

#[test]
fn a_step_can_exit_or_crash_the_server() {
    let scenario = Scenario::new()
        .serve(LineRule::when(["ping"]).stdout("pong ${COUNT}"))
        .serve(LineRule::when(["exit"]).stdout("bye").exit(3))
        .serve(LineRule::when(["crash"]).kill_self());
    let run = Run::new(&scenario);

    let mut server = Server::start(&run, &[]);
    server.send("ping");
    assert_eq!(server.line(), "pong 1");
    server.send("exit");
    assert_eq!(server.line(), "bye");
    assert_eq!(server.wait().code(), Some(3));

    let mut server = Server::start(&run, &[]);
    server.send("ping");
    assert_eq!(server.line(), "pong 1");
    server.send("crash");
    assert_eq!(server.wait().signal(), Some(9));
}

#[test]
fn the_exit_at_eof_can_be_delayed() {
    let scenario = Scenario::new()
        .serve_exit_delay_ms(300)
        .serve(LineRule::any().stdout("ok"));
    let run = Run::new(&scenario);
    let mut server = Server::start(&run, &[]);
    server.send("x");
    assert_eq!(server.line(), "ok");
    let closed = Instant::now();
    server.close();
    assert_eq!(server.wait().code(), Some(0));
    assert!(closed.elapsed() >= Duration::from_millis(300));
}

#[test]
fn version_is_answered_without_serving() {
    let scenario = Scenario::new()
        .version("codex-cli 0.169.0")
        .serve(LineRule::any().stdout("served"));
    let run = Run::new(&scenario);
    // Stdin stays open: the fake must not wait for it.
    let mut server = Server::start(&run, &["--version"]);
    assert_eq!(server.line(), "codex-cli 0.169.0");
    assert_eq!(server.wait().code(), Some(0));
}

#[test]
fn without_serve_rules_the_serve_fields_are_inert_and_templates_stay() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.txt");
    let scenario = Scenario::new()
        .serve_record(&served)
        .rule(Rule::any().stdout("${ID} ${PID} ${SESSION} ${COUNT} ${PARAM:x} [${STDIN}]"));
    let run = Run::new(&scenario);
    let out = run.with_stdin(&[], "read to eof\n");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "${ID} ${PID} ${SESSION} ${COUNT} ${PARAM:x} [read to eof\\n]\n"
    );
    assert!(!served.exists());
}
