//! `agentctl acp` as an editor sees it: the agent is a child process on a pipe, driven by a
//! client built on the maintained ACP crate (`agent-client-protocol`), with the reference
//! runtime (`/tool <action> <name>` prompts make it ask for approvals). Restarts are a killed
//! process and a new one on the same store.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EnvVariable, HttpHeader, InitializeRequest,
    ListSessionsRequest, McpServer, McpServerHttp, McpServerStdio, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, SessionId, SessionNotification, StopReason,
    TextContent,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::Value;
use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};

/// How the editor answers a permission request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Answer {
    Allow,
    Reject,
    /// Cancels the turn (`session/cancel`), then answers the request as cancelled, as ACP
    /// asks of a client.
    CancelTurn,
    /// Allows, after this many milliseconds.
    LateAllow(u64),
}

/// What the editor saw: every `session/update` as JSON, and the permission requests' answers
/// it still has to give (none left rejects).
#[derive(Clone, Default)]
pub(crate) struct Editor {
    pub(crate) updates: Arc<Mutex<Vec<Value>>>,
    pub(crate) answers: Arc<Mutex<VecDeque<Answer>>>,
    pub(crate) asked: Arc<Mutex<usize>>,
}

impl Editor {
    pub(crate) fn text(&self) -> String {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    fn kinds(&self) -> Vec<String> {
        self.updates
            .lock()
            .unwrap()
            .iter()
            .filter_map(|u| u["sessionUpdate"].as_str().map(str::to_owned))
            .collect()
    }

    pub(crate) fn clear(&self) {
        self.updates.lock().unwrap().clear();
    }
}

/// What the editor read from one agent process: every byte of its stdout (the protocol
/// messages) and of its stderr (the logs, echoed to the test's stderr as they come).
#[derive(Clone, Default)]
pub(crate) struct Transcript {
    pub(crate) stdout: Arc<Mutex<Vec<u8>>>,
    pub(crate) stderr: Arc<Mutex<Vec<u8>>>,
}

/// Starts `agentctl acp` on `root`'s store with the reference runtime and `args`, runs
/// `script` as the editor, then kills the agent (a restart is the next call).
async fn with_agent<F>(root: &Path, args: &[&str], editor: &Editor, script: F)
where
    F: AsyncFnOnce(ConnectionTo<Agent>) -> agent_client_protocol::Result<()> + Send,
{
    let mut command = acp_command(root);
    command.args(["--runtime", "reference"]).args(args);
    drive(command, editor, &Transcript::default(), script).await;
}

/// `agentctl acp` on the SQLite store `root/threads.sqlite3`, isolated in `root`; the caller
/// adds the runtime and the other options.
pub(crate) fn acp_command(root: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentctl"));
    command
        .env("XDG_DATA_HOME", root.join("xdg-data"))
        .env("HOME", root.join("home"))
        .arg("--store")
        .arg(format!("sqlite:{}", root.join("threads.sqlite3").display()))
        .arg("acp");
    command
}

/// Copies `from` into `to` (when given) and `seen`, as it comes.
async fn tee<R, W>(mut from: R, mut to: Option<W>, seen: Arc<Mutex<Vec<u8>>>, echo: bool)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        seen.lock().unwrap().extend_from_slice(&buf[..n]);
        if echo {
            eprint!("{}", String::from_utf8_lossy(&buf[..n]));
        }
        if let Some(to) = to.as_mut()
            && to.write_all(&buf[..n]).await.is_err()
        {
            break;
        }
    }
}

/// Spawns `command` (an `agentctl acp`), runs `script` as the editor over its stdio, recording
/// in `transcript` everything the agent wrote, then kills the agent.
pub(crate) async fn drive<F>(
    mut command: tokio::process::Command,
    editor: &Editor,
    transcript: &Transcript,
    script: F,
) where
    F: AsyncFnOnce(ConnectionTo<Agent>) -> agent_client_protocol::Result<()> + Send,
{
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap().compat_write();
    // The client reads the agent's stdout through a pipe that records every byte.
    let (client_end, tee_end) = tokio::io::duplex(1 << 16);
    let stdout_tee = tokio::spawn(tee(
        child.stdout.take().unwrap(),
        Some(tee_end),
        Arc::clone(&transcript.stdout),
        false,
    ));
    let stderr_tee = tokio::spawn(tee(
        child.stderr.take().unwrap(),
        None::<tokio::io::DuplexStream>,
        Arc::clone(&transcript.stderr),
        true,
    ));
    let stdout = client_end.compat();
    let updates = Arc::clone(&editor.updates);
    let answers = Arc::clone(&editor.answers);
    let asked = Arc::clone(&editor.asked);
    Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                updates
                    .lock()
                    .unwrap()
                    .push(serde_json::to_value(&notification.update).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, cx: ConnectionTo<Agent>| {
                *asked.lock().unwrap() += 1;
                let answer = answers
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(Answer::Reject);
                let id = match answer {
                    Answer::Allow => "allow_once",
                    Answer::Reject => "reject_once",
                    Answer::LateAllow(ms) => {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        "allow_once"
                    }
                    Answer::CancelTurn => {
                        cx.send_notification(CancelNotification::new(request.session_id.clone()))?;
                        return responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Cancelled,
                        ));
                    }
                };
                assert!(request.options.iter().any(|o| &*o.option_id.0 == id));
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        id.to_owned(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            ByteStreams::new(stdin, stdout),
            async |cx: ConnectionTo<Agent>| {
                let init = cx
                    .send_request(InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let caps = serde_json::to_value(&init.agent_capabilities).unwrap();
                assert_eq!(caps["loadSession"], false);
                assert!(caps["sessionCapabilities"]["resume"].is_object(), "{caps}");
                assert!(caps["sessionCapabilities"]["list"].is_object(), "{caps}");
                assert_eq!(caps["mcpCapabilities"]["http"], true);
                assert_eq!(caps["mcpCapabilities"]["sse"], true);
                script(cx).await
            },
        )
        .await
        .unwrap();
    child.kill().await.unwrap();
    stdout_tee.await.unwrap();
    stderr_tee.await.unwrap();
}

pub(crate) fn prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(
        session.clone(),
        vec![ContentBlock::Text(TextContent::new(text.to_owned()))],
    )
}

fn server(name: &str, port: u16, token: &str) -> McpServer {
    server_at(name, &format!("http://127.0.0.1:{port}/mcp"), token)
}

/// The editor's HTTP MCP server `name` at `url`, with `token` as its bearer.
pub(crate) fn server_at(name: &str, url: &str, token: &str) -> McpServer {
    McpServer::Http(
        McpServerHttp::new(name.to_owned(), url.to_owned()).headers(vec![HttpHeader::new(
            "Authorization".to_owned(),
            format!("Bearer {token}"),
        )]),
    )
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn workspace(root: &Path) -> PathBuf {
    let dir = root.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn new_prompt_permissions_and_list_over_a_pipe() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let cwd = workspace(root);
    let editor = Editor::default();
    editor
        .answers
        .lock()
        .unwrap()
        .extend([Answer::Allow, Answer::Reject]);
    let seen = editor.clone();
    with_agent(root, &["--ask", "commands"], &editor, async |cx| {
        let session = cx
            .send_request(NewSessionRequest::new(cwd.clone()))
            .block_task()
            .await?
            .session_id;
        let answer = cx
            .send_request(prompt(&session, "hello"))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert!(
            seen.text().contains("reference turn 1: hello"),
            "{}",
            seen.text()
        );
        seen.clear();

        // Approved: the tool runs; denied: it fails. Each request is answered once.
        let answer = cx
            .send_request(prompt(&session, "/tool commands ls -la"))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let updates = seen.updates.lock().unwrap().clone();
        assert!(
            updates
                .iter()
                .any(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed"),
            "{updates:?}"
        );
        seen.clear();
        cx.send_request(prompt(&session, "/tool commands rm -rf x"))
            .block_task()
            .await?;
        let updates = seen.updates.lock().unwrap().clone();
        assert!(
            updates
                .iter()
                .any(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed"),
            "{updates:?}"
        );
        assert_eq!(*seen.asked.lock().unwrap(), 2);
        assert!(seen.kinds().contains(&"tool_call".to_owned()));

        let listed = cx
            .send_request(ListSessionsRequest::new().cwd(cwd.clone()))
            .block_task()
            .await?;
        assert_eq!(listed.sessions.len(), 1);
        assert_eq!(listed.sessions[0].session_id, session);
        let elsewhere = cx
            .send_request(ListSessionsRequest::new().cwd(root.to_path_buf()))
            .block_task()
            .await?;
        assert!(elsewhere.sessions.is_empty());
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_ends_the_turn_and_a_late_answer_is_a_denial() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let cwd = workspace(root);
    let editor = Editor::default();
    editor
        .answers
        .lock()
        .unwrap()
        .extend([Answer::CancelTurn, Answer::LateAllow(2500)]);
    let seen = editor.clone();
    let args = ["--ask", "commands", "--approval-timeout", "1"];
    with_agent(root, &args, &editor, async |cx| {
        let session = cx
            .send_request(NewSessionRequest::new(cwd.clone()))
            .block_task()
            .await?
            .session_id;
        // The turn waits on its permission request; the editor cancels it.
        let answer = cx
            .send_request(prompt(&session, "/tool commands make"))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::Cancelled);
        seen.clear();
        // The session lives on. An answer after the timeout is no approval: the tool fails.
        let answer = cx
            .send_request(prompt(&session, "/tool commands make"))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let updates = seen.updates.lock().unwrap().clone();
        assert!(
            updates
                .iter()
                .any(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed"),
            "{updates:?}"
        );
        assert!(
            !updates.iter().any(|u| u["status"] == "completed"),
            "{updates:?}"
        );
        assert_eq!(*seen.asked.lock().unwrap(), 2);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_with_the_editor_mcp_server_on_a_new_port_and_token_resumes() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let cwd = workspace(root);
    let editor = Editor::default();
    let seen = editor.clone();
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let kept = Arc::clone(&session);
    with_agent(root, &["--mcp-identity", "tools"], &editor, async |cx| {
        let id = cx
            .send_request(NewSessionRequest::new(cwd.clone()).mcp_servers(vec![server(
                "tools",
                4101,
                "token-one",
            )]))
            .block_task()
            .await?
            .session_id;
        cx.send_request(prompt(&id, "remember the first turn"))
            .block_task()
            .await?;
        *kept.lock().unwrap() = Some(id);
        Ok(())
    })
    .await;
    let id = session.lock().unwrap().clone().unwrap();
    seen.clear();

    // The agent was killed; a new one on the same store, the server on a new port and token.
    with_agent(root, &["--mcp-identity", "tools"], &editor, async |cx| {
        // A changed set is refused, naming no secret: one added, one renamed, one removed.
        for servers in [
            vec![
                server("tools", 4102, "token-two"),
                server("more", 4103, "t"),
            ],
            vec![server("renamed", 4102, "token-two")],
            vec![],
        ] {
            let refused = cx
                .send_request(
                    ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(servers),
                )
                .block_task()
                .await
                .unwrap_err();
            assert!(refused.message.contains("drifted"), "{}", refused.message);
            assert!(!refused.message.contains("token"), "{}", refused.message);
        }
        cx.send_request(
            ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![server(
                "tools",
                4102,
                "token-two",
            )]),
        )
        .block_task()
        .await?;
        cx.send_request(prompt(&id, "and the second"))
            .block_task()
            .await?;
        let text = seen.text();
        assert!(text.contains("reference turn 2"), "{text}");
        assert!(text.contains("remember the first turn"), "{text}");
        Ok(())
    })
    .await;

    // No token reached the editor, the session map or the thread store.
    let updates = serde_json::to_string(&*seen.updates.lock().unwrap()).unwrap();
    assert!(!updates.contains("token-"), "{updates}");
    for file in walk(root) {
        let bytes = std::fs::read(&file).unwrap();
        let name = file.to_string_lossy();
        if name.contains("acp-sessions") || name.contains("threads.sqlite3") {
            assert!(
                !contains(&bytes, b"token-one") && !contains(&bytes, b"token-two"),
                "{name}"
            );
        }
    }

    // Without a semantic identity the default is exact: a new port refuses.
    with_agent(root, &[], &editor, async |cx| {
        let refused = cx
            .send_request(
                ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![server(
                    "tools",
                    4104,
                    "token-three",
                )]),
            )
            .block_task()
            .await
            .unwrap_err();
        assert!(refused.message.contains("drifted"), "{}", refused.message);
        Ok(())
    })
    .await;
}

fn stdio(name: &str, root: &str, token: &str) -> McpServer {
    McpServer::Stdio(
        McpServerStdio::new(name.to_owned(), "/usr/bin/files-mcp")
            .args(vec!["--root".to_owned(), root.to_owned()])
            .env(vec![EnvVariable::new(
                "FILES_TOKEN".to_owned(),
                token.to_owned(),
            )]),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_stdio_server_reaches_the_run_and_its_env_secret_stays_out() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let cwd = workspace(root);
    let editor = Editor::default();
    let seen = editor.clone();
    let refusals: Arc<Mutex<Vec<String>>> = Arc::default();
    let said = Arc::clone(&refusals);
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let kept = Arc::clone(&session);
    let with_headers = |headers: &[(&str, &str)]| {
        let headers = headers
            .iter()
            .map(|(name, value)| HttpHeader::new((*name).to_owned(), (*value).to_owned()))
            .collect();
        McpServer::Http(
            McpServerHttp::new("docs".to_owned(), "http://127.0.0.1:4201/mcp".to_owned())
                .headers(headers),
        )
    };
    let plain = |name: &str, value: &str| with_headers(&[(name, value)]);
    with_agent(root, &["--mcp-identity", "files"], &editor, async |cx| {
        // Every header reaches the run as a secret; one given twice (in any case) or with a
        // line break in its value is refused, naming the header, never its value.
        for headers in [
            [
                ("X-Api-Key", "stdio-secret-key"),
                ("x-api-key", "stdio-secret-key"),
            ],
            [
                ("X-Api-Key", "stdio-secret-key\r\nX-Evil: 1"),
                ("X-Trace", "t"),
            ],
        ] {
            let refused = cx
                .send_request(
                    NewSessionRequest::new(cwd.clone()).mcp_servers(vec![with_headers(&headers)]),
                )
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(i32::from(refused.code), -32602, "{}", refused.message);
            let message = refused.message.to_ascii_lowercase();
            assert!(message.contains("x-api-key"), "{}", refused.message);
            said.lock().unwrap().push(refused.message);
        }
        let id = cx
            .send_request(NewSessionRequest::new(cwd.clone()).mcp_servers(vec![
                stdio("files", "/w", "stdio-secret-one"),
                plain("X-Workspace", "acme"),
            ]))
            .block_task()
            .await?
            .session_id;
        cx.send_request(prompt(&id, "use the files server"))
            .block_task()
            .await?;
        *kept.lock().unwrap() = Some(id);
        Ok(())
    })
    .await;
    let id = session.lock().unwrap().clone().unwrap();

    // After a restart: the stdio server is part of the run's identity. With a semantic
    // identity a rotated env value resumes and other args are drift; the `docs` server kept
    // the exact default, and it did not change.
    with_agent(root, &["--mcp-identity", "files"], &editor, async |cx| {
        let refused = cx
            .send_request(
                ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![
                    stdio("files", "/elsewhere", "stdio-secret-two"),
                    plain("X-Workspace", "acme"),
                ]),
            )
            .block_task()
            .await
            .unwrap_err();
        assert!(refused.message.contains("drifted"), "{}", refused.message);
        said.lock().unwrap().push(refused.message);
        cx.send_request(
            ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![
                stdio("files", "/w", "stdio-secret-two"),
                plain("X-Workspace", "acme"),
            ]),
        )
        .block_task()
        .await?;
        cx.send_request(prompt(&id, "and again"))
            .block_task()
            .await?;
        assert!(seen.text().contains("reference turn 2"), "{}", seen.text());
        Ok(())
    })
    .await;

    // Without the identity the default is exact: the env value is a secret binding of the
    // run, so a rotated one is drift.
    with_agent(root, &[], &editor, async |cx| {
        let refused = cx
            .send_request(
                ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![
                    stdio("files", "/w", "stdio-secret-three"),
                    plain("X-Workspace", "acme"),
                ]),
            )
            .block_task()
            .await
            .unwrap_err();
        assert!(refused.message.contains("drifted"), "{}", refused.message);
        said.lock().unwrap().push(refused.message);
        Ok(())
    })
    .await;

    // No env value or refused header value reached the editor, the session map or the store.
    let updates = serde_json::to_string(&*seen.updates.lock().unwrap()).unwrap();
    let refusals = refusals.lock().unwrap().join("\n");
    for text in [&updates, &refusals] {
        assert!(!text.contains("stdio-secret"), "{text}");
    }
    for file in walk(root) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !contains(&bytes, b"stdio-secret"),
            "{}",
            file.to_string_lossy()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_never_prompted_resumes_empty_and_an_unknown_one_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let cwd = workspace(root);
    let editor = Editor::default();
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let kept = Arc::clone(&session);
    with_agent(root, &[], &editor, async |cx| {
        let id = cx
            .send_request(NewSessionRequest::new(cwd.clone()))
            .block_task()
            .await?
            .session_id;
        *kept.lock().unwrap() = Some(id);
        Ok(())
    })
    .await;
    let id = session.lock().unwrap().clone().unwrap();
    let seen = editor.clone();
    with_agent(root, &[], &editor, async |cx| {
        cx.send_request(ResumeSessionRequest::new(id.clone(), cwd.clone()))
            .block_task()
            .await?;
        cx.send_request(prompt(&id, "first")).block_task().await?;
        assert!(
            seen.text().contains("reference turn 1: first"),
            "{}",
            seen.text()
        );
        let unknown = cx
            .send_request(ResumeSessionRequest::new(
                "sess-00000000000000000000000000000000".to_owned(),
                cwd.clone(),
            ))
            .block_task()
            .await
            .unwrap_err();
        assert!(
            unknown.message.contains("unknown session"),
            "{}",
            unknown.message
        );
        Ok(())
    })
    .await;
}

#[test]
fn malformed_unknown_and_out_of_order_messages_get_errors_and_the_agent_lives_on() {
    use std::io::{BufRead as _, Write as _};
    let root = tempfile::tempdir().unwrap();
    let mut child = crate::support::on_store(root.path())
        .args(["acp", "--runtime", "reference"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    assert_eq!(exchange("not json")["error"]["code"], -32700);
    assert_eq!(
        exchange(r#"{"jsonrpc":"2.0","id":1,"method":"nope/never"}"#)["error"]["code"],
        -32601
    );
    let early = exchange(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
    );
    assert_eq!(early["error"]["code"], -32600);
    let early = exchange(
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"x","prompt":[]}}"#,
    );
    assert_eq!(early["error"]["code"], -32600);
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], 1);
    let bad = exchange(r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":7}}"#);
    assert_eq!(bad["error"]["code"], -32602);
    let unopened = exchange(
        r#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[]}}"#,
    );
    assert_eq!(unopened["error"]["code"], -32002);
    let again = exchange(
        r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    assert_eq!(again["error"]["code"], -32600);
    let listed = exchange(r#"{"jsonrpc":"2.0","id":8,"method":"session/list","params":{}}"#);
    assert_eq!(listed["result"]["sessions"], serde_json::json!([]));
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
