//! `agentctl acp --runtime codex` with an editor MCP server that requires a secret header
//! besides its bearer: the real Codex CLI against the mock model, offline. The editor's
//! server is a front that admits only requests carrying `X-Api-Key: <key>` and forwards them
//! to the hosted `ping` tool (which checks the bearer). A turn calls it through the front; the
//! agent is killed, the front comes back on a new port with a new key (and the tool server
//! with a new token), `session/resume` resumes (the semantic identity covers header names,
//! not values) and a turn calls the new front. A renamed header is drift. Then the canary
//! scan of `acp_codex` covers the keys too. Without `CODEX_BIN` it prints `SKIPPED` locally
//! and fails under CI.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    HttpHeader, McpServer, McpServerHttp, NewSessionRequest, ResumeSessionRequest, SessionId,
    StopReason,
};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use run_service::RunServiceProvider as _;

use crate::acp_codex::{
    EditorServer, Scene, assert_codex_ran_with_no_secret_in_argv, assert_each_editor_called_once,
    assert_no_secret_leaked, codex_acp,
};
use crate::acp_serve::{drive, prompt};

/// A front for the editor's MCP server: it admits a request only with its `X-Api-Key` and
/// forwards it, every other header included, to the tool server.
struct KeyedFront {
    url: String,
    admitted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

struct Front {
    upstream: String,
    key: String,
    client: reqwest::Client,
    admitted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl KeyedFront {
    async fn start(upstream: &str, key: &str) -> Self {
        let (admitted, refused) = (Arc::default(), Arc::default());
        let front = Arc::new(Front {
            upstream: upstream.to_owned(),
            key: key.to_owned(),
            client: reqwest::Client::new(),
            admitted: Arc::clone(&admitted),
            refused: Arc::clone(&refused),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().fallback(forward).with_state(front);
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        KeyedFront {
            url: format!("http://127.0.0.1:{port}/mcp"),
            admitted,
            refused,
            task,
        }
    }
}

async fn forward(State(front): State<Arc<Front>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let key = parts.headers.get("x-api-key").map(|v| v.as_bytes());
    if key != Some(front.key.as_bytes()) {
        front.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED.into_response();
    }
    front.admitted.fetch_add(1, Ordering::SeqCst);
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let mut headers = parts.headers;
    for name in [header::HOST, header::CONTENT_LENGTH] {
        headers.remove(name);
    }
    headers.remove("x-api-key");
    let answer = front
        .client
        .request(parts.method, &front.upstream)
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let mut headers = answer.headers().clone();
    for name in [header::CONTENT_LENGTH, header::TRANSFER_ENCODING] {
        headers.remove(name);
    }
    (status, headers, answer.bytes().await.unwrap()).into_response()
}

/// The editor's declaration of `tools` at `url`: the bearer and the key header `key_name`.
fn keyed_server(url: &str, token: &str, key_name: &str, key: &str) -> McpServer {
    McpServer::Http(
        McpServerHttp::new("tools".to_owned(), url.to_owned()).headers(vec![
            HttpHeader::new("Authorization".to_owned(), format!("Bearer {token}")),
            HttpHeader::new(key_name.to_owned(), key.to_owned()),
        ]),
    )
}

/// A fresh key, shaped like an API key, unique to this test run.
fn fresh_key(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("key-{label}-{nanos:x}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_behind_acp_reaches_a_server_that_requires_a_secret_header_and_resumes_with_a_new_key()
 {
    let Some(binary) =
        test_kit::real_cli::binary("CODEX_BIN", "agentctl acp --runtime codex, secret header")
    else {
        return;
    };
    let Scene {
        model,
        dir,
        cwd,
        calls,
        secrets,
        editor,
        transcript,
        argv,
    } = Scene::new("First answer.", "Second answer.");
    let root = dir.path();
    let seen = editor.clone();

    // Editor 1: the tool server behind a front that wants key 1.
    let first = EditorServer::start("editor-1", &calls).await;
    let key_one = fresh_key("one");
    let front_one = KeyedFront::start(&first.url, &key_one).await;
    secrets.push(first.token.clone());
    secrets.push(key_one.clone());
    let session: Arc<Mutex<Option<SessionId>>> = Arc::default();
    let kept = Arc::clone(&session);
    let command = codex_acp(root, &binary, &model.base_url());
    drive(command, &editor, &transcript, async |cx| {
        let server = keyed_server(&front_one.url, &first.token, "X-Api-Key", &key_one);
        let id = cx
            .send_request(NewSessionRequest::new(cwd.clone()).mcp_servers(vec![server]))
            .block_task()
            .await?
            .session_id;
        let answer = cx
            .send_request(prompt(&id, "Please call ping with the text one."))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        *kept.lock().unwrap() = Some(id);
        Ok(())
    })
    .await;
    let id = session.lock().unwrap().clone().unwrap();
    // Codex reached the tool through the front, so it sent the key on every request.
    assert_eq!(
        *calls.lock().unwrap(),
        [("editor-1".to_owned(), "one".to_owned())]
    );
    assert!(front_one.admitted.load(Ordering::SeqCst) > 0);
    assert_eq!(
        front_one.refused.load(Ordering::SeqCst),
        0,
        "a request without the key"
    );
    first.provider.close().await.unwrap();
    front_one.task.abort();
    seen.clear();

    // Editor 2: a new port, token and key; agentctl killed and started again.
    let second = EditorServer::start("editor-2", &calls).await;
    let key_two = fresh_key("two");
    let front_two = KeyedFront::start(&second.url, &key_two).await;
    secrets.push(second.token.clone());
    secrets.push(key_two.clone());
    assert_ne!(front_one.url, front_two.url);
    let command = codex_acp(root, &binary, &model.base_url());
    drive(command, &editor, &transcript, async |cx| {
        // Header names are the identity: another header is drift, naming no value.
        let renamed = keyed_server(&front_two.url, &second.token, "X-Other-Key", &key_two);
        let refused = cx
            .send_request(
                ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![renamed]),
            )
            .block_task()
            .await
            .unwrap_err();
        let refused = serde_json::to_value(&refused).unwrap();
        assert_eq!(refused["code"], -32010, "{refused}");
        // The same header with a new value resumes.
        let server = keyed_server(&front_two.url, &second.token, "X-Api-Key", &key_two);
        cx.send_request(
            ResumeSessionRequest::new(id.clone(), cwd.clone()).mcp_servers(vec![server]),
        )
        .block_task()
        .await?;
        let answer = cx
            .send_request(prompt(&id, "Please call ping with the text two."))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert!(seen.text().contains("Second answer."), "{}", seen.text());
        Ok(())
    })
    .await;
    second.provider.close().await.unwrap();
    front_two.task.abort();
    assert_codex_ran_with_no_secret_in_argv(argv);

    // Turn 2 reached the new front with the new key, and the tool with the new token.
    assert_each_editor_called_once(&calls);
    assert!(front_two.admitted.load(Ordering::SeqCst) > 0);
    assert_eq!(
        front_two.refused.load(Ordering::SeqCst),
        0,
        "a request without the key"
    );
    assert_no_secret_leaked(&transcript, root, &secrets);
}
