//! The Anthropic mock against the real Claude Code CLI, when `CLAUDE_BIN` names it (else
//! skipped).
//!
//! Everything stays on loopback: the mock model, and for the tool test a hosted-tools MCP
//! server. Claude runs with a cleared environment, a temporary HOME and CLAUDE_CONFIG_DIR, no
//! retries and no non-essential traffic.

use crate::cli;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hosted_tools::SERVICE_ID;
use run_service::RunServiceProvider as _;
use serde_json::json;
use test_kit::anthropic::{MockAnthropic, mcp_tool_name};
use test_kit::{Reply, Script};

const MOCK_KEY: &str = "test-kit-anthropic-key";

fn claude_bin() -> Option<PathBuf> {
    test_kit::real_cli::binary("CLAUDE_BIN", "test-kit against the real claude")
}

/// `claude -p --output-format stream-json --verbose <extra>` with `prompt` on stdin.
fn run_claude(
    bin: &Path,
    home: &Path,
    mock: &MockAnthropic,
    env: &[(String, String)],
    extra: &[String],
    prompt: &str,
) -> cli::Run {
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(String::from)
        .to_vec();
    args.extend(extra.iter().cloned());
    let mut env_all: Vec<(String, String)> = vec![
        ("HOME".into(), home.display().to_string()),
        (
            "CLAUDE_CONFIG_DIR".into(),
            home.join("claude").display().to_string(),
        ),
        ("ANTHROPIC_BASE_URL".into(), mock.base_url()),
        ("ANTHROPIC_API_KEY".into(), MOCK_KEY.into()),
        ("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
    ];
    env_all.extend(env.iter().cloned());
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
fn claude_text_turn_against_the_mock() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let mock =
        MockAnthropic::start(Script::new().then(Reply::text("Hello from test-kit"))).unwrap();

    let run = run_claude(&bin, home.path(), &mock, &[], &[], "say hello");

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let session = run.init()["session_id"].as_str().unwrap().to_owned();
    let blocks = run.assistant_blocks();
    assert_eq!(
        blocks,
        [&json!({"type": "text", "text": "Hello from test-kit"})]
    );
    let result = run.result();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Hello from test-kit");
    assert_eq!(result["session_id"], session.as_str());
    assert_eq!(result["usage"]["input_tokens"], 8);
    assert_eq!(result["usage"]["cache_read_input_tokens"], 2);
    assert_eq!(result["usage"]["output_tokens"], 5);

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].path().starts_with("/v1/messages"));
    assert_eq!(requests[0].bearer(), Some(MOCK_KEY));
    assert_eq!(requests[0].last_user_text().as_deref(), Some("say hello"));
    assert_eq!(
        requests[0].header("x-claude-code-session-id"),
        Some(session.as_str())
    );
    assert_eq!(mock.pending_replies(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_mcp_tool_call_against_the_mock_and_hosted_tools() {
    let Some(bin) = claude_bin() else { return };
    let tools = cli::ping_tools().await;
    let server = SERVICE_ID; // "agent-tools"
    let tool = mcp_tool_name(server, "ping");
    assert_eq!(tool, "mcp__agent-tools__ping");
    let home = tempfile::tempdir().unwrap();
    let config = cli::mcp_config(home.path(), server, &tools.url, &tools.token.0, json!({}));
    let extra: Vec<String> = vec![
        "--mcp-config".into(),
        config,
        "--strict-mcp-config".into(),
        "--permission-mode".into(),
        "dontAsk".into(),
        "--allowedTools".into(),
        tool.clone(),
    ];
    let mock = MockAnthropic::start(
        Script::new()
            .then(Reply::tool_call(server, "ping", json!({"text": "hi"})))
            .then_when(
                |request| request.last_input_is_tool_output(),
                Reply::text("The tool said pong."),
            ),
    )
    .unwrap();
    let env = vec![tools.token.clone()];
    let (run, mock) = tokio::task::spawn_blocking({
        let home = home.path().to_owned();
        move || {
            let run = run_claude(&bin, &home, &mock, &env, &extra, "ping it");
            (run, mock)
        }
    })
    .await
    .unwrap();

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(
        run.init()["mcp_servers"],
        json!([{"name": server, "status": "connected"}])
    );
    let blocks = run.assistant_blocks();
    assert_eq!(blocks[0]["type"], "tool_use");
    assert_eq!(blocks[0]["name"], tool.as_str());
    assert_eq!(blocks[0]["id"], "call_0");
    assert_eq!(blocks[0]["input"], json!({"text": "hi"}));
    let results = run.user_blocks();
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "call_0");
    assert_eq!(results[0].get("is_error"), None, "{results:?}");
    assert_eq!(run.result()["result"], "The tool said pong.");
    assert_eq!(run.result()["permission_denials"], json!([]));

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].tool_names().contains(&tool));
    let outputs = requests[1].function_call_outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].call_id, "call_0");
    assert_eq!(outputs[0].output, "pong:hi");
    tools.provider.close().await.unwrap();
}

/// Issue 40: [`Reply::claude_command`] and [`Reply::claude_write`] are the shapes the pinned
/// Claude Code runs as its own `Bash` and `Write` tools (allowed up front here).
#[test]
fn claude_runs_the_kits_command_and_write_replies() {
    let Some(bin) = claude_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    let written = work.join("by-write.txt");
    let mock = MockAnthropic::start(
        Script::new()
            .then(Reply::claude_command(
                "printf 'from the command\\n' > by-command.txt",
            ))
            .then(Reply::claude_write(&written, "written by the model\n"))
            .then(Reply::text("done")),
    )
    .unwrap();
    let extra: Vec<String> = ["--permission-mode", "acceptEdits", "--allowedTools", "Bash"]
        .map(String::from)
        .to_vec();

    let run = run_claude(&bin, home.path(), &mock, &[], &extra, "write the files");

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
