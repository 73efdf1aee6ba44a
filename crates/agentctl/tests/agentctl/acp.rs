//! `agentctl run` drives an ACP agent named by a TOML file or by flags, with no Rust code: the
//! scripted fake CLI speaks ACP; two agentctl processes over one store are a host restart,
//! and the second run continues the first's session with `session/load`, its replay never
//! shown as the turn's.

use std::path::Path;

use fake_cli::{LineRule, Scenario, binary_path, read_served_lines};

use crate::support::{agentctl, text};

const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"KIND","content":{"type":"text","text":"TEXT"}}}}"#;

fn update(kind: &str, text: &str) -> String {
    UPDATE.replace("KIND", kind).replace("TEXT", text)
}

/// An ACP agent: a session per process, an echo per prompt, a replay before and after a
/// load's answer; every line it receives recorded in `served`.
fn scenario(served: &Path) -> Scenario {
    Scenario::new()
        .version("fake-acp 1.0.0")
        .serve_record(served)
        .serve(LineRule::when([r#""method":"initialize""#]).stdout(
            r#"{"jsonrpc":"2.0","id":${ID},"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"mcpCapabilities":{"http":true}}}}"#,
        ))
        .serve(
            LineRule::when([r#""method":"session/new""#])
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"sessionId":"${SESSION}"}}"#),
        )
        .serve(
            LineRule::when([r#""method":"session/load""#])
                .stdout(update("user_message_chunk", "REPLAYED question"))
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{}}"#)
                .stdout(update("agent_message_chunk", "REPLAYED answer")),
        )
        .serve(
            LineRule::when([r#""method":"session/prompt""#])
                .stdout(update("agent_message_chunk", "echo: ${PARAM:prompt.0.text}"))
                .stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{"stopReason":"end_turn"}}"#),
        )
}

/// The sessions `session/new` and `session/load` named, in the order they were received.
fn served_methods(served: &Path) -> Vec<String> {
    read_served_lines(served)
        .unwrap()
        .iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| v["method"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn an_acp_agent_from_a_toml_file_runs_and_resumes_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = &dir.path().join("state");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let served = dir.path().join("served.jsonl");
    let scenario_path = dir.path().join("scenario.json");
    scenario(&served).write_to(&scenario_path).unwrap();
    let file = dir.path().join("agent.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "toml_agent"
command = ["{bin}", "--acp"]
key_vars = ["TOML_AGENT_API_KEY"]
vars = {{ FAKE_CLI_SCENARIO = "{scenario}" }}
capabilities = {{ load_session = true, mcp_http = true }}
"#,
            bin = binary_path().display(),
            scenario = scenario_path.display(),
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let ws = ws.to_str().unwrap();
    let base = ["--workspace", ws, "--acp-agent", file];

    let first = agentctl(
        root,
        &[&["run", "--thread", "t"][..], &base, &["one"]].concat(),
    );
    assert!(first.status.success(), "{first:?}");
    assert!(text(&first.stdout).contains("echo: one"), "{first:?}");

    // Another agentctl process: the host restarted.
    let second = agentctl(
        root,
        &[
            &["run", "--thread", "t", "--resume-only"][..],
            &base,
            &["two"],
        ]
        .concat(),
    );
    assert!(second.status.success(), "{second:?}");
    let out = text(&second.stdout);
    assert!(out.contains("echo: two"), "{out}");
    assert!(
        !out.contains("REPLAYED"),
        "the replay is not the turn's: {out}"
    );
    let methods = served_methods(&served);
    assert_eq!(
        methods.iter().filter(|m| *m == "session/new").count(),
        1,
        "{methods:?}"
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "session/load").count(),
        1,
        "{methods:?}"
    );

    // A changed command line is another agent: the stored Thread is refused, not restarted.
    let changed = std::fs::read_to_string(file)
        .unwrap()
        .replace(r#""--acp"]"#, r#""--acp", "--verbose"]"#);
    std::fs::write(file, changed).unwrap();
    let refused = agentctl(
        root,
        &[
            &["run", "--thread", "t", "--resume-only"][..],
            &base,
            &["three"],
        ]
        .concat(),
    );
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    assert_eq!(
        served_methods(&served).len(),
        methods.len(),
        "refused before the agent started"
    );
}

#[test]
fn an_acp_agent_from_flags_has_its_capabilities_learned() {
    let dir = tempfile::tempdir().unwrap();
    let root = &dir.path().join("state");
    let served = dir.path().join("served.jsonl");
    let scenario_path = dir.path().join("scenario.json");
    scenario(&served).write_to(&scenario_path).unwrap();
    let ws = dir.path().to_str().unwrap().to_owned();
    let bin = binary_path().to_str().unwrap().to_owned();
    let var = format!("FAKE_CLI_SCENARIO={}", scenario_path.display());
    let run = agentctl(
        root,
        &[
            "run",
            "--thread",
            "f",
            "--workspace",
            &ws,
            "--acp-command",
            &bin,
            "--acp-arg",
            "--acp",
            "--acp-var",
            &var,
            "hello",
        ],
    );
    assert!(
        run.status.success(),
        "{run:?} {:?}",
        read_served_lines(&served)
    );
    assert!(text(&run.stdout).contains("echo: hello"), "{run:?}");
    // One process learned the capabilities (initialize only), another ran the turn.
    let methods = served_methods(&served);
    assert_eq!(
        methods,
        ["initialize", "initialize", "session/new", "session/prompt"],
        "{methods:?}"
    );

    // A --runtime beside an ACP agent is a usage error.
    let both = agentctl(
        root,
        &[
            "run",
            "--thread",
            "g",
            "--runtime",
            "codex",
            "--acp-command",
            &bin,
            "x",
        ],
    );
    assert_eq!(both.status.code(), Some(2), "{both:?}");
}
