//! `agentctl acp --runtime codex`, the real Codex CLI against the test kit's mock model,
//! offline, driven by the ACP client of `acp_serve`: a session with the editor's MCP server
//! (a real bearer-checking server, the hosted `ping` tool), a turn that calls it, a killed
//! agent, a new one with the server on a new port and token, `session/resume` and a turn that
//! continues Codex's own session and calls the new server. Then a canary scan of everything
//! the editor read, the agent's stderr (TRACE), every process's command line and every file
//! of the test. Without `CODEX_BIN` it prints `SKIPPED` locally and fails under CI.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agent::tools::{HostedTool, ToolOutput, ToolSet};
use agent_client_protocol::v1::schema::{
    NewSessionRequest, ResumeSessionRequest, SessionId, StopReason,
};
use hosted_tools::HostedToolsProvider;
use run_service::{ExposeSecret as _, RunId, RunServiceProvider as _};
use serde_json::json;
use test_kit::responses::MockResponses;
use test_kit::restart::{ArgvWatch, Secrets, files_under, watch_argv};
use test_kit::{Reply, Script};

use crate::acp_serve::{Answer, Editor, Transcript, acp_command, drive, prompt, server_at};

/// Shaped like an API key, so the TRACE logs would show it if anything logged it.
pub(crate) const MODEL_KEY: &str = "sk-acp-canary-not-a-real-key-0123456789abcdef";
const FIRST_PROMPT: &str = "Please call ping with the text one.";
const FIRST_ANSWER: &str = "First answer: the tool said pong.";
const SECOND_PROMPT: &str = "Please call ping with the text two.";
const SECOND_ANSWER: &str = "Second answer: pong again.";

/// The editor's MCP server: the hosted `ping` tool of editor "instance" `label` on its own
/// port with its own token; its calls are recorded as `(label, text)`.
pub(crate) struct EditorServer {
    pub(crate) provider: HostedToolsProvider,
    pub(crate) url: String,
    pub(crate) token: String,
}

impl EditorServer {
    pub(crate) async fn start(
        label: &'static str,
        calls: &Arc<Mutex<Vec<(String, String)>>>,
    ) -> Self {
        let calls = Arc::clone(calls);
        let ping = HostedTool::new(
            "ping",
            "Answers pong with the text it was given.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            move |call| {
                let calls = Arc::clone(&calls);
                async move {
                    let text = call.arguments["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    calls
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((label.to_owned(), text.clone()));
                    Ok(ToolOutput::text(format!("pong from {label}: {text}")))
                }
            },
        );
        let provider = HostedToolsProvider::new(ToolSet::new([ping.with_revision("1")]).unwrap());
        let attachment = provider.attach_run(&RunId::new(label)).await.unwrap();
        let service = &attachment.services[0];
        let url = service.url.clone().unwrap();
        let token = service.secret_env[0].value().expose_secret().to_owned();
        EditorServer {
            provider,
            url,
            token,
        }
    }
}

/// What a real-Codex ACP test sets up: the mock model scripted for two turns, each calling the
/// editor's `ping` (`one`, then `two`) and answering `first` then `second`; a temporary root
/// with the workspace; the recorded tool calls; the secrets to scan for (the model key
/// first); an editor allowing every permission request; the transcript; and the argv watcher.
pub(crate) struct Scene {
    pub(crate) model: MockResponses,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) cwd: std::path::PathBuf,
    pub(crate) calls: Arc<Mutex<Vec<(String, String)>>>,
    pub(crate) secrets: Secrets,
    pub(crate) editor: Editor,
    pub(crate) transcript: Transcript,
    pub(crate) argv: ArgvWatch,
}

impl Scene {
    pub(crate) fn new(first: &str, second: &str) -> Self {
        let model = MockResponses::start(
            Script::new()
                .then(Reply::tool_call("tools", "ping", json!({"text": "one"})))
                .then(Reply::text(first))
                .then(Reply::tool_call("tools", "ping", json!({"text": "two"})))
                .then(Reply::text(second)),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let secrets = Secrets::new([MODEL_KEY.to_owned()]);
        let editor = Editor::default();
        // Any permission request (the MCP tool call, when the policy asks) is allowed.
        editor.answers.lock().unwrap().extend([Answer::Allow; 8]);
        // Every process's command line is sampled while Codex runs.
        let argv = watch_argv("exec --json", secrets.clone());
        Scene {
            model,
            dir,
            cwd,
            calls: Arc::default(),
            secrets,
            editor,
            transcript: Transcript::default(),
            argv,
        }
    }
}

/// `agentctl acp` with the real Codex on the mock model at `model_url`, TRACE logs.
pub(crate) fn codex_acp(root: &Path, binary: &Path, model_url: &str) -> tokio::process::Command {
    let mut command = acp_command(root);
    command
        .args(["--runtime", "codex", "--model", "mock-model"])
        .arg("--runtime-bin")
        .arg(binary)
        .args(["--provider-url", model_url])
        .args(["--provider-key-env", "MOCK_MODEL_KEY"])
        .args(["--namespace", "user:agentctl-test", "--base"])
        .arg(root.join("rt"))
        .args(["--mcp-identity", "tools"])
        .env("MOCK_MODEL_KEY", MODEL_KEY)
        .env("RUST_LOG", "trace");
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_behind_acp_resumes_after_a_restart_with_the_editor_mcp_server_moved() {
    let Some(binary) = test_kit::real_cli::binary("CODEX_BIN", "agentctl acp --runtime codex")
    else {
        return;
    };
    // Each turn: the model calls the editor's `ping`, then answers.
    let Scene {
        model,
        dir,
        cwd,
        calls,
        secrets,
        editor,
        transcript,
        argv,
    } = Scene::new(FIRST_ANSWER, SECOND_ANSWER);
    let root = dir.path();
    let seen = editor.clone();

    // Editor 1: its server on one port and token.
    let first = EditorServer::start("editor-1", &calls).await;
    secrets.push(first.token.clone());
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let kept = Arc::clone(&session);
    let command = codex_acp(root, &binary, &model.base_url());
    drive(command, &editor, &transcript, async |cx| {
        let id = cx
            .send_request(
                NewSessionRequest::new(cwd.clone()).mcp_servers(vec![server_at(
                    "tools",
                    &first.url,
                    &first.token,
                )]),
            )
            .block_task()
            .await?
            .session_id;
        let answer = cx
            .send_request(prompt(&id, FIRST_PROMPT))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let text = seen.text();
        assert!(text.contains(FIRST_ANSWER), "{text}");
        *kept.lock().unwrap() = Some(id);
        Ok(())
    })
    .await;
    let id = session.lock().unwrap().clone().unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        [("editor-1".to_owned(), "one".to_owned())],
        "turn 1 called the editor's server"
    );
    let turn_one_requests = model.model_requests().len();
    // The editor restarts too: its old server (and token) is gone.
    first.provider.close().await.unwrap();
    seen.clear();

    // Editor 2: the server on a new port and token; agentctl killed and started again.
    let second = EditorServer::start("editor-2", &calls).await;
    secrets.push(second.token.clone());
    assert_ne!(first.url, second.url);
    let command = codex_acp(root, &binary, &model.base_url());
    drive(command, &editor, &transcript, async |cx| {
        // A changed set (one server added) is refused, naming no secret.
        let refused = cx
            .send_request(
                ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![
                    server_at("tools", &second.url, &second.token),
                    server_at("more", &second.url, &second.token),
                ]),
            )
            .block_task()
            .await
            .unwrap_err();
        let refused = serde_json::to_value(&refused).unwrap();
        assert_eq!(refused["code"], -32010, "{refused}");
        assert!(
            refused["message"].as_str().unwrap().contains("drifted"),
            "{refused}"
        );
        cx.send_request(
            ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![server_at(
                "tools",
                &second.url,
                &second.token,
            )]),
        )
        .block_task()
        .await?;
        let answer = cx
            .send_request(prompt(&id, SECOND_PROMPT))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let text = seen.text();
        assert!(text.contains(SECOND_ANSWER), "{text}");
        Ok(())
    })
    .await;
    second.provider.close().await.unwrap();
    assert_codex_ran_with_no_secret_in_argv(argv);

    // The tool call of turn 2 reached the new server, with the new token (it checks it).
    assert_each_editor_called_once(&calls);
    // Codex resumed its own session: turn 2's first model request carries turn 1.
    let requests = model.model_requests();
    assert_eq!(requests.len(), 4, "two model requests per turn");
    let resumed = requests[turn_one_requests].input_texts().join("\n");
    assert!(resumed.contains(FIRST_PROMPT), "{resumed}");
    assert!(resumed.contains(FIRST_ANSWER), "{resumed}");
    assert!(resumed.contains(SECOND_PROMPT), "{resumed}");
    for request in &requests {
        assert_eq!(request.bearer(), Some(MODEL_KEY));
    }

    // Canary scan: no secret in what the editor read, in agentctl's stderr (TRACE), or in any
    // file of the test (the thread store, the session map, Codex's namespace, the workspace).
    assert_no_secret_leaked(&transcript, root, &secrets);
}

/// No secret of `secrets` in what the editor read (protocol messages only), in agentctl's
/// stderr (its TRACE log, which must have been captured), or in any file under `root` (the
/// thread store, the session map, the runtime's namespace, the workspace).
pub(crate) fn assert_no_secret_leaked(transcript: &Transcript, root: &Path, secrets: &Secrets) {
    let stdout = String::from_utf8_lossy(&transcript.stdout.lock().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&transcript.stderr.lock().unwrap()).into_owned();
    assert!(stdout.lines().count() >= 6, "{stdout}");
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("stdout carries protocol messages only ({e}): {line}"));
    }
    assert!(!stderr.is_empty(), "the TRACE log was captured");
    let files = files_under(root);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("acp-sessions"))
    );
    for secret in secrets.all() {
        assert!(
            !stdout.contains(&secret),
            "a secret in the editor's messages"
        );
        assert!(!stderr.contains(&secret), "a secret in agentctl's stderr");
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a secret in {}",
                file.display()
            );
        }
    }
}

/// The argv watcher saw Codex run, and no secret in any process's command line.
pub(crate) fn assert_codex_ran_with_no_secret_in_argv(argv: ArgvWatch) {
    let (saw_codex, leaks) = argv.finish();
    assert!(saw_codex, "the argv watcher saw Codex run");
    assert!(leaks.is_empty(), "a secret in a command line: {leaks:?}");
}

/// Turn 1 called editor 1's `ping` with `one`, turn 2 editor 2's with `two`.
pub(crate) fn assert_each_editor_called_once(calls: &Mutex<Vec<(String, String)>>) {
    assert_eq!(
        *calls.lock().unwrap(),
        [
            ("editor-1".to_owned(), "one".to_owned()),
            ("editor-2".to_owned(), "two".to_owned())
        ]
    );
}
