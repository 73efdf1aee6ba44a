//! `agentctl acp` in front of an ACP agent that reports its thinking and a plan: the editor
//! receives them as `agent_thought_chunk` and `plan` updates of the prompt's turn, in the order
//! the runtime reported them, beside the answer's `agent_message_chunk`s. The runtime is the
//! scripted fake CLI speaking ACP (`--acp-agent`), so the test needs no real binary.

use std::path::Path;

use agent_client_protocol::v1::schema::{NewSessionRequest, StopReason};
use fake_cli::{LineRule, Scenario, binary_path};

use crate::acp_serve::{Editor, Transcript, acp_command, drive, prompt};

const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${SESSION}","update":UPDATE}}"#;

fn update(update: &str) -> String {
    UPDATE.replace("UPDATE", update)
}

/// An ACP agent whose turn thinks, plans, then answers.
fn scenario() -> Scenario {
    Scenario::new()
        .version("fake-acp 1.0.0")
        .serve(LineRule::when([r#""method":"initialize""#]).stdout(
            r#"{"jsonrpc":"2.0","id":${ID},"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"mcpCapabilities":{"http":true,"sse":true}}}}"#,
        ))
        .serve(
            LineRule::when([r#""method":"session/new""#])
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"sessionId":"${SESSION}"}}"#),
        )
        .serve(
            LineRule::when([r#""method":"session/prompt""#])
                .stdout(update(
                    r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"weighing the question"}}"#,
                ))
                .stdout(update(
                    r#"{"sessionUpdate":"plan","entries":[{"content":"read the file","priority":"high","status":"completed"},{"content":"answer","priority":"low","status":"in_progress"}]}"#,
                ))
                .stdout(update(
                    r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"the answer"}}"#,
                ))
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"end_turn"}}"#),
        )
}

/// The ACP agent's TOML file, running the fake with `scenario_path`.
fn agent_file(dir: &Path, scenario_path: &Path) -> std::path::PathBuf {
    let file = dir.join("agent.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "planning_agent"
command = ["{bin}", "--acp"]
vars = {{ FAKE_CLI_SCENARIO = "{scenario}" }}
capabilities = {{ load_session = true, mcp_http = true, mcp_sse = true }}
"#,
            bin = binary_path().display(),
            scenario = scenario_path.display(),
        ),
    )
    .unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtimes_thinking_and_plan_reach_the_editor_as_updates_of_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("state");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let scenario_path = dir.path().join("scenario.json");
    scenario().write_to(&scenario_path).unwrap();
    let file = agent_file(dir.path(), &scenario_path);

    let mut command = acp_command(&root);
    command.arg("--acp-agent").arg(&file);
    let editor = Editor::default();
    drive(command, &editor, &Transcript::default(), async |cx| {
        let session = cx
            .send_request(NewSessionRequest::new(ws.clone()))
            .block_task()
            .await?
            .session_id;
        let answer = cx
            .send_request(prompt(&session, "what is in the file?"))
            .block_task()
            .await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        Ok(())
    })
    .await;

    let updates = editor.updates.lock().unwrap().clone();
    let kinds: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    let position = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("no {kind} update in {kinds:?}"))
    };
    assert!(
        position("agent_thought_chunk") < position("plan")
            && position("plan") < position("agent_message_chunk"),
        "in the order the runtime reported them: {kinds:?}"
    );
    let thought = &updates[position("agent_thought_chunk")];
    assert_eq!(thought["content"]["text"], "weighing the question");
    let plan = &updates[position("plan")]["entries"];
    assert_eq!(plan.as_array().map(Vec::len), Some(2), "{plan}");
    assert_eq!(plan[0]["content"], "read the file");
    assert_eq!(plan[0]["priority"], "high");
    assert_eq!(plan[0]["status"], "completed");
    assert_eq!(plan[1]["content"], "answer");
    assert_eq!(plan[1]["priority"], "low");
    assert_eq!(plan[1]["status"], "in_progress");
    assert_eq!(editor.text(), "the answer");
}
