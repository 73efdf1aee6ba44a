//! The Responses mock against the real Codex CLI, when `CODEX_BIN` names it (else skipped).
//!
//! Everything stays on loopback: the mock model, and for the tool test a hosted-tools MCP
//! server. Codex runs with a cleared environment and a temporary HOME and CODEX_HOME.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hosted_tools::{HostedTool, HostedToolsProvider, SERVICE_ID, ToolOutput, ToolSet};
use run_service::{ExposeSecret, RunId, RunServiceProvider};
use serde_json::{Value, json};
use test_kit::responses::{MockResponses, deferred_tool_namespaces, mcp_namespace};
use test_kit::{Reply, Script};

const MOCK_KEY: &str = "test-kit-key";

fn codex_bin() -> Option<PathBuf> {
    test_kit::real_cli::binary("CODEX_BIN", "test-kit against the real codex")
}

struct Run {
    code: Option<i32>,
    events: Vec<Value>,
    stderr: String,
}

/// `codex exec --json … -` with `prompt` on stdin; killed after two minutes.
fn run_codex(
    bin: &Path,
    home: &Path,
    mock: &MockResponses,
    env: &[(String, String)],
    extra: &[String],
    prompt: &str,
) -> Run {
    let codex_home = home.join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let provider = "testkit";
    let mut args: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--disable".into(),
        "unbounded_connection_retries".into(),
    ];
    for setting in [
        format!("model_provider=\"{provider}\""),
        format!("model_providers.{provider}.name=\"{provider}\""),
        format!(
            "model_providers.{provider}.base_url=\"{}\"",
            mock.base_url()
        ),
        format!("model_providers.{provider}.wire_api=\"responses\""),
        format!("model_providers.{provider}.env_key=\"TEST_KIT_MOCK_KEY\""),
        format!("model_providers.{provider}.request_max_retries=0"),
        format!("model_providers.{provider}.stream_max_retries=0"),
    ] {
        args.push("-c".into());
        args.push(setting);
    }
    args.extend(extra.iter().cloned());
    args.push("-".into());

    let mut child = Command::new(bin)
        .args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEX_HOME", &codex_home)
        .env("TEST_KIT_MOCK_KEY", MOCK_KEY)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("codex did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    let events = stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    Run {
        code: status.code(),
        events,
        stderr,
    }
}

fn completed_items<'a>(run: &'a Run, kind: &str) -> Vec<&'a Value> {
    run.events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == kind)
        .map(|e| &e["item"])
        .collect()
}

#[test]
fn codex_text_turn_against_the_mock() {
    let Some(bin) = codex_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let mock =
        MockResponses::start(Script::new().then(Reply::text("Hello from test-kit"))).unwrap();

    let run = run_codex(&bin, home.path(), &mock, &[], &[], "say hello\n");

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.events[0]["type"], "thread.started", "{:?}", run.events);
    let messages = completed_items(&run, "agent_message");
    assert_eq!(messages.len(), 1, "{:?}", run.events);
    assert_eq!(messages[0]["text"], "Hello from test-kit");
    let completed = run.events.last().unwrap();
    assert_eq!(completed["type"], "turn.completed");
    assert_eq!(completed["usage"]["input_tokens"], 10);
    assert_eq!(completed["usage"]["output_tokens"], 5);

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path(), "/v1/responses");
    assert_eq!(requests[0].bearer(), Some(MOCK_KEY));
    assert_eq!(requests[0].last_user_text().as_deref(), Some("say hello\n"));
    assert_eq!(
        requests[0].header("thread-id"),
        run.events[0]["thread_id"].as_str()
    );
    assert_eq!(mock.pending_replies(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_mcp_tool_call_against_the_mock_and_hosted_tools() {
    let Some(bin) = codex_bin() else { return };
    let add = HostedTool::new(
        "add",
        "Adds two integers.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
        |call| async move {
            let n = |k: &str| call.arguments.get(k).and_then(Value::as_i64).unwrap_or(0);
            Ok(ToolOutput::text(format!("sum={}", n("a") + n("b"))))
        },
    )
    .with_revision("1");
    let provider = HostedToolsProvider::new(ToolSet::new([add]).unwrap());
    let attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let service = &attachment.services[0];
    let url = service.url.clone().unwrap();
    let binding = &service.secret_env[0];
    let env = vec![(
        binding.name().to_owned(),
        binding.value().expose_secret().to_owned(),
    )];
    let server = SERVICE_ID; // "agent-tools": Codex mangles it to mcp__agent_tools
    let extra: Vec<String> = [
        format!("mcp_servers.{server}.url=\"{url}\""),
        format!(
            "mcp_servers.{server}.bearer_token_env_var=\"{}\"",
            binding.name()
        ),
        format!("mcp_servers.{server}.default_tools_approval_mode=\"approve\""),
    ]
    .into_iter()
    .flat_map(|setting| ["-c".to_owned(), setting])
    .collect();

    let mock = MockResponses::start(
        Script::new()
            .then(Reply::tool_call(server, "add", json!({"a": 2, "b": 40})))
            .then_when(
                |request| request.last_input_is_tool_output(),
                Reply::text("The sum is 42."),
            ),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let run = tokio::task::spawn_blocking({
        let home = home.path().to_owned();
        move || {
            let run = run_codex(&bin, &home, &mock, &env, &extra, "add 2 and 40\n");
            (run, mock)
        }
    })
    .await
    .unwrap();
    let (run, mock) = run;

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let calls = completed_items(&run, "mcp_tool_call");
    assert_eq!(calls.len(), 1, "{:?}", run.events);
    assert_eq!(calls[0]["server"], server);
    assert_eq!(calls[0]["tool"], "add");
    assert_eq!(calls[0]["status"], "completed", "{:?}", calls[0]);
    assert_eq!(calls[0]["arguments"], json!({"a": 2, "b": 40}));
    assert_eq!(
        completed_items(&run, "agent_message")[0]["text"],
        "The sum is 42."
    );

    let requests = mock.model_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        deferred_tool_namespaces(&requests[0]),
        [mcp_namespace(server)],
        "the default model gets MCP tools as a deferred namespace"
    );
    let outputs = requests[1].function_call_outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].call_id, "call_0");
    assert!(outputs[0].output.contains("sum=42"), "{outputs:?}");
    provider.close().await.unwrap();
}

/// Issue 40: [`Reply::codex_command`] and [`Reply::codex_write`] are the shapes the pinned
/// Codex runs as its own command tool and its own file change (a `file_change` item, not a
/// command), here with approvals and sandbox off.
#[test]
fn codex_runs_the_kits_command_and_write_replies() {
    let Some(bin) = codex_bin() else { return };
    let home = tempfile::tempdir().unwrap();
    let written = home.path().join("by-patch.txt");
    let mock = MockResponses::start(
        Script::new()
            .then(Reply::codex_command(
                "printf 'from the command\\n' > by-command.txt",
            ))
            .then(Reply::codex_write(&written, "first line\nsecond line"))
            .then(Reply::codex_write("relative.txt", "relative\n"))
            .then(Reply::text("done")),
    )
    .unwrap();
    let bypass = ["--dangerously-bypass-approvals-and-sandbox".to_owned()];

    let run = run_codex(&bin, home.path(), &mock, &[], &bypass, "write the files\n");

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(home.path().join("by-command.txt")).unwrap(),
        "from the command\n"
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "first line\nsecond line\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("relative.txt")).unwrap(),
        "relative\n"
    );
    assert_eq!(
        completed_items(&run, "command_execution").len(),
        1,
        "{:?}",
        run.events
    );
    assert_eq!(
        completed_items(&run, "file_change").len(),
        2,
        "{:?}",
        run.events
    );
    assert_eq!(mock.pending_replies(), 0);
}
