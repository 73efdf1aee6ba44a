//! The Gemini mock over raw HTTP/1.1 (SSE framing, rendering, side routes, the request helpers
//! on Gemini CLI-shaped bodies), and against the real Gemini CLI when `GEMINI_BIN` names it
//! (else a visible `SKIPPED`).

use crate::cli;
use crate::http as common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::http::http;
use hosted_tools::SERVICE_ID;
use run_service::RunServiceProvider as _;
use serde_json::{Value, json};
use test_kit::gemini::{MockGemini, mcp_tool_name};
use test_kit::{DEFAULT_TEXT, FunctionCallOutput, Reply, Script, Usage, WireApi};

const MOCK_KEY: &str = "test-kit-gemini-key";
const STREAM: &str = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse";

async fn post(mock: &MockGemini, path: &str, body: &Value) -> common::HttpReply {
    http(
        mock.addr(),
        "POST",
        path,
        &[
            ("content-type", "application/json"),
            ("x-goog-api-key", MOCK_KEY),
        ],
        &body.to_string(),
    )
    .await
}

/// The first request body of a Gemini CLI 0.61.0 turn, trimmed: the session context and the
/// prompt in one user content, and the MCP tool among the declarations.
fn cli_turn(prompt: &str) -> Value {
    json!({
        "contents": [{"role": "user", "parts": [
            {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
            {"text": prompt},
        ]}],
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [
            {"name": "read_file", "parametersJsonSchema": {}},
            {"name": "mcp_agent-tools_ping", "parametersJsonSchema": {}},
        ]}],
        "generationConfig": {"temperature": 1},
    })
}

/// The single `data:` frame of a streamed answer, parsed.
fn frame(reply: &common::HttpReply) -> Value {
    let frames = reply.data_frames();
    assert_eq!(frames.len(), 1, "{frames:?}");
    serde_json::from_str(&frames[0]).unwrap()
}

#[tokio::test]
async fn text_reply_is_one_generate_content_response() {
    let usage = Usage {
        input_tokens: 30,
        cached_input_tokens: 4,
        output_tokens: 9,
        reasoning_output_tokens: 2,
    };
    let mock = MockGemini::start(Script::new().then(Reply::text("Hello there").with_usage(usage)))
        .unwrap();
    assert_eq!(mock.base_url(), format!("http://{}", mock.addr()));
    assert!(mock.addr().ip().is_loopback());

    let reply = post(&mock, STREAM, &cli_turn("hi")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let event = frame(&reply);
    assert_eq!(
        event["candidates"][0]["content"],
        json!({"role": "model", "parts": [{"text": "Hello there"}]})
    );
    assert_eq!(event["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        event["usageMetadata"],
        json!({"promptTokenCount": 30, "cachedContentTokenCount": 4, "candidatesTokenCount": 7,
            "thoughtsTokenCount": 2, "totalTokenCount": 39})
    );
    assert_eq!(mock.pending_replies(), 0);
}

#[tokio::test]
async fn tool_calls_use_the_declared_function_name() {
    let mock = MockGemini::start(
        Script::new()
            .then(Reply::tool_call(SERVICE_ID, "ping", json!({"text": "one"})))
            .then(Reply::tool_call("my.tools", "do it", json!({})).with_call_id("fixed")),
    )
    .unwrap();
    let event = frame(&post(&mock, STREAM, &cli_turn("ping")).await);
    assert_eq!(
        event["candidates"][0]["content"]["parts"][0],
        json!({"functionCall": {"id": "call_0", "name": "mcp_agent-tools_ping", "args": {"text": "one"}}})
    );
    // Not declared: Gemini CLI's own mangling.
    let event = frame(&post(&mock, STREAM, &json!({"contents": []})).await);
    assert_eq!(
        event["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"id": "fixed", "name": "mcp_my.tools_do_it", "args": {}})
    );
}

#[test]
fn mcp_tool_names_are_mangled_like_the_gemini_cli() {
    assert_eq!(mcp_tool_name("agent-tools", "ping"), "mcp_agent-tools_ping");
    assert_eq!(mcp_tool_name("a b", "c/d:e"), "mcp_a_b_c_d:e");
    // No second prefix when the joined name already has one.
    assert_eq!(mcp_tool_name("mcp", "x"), "mcp_x");
    let long = mcp_tool_name("server", &"t".repeat(80));
    assert_eq!(long.chars().count(), 63);
    assert!(long.starts_with("mcp_server_tttt") && long.contains("..."));
}

#[tokio::test]
async fn errors_are_google_error_bodies() {
    let mock = MockGemini::start(
        Script::new()
            .then(Reply::error(401))
            .then(Reply::error_with_message(429, "slow down")),
    )
    .unwrap();
    let reply = post(&mock, STREAM, &cli_turn("a")).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(reply.json()["error"]["code"], 401);
    let reply = post(&mock, STREAM, &cli_turn("b")).await;
    assert_eq!(reply.status, 429);
    assert_eq!(
        reply.json(),
        json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
    );
}

#[tokio::test]
async fn side_routes_consume_no_step() {
    let mock = MockGemini::start(Script::new().then(Reply::text("kept"))).unwrap();
    let router =
        json!({"contents": [], "generationConfig": {"responseMimeType": "application/json"}});
    let reply = post(&mock, "/v1beta/models/gemini-test:generateContent", &router).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json()["candidates"][0]["content"]["parts"][0]["text"],
        "{}"
    );
    let reply = post(&mock, "/v1beta/models/gemini-test:countTokens", &json!({})).await;
    assert_eq!(reply.json(), json!({"totalTokens": 100}));
    let reply = http(mock.addr(), "GET", "/v1beta/models", &[], "").await;
    assert_eq!(reply.json(), json!({"models": []}));
    let reply = http(mock.addr(), "GET", "/v1beta/models/gemini-test", &[], "").await;
    assert_eq!(reply.json()["name"], "models/gemini-test");
    let reply = post(&mock, "/v1/other", &json!({})).await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["error"]["status"], "NOT_FOUND");
    assert_eq!(mock.pending_replies(), 1);
    assert_eq!(mock.requests().len(), 5);
    assert!(mock.model_requests().is_empty());
    // An exhausted script answers the default text.
    let mock = MockGemini::start(Script::new()).unwrap();
    let event = frame(&post(&mock, STREAM, &cli_turn("x")).await);
    assert_eq!(
        event["candidates"][0]["content"]["parts"][0]["text"],
        DEFAULT_TEXT
    );
}

#[tokio::test]
async fn recorded_requests_read_gemini_bodies() {
    let mock = MockGemini::start(Script::new()).unwrap();
    let mut resumed = cli_turn("first");
    let contents = resumed["contents"].as_array_mut().unwrap();
    contents.extend([
        json!({"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "mcp_agent-tools_ping", "args": {"text": "one"}}}]}),
        json!({"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "mcp_agent-tools_ping",
            "response": {"output": "<untrusted_context>\npong\n</untrusted_context>"}}}]}),
        json!({"role": "model", "parts": [{"text": "thinking", "thought": true}, {"text": "First answer."}]}),
        json!({"role": "user", "parts": [{"text": "second"}]}),
        json!({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}}]}),
        json!({"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}]}),
    ]);
    post(&mock, STREAM, &resumed).await;
    let request = &mock.model_requests()[0];
    assert_eq!(request.wire_api(), WireApi::GeminiGenerateContent);
    assert_eq!(request.model(), Some("gemini-test"));
    assert_eq!(request.bearer(), Some(MOCK_KEY));
    assert_eq!(
        request.input_texts(),
        ["first", "First answer.", "second"],
        "session context, thoughts and function parts are left out"
    );
    assert_eq!(request.last_user_text().as_deref(), Some("second"));
    assert_eq!(
        request.function_call_outputs(),
        [
            FunctionCallOutput {
                call_id: "c1".into(),
                output: "<untrusted_context>\npong\n</untrusted_context>".into()
            },
            FunctionCallOutput {
                call_id: "read_file".into(),
                output: "no such file".into()
            },
        ]
    );
    assert!(request.last_input_is_tool_output());
    assert_eq!(request.tool_names(), ["read_file", "mcp_agent-tools_ping"]);
}

// ---------------------------------------------------------------------------------------
// Against the real Gemini CLI
// ---------------------------------------------------------------------------------------

fn gemini_bin() -> Option<PathBuf> {
    test_kit::real_cli::binary("GEMINI_BIN", "test-kit against the real gemini")
}

/// `gemini -p "" --output-format stream-json --skip-trust -m gemini-test` with `prompt` on
/// stdin, in a fresh GEMINI_CLI_HOME whose settings select the key, switch usage statistics
/// off and declare `servers`.
fn run_gemini(
    bin: &Path,
    home: &Path,
    mock: &MockGemini,
    servers: Value,
    env: &[(String, String)],
    prompt: &str,
) -> cli::Run {
    run_gemini_with(bin, home, mock, servers, env, &[], prompt)
}

/// [`run_gemini`] with `extra` arguments after the fixed ones.
fn run_gemini_with(
    bin: &Path,
    home: &Path,
    mock: &MockGemini,
    servers: Value,
    env: &[(String, String)],
    extra: &[String],
    prompt: &str,
) -> cli::Run {
    let work = home.join("work");
    let dot = home.join(".gemini");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&dot).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "mcpServers": servers,
    });
    std::fs::write(dot.join("settings.json"), settings.to_string()).unwrap();
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut env_all: Vec<(String, String)> = vec![
        ("HOME".into(), home.display().to_string()),
        ("GEMINI_CLI_HOME".into(), home.display().to_string()),
        ("TMPDIR".into(), tmp.display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL".into(), mock.base_url()),
        ("GEMINI_API_KEY".into(), MOCK_KEY.into()),
    ];
    env_all.extend(env.iter().cloned());
    let mut args: Vec<String> = [
        "-p",
        "",
        "--output-format",
        "stream-json",
        "--skip-trust",
        "-m",
        "gemini-test",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().cloned());
    cli::run(
        bin,
        &args,
        &work,
        &env_all,
        prompt,
        Duration::from_secs(120),
    )
}

#[test]
fn gemini_text_turn_against_the_mock() {
    let Some(bin) = gemini_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let mock = MockGemini::start(Script::new().then(Reply::text("Hello from test-kit"))).unwrap();

    let run = run_gemini(&bin, home.path(), &mock, json!({}), &[], "say hello");

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let init = &run.of_type("init")[0];
    assert_eq!(init["model"], "gemini-test");
    let texts: Vec<&Value> = run
        .of_type("message")
        .into_iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(texts, [&json!("Hello from test-kit")]);
    let result = &run.of_type("result")[0];
    assert_eq!(result["status"], "success");
    assert_eq!(result["stats"]["input_tokens"], Usage::DEFAULT.input_tokens);
    assert_eq!(
        result["stats"]["output_tokens"],
        Usage::DEFAULT.output_tokens
    );

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].path().contains(":streamGenerateContent"));
    assert_eq!(requests[0].model(), Some("gemini-test"));
    assert_eq!(requests[0].bearer(), Some(MOCK_KEY));
    assert_eq!(requests[0].last_user_text().as_deref(), Some("say hello"));
    assert_eq!(requests[0].input_texts(), ["say hello"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_mcp_tool_call_against_the_mock_and_hosted_tools() {
    let Some(bin) = gemini_bin() else { return };
    let tools = cli::ping_tools().await;
    let server = SERVICE_ID; // "agent-tools"
    let tool = mcp_tool_name(server, "ping");
    assert_eq!(tool, "mcp_agent-tools_ping");
    let servers = json!({server: {
        "httpUrl": tools.url,
        "headers": {"Authorization": format!("Bearer ${{{}}}", tools.token.0)},
        "trust": true,
    }});
    let mock = MockGemini::start(
        Script::new()
            .then(Reply::tool_call(server, "ping", json!({"text": "hi"})))
            .then_when(
                |request| request.last_input_is_tool_output(),
                Reply::text("The tool said pong."),
            ),
    )
    .unwrap();
    let env = vec![tools.token.clone()];
    let home = tempfile::tempdir().unwrap();
    let (run, mock) = tokio::task::spawn_blocking({
        let home = home.path().to_owned();
        move || {
            let run = run_gemini(&bin, &home, &mock, servers, &env, "ping it");
            (run, mock)
        }
    })
    .await
    .unwrap();

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let uses = run.of_type("tool_use");
    assert_eq!(uses.len(), 1, "{:?}", run.events);
    assert_eq!(uses[0]["tool_name"], tool.as_str());
    assert_eq!(uses[0]["parameters"], json!({"text": "hi"}));
    let results = run.of_type("tool_result");
    assert_eq!(results[0]["tool_id"], uses[0]["tool_id"]);
    assert_eq!(results[0]["status"], "success");
    assert_eq!(results[0]["output"], "pong:hi");
    assert_eq!(run.of_type("result")[0]["status"], "success");

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].tool_names().contains(&tool));
    let outputs = requests[1].function_call_outputs();
    assert_eq!(outputs.len(), 1);
    // The CLI keeps the id the model gave the call, and wraps MCP output as untrusted.
    assert_eq!(outputs[0].call_id, "call_0");
    assert!(outputs[0].output.contains("pong:hi"), "{outputs:?}");
    tools.provider.close().await.unwrap();
}

/// Issue 40: [`Reply::gemini_command`] and [`Reply::gemini_write`] are the shapes the pinned
/// Gemini CLI runs as its own `run_shell_command` and `write_file` tools (`--approval-mode
/// yolo` here).
#[test]
fn gemini_runs_the_kits_command_and_write_replies() {
    let Some(bin) = gemini_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    let written = work.join("by-write.txt");
    let mock = MockGemini::start(
        Script::new()
            .then(Reply::gemini_command(
                "printf 'from the command\\n' > by-command.txt",
            ))
            .then(Reply::gemini_write(&written, "written by the model\n"))
            .then(Reply::text("done")),
    )
    .unwrap();
    let extra = ["--approval-mode".to_owned(), "yolo".to_owned()];

    let run = run_gemini_with(
        &bin,
        home.path(),
        &mock,
        json!({}),
        &[],
        &extra,
        "write the files",
    );

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(work.join("by-command.txt")).unwrap(),
        "from the command\n",
        "{:?}",
        run.events
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written by the model\n",
        "{:?}",
        run.events
    );
    assert_eq!(mock.pending_replies(), 0);
}
