//! `agentctl run` and `agentctl threads explain` as real processes over one SQLite store, with
//! the reference runtime: a run creates the store and persists; explain names the stored
//! record; after a configuration change explain and the resume-only run refuse alike, with the
//! same exit code and drift, before any driver runs.

use std::path::Path;
use std::process::Output;

use crate::support::{self, agentctl, assert_no_secret, isolated, on_store, text};

#[test]
fn run_then_explain_then_refuse_alike_after_a_change() {
    let dir = tempfile::tempdir().unwrap();
    // The store's directory, which the run creates.
    let root = &dir.path().join("nested");
    let ws = dir.path().to_str().unwrap().to_owned();
    let base = ["--workspace", ws.as_str(), "--model", "m1"];

    // Nothing stored: explain says start; resume-only would be refused as not found.
    let run = agentctl(
        root,
        &[&["run", "--thread", "t"][..], &base, &["hello"]].concat(),
    );
    assert!(run.status.success(), "{run:?}");
    let out = text(&run.stdout);
    assert!(out.contains("session started"), "{out}");
    let record = out.rsplit("record ").next().unwrap().trim().to_owned();
    assert!(!record.is_empty() && record != "not persisted", "{out}");
    let mode = std::fs::metadata(root).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );

    // Compatible: explain names the stored record, and changes nothing.
    let explain = agentctl(root, &[&["threads", "explain", "t"][..], &base].concat());
    assert!(explain.status.success(), "{explain:?}");
    assert_eq!(
        text(&explain.stdout).lines().next().unwrap(),
        format!("resume: record {record}")
    );
    let json = agentctl(
        root,
        &[&["threads", "explain", "t", "--json"][..], &base].concat(),
    );
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["would"], "resume");
    assert_eq!(value["record_id"], record.as_str());

    // The model changed: both refuse with exit 3 and name the drift.
    let changed = ["--workspace", ws.as_str(), "--model", "m2", "--resume-only"];
    let explain = agentctl(root, &[&["threads", "explain", "t"][..], &changed].concat());
    let run = agentctl(
        root,
        &[&["run", "--thread", "t"][..], &changed, &["again"]].concat(),
    );
    assert_eq!(explain.status.code(), Some(3), "{explain:?}");
    assert_eq!(run.status.code(), Some(3), "{run:?}");
    assert!(text(&explain.stderr).contains("drifted: model changed"));
    assert!(text(&run.stderr).contains("drifted: model changed"));
    assert!(run.stdout.is_empty(), "the driver never ran");

    // Without resume-only a run would start over, archiving the record.
    let changed = ["--workspace", ws.as_str(), "--model", "m2"];
    let explain = agentctl(root, &[&["threads", "explain", "t"][..], &changed].concat());
    assert!(
        text(&explain.stdout).starts_with(&format!("start over, archiving record {record}")),
        "{explain:?}"
    );
    let run = agentctl(
        root,
        &[&["run", "--thread", "t"][..], &changed, &["again"]].concat(),
    );
    assert!(
        text(&run.stdout).contains("session restarted (1 drifted)"),
        "{run:?}"
    );

    // Not found alike.
    let explain = agentctl(root, &["threads", "explain", "nope", "--resume-only"]);
    let run = agentctl(root, &["run", "--thread", "nope", "--resume-only", "x"]);
    assert_eq!(explain.status.code(), Some(5));
    assert_eq!(run.status.code(), Some(5));
}

/// The record id a text-mode run names on its last line.
fn record_of(run: &Output) -> String {
    let out = text(&run.stdout);
    let last = out.lines().last().unwrap_or_default();
    last.rsplit("record ").next().unwrap().trim().to_owned()
}

/// Every `*.json` session file under `dir`, at any depth.
fn session_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json")
                && path.parent().is_some_and(|p| p.ends_with("sessions"))
            {
                found.push(path);
            }
        }
    }
    found
}

/// The default runtime keeps its sessions in the namespace, so separate agentctl processes
/// on one store resume and fork them, `explain` agrees with each run, and once the session
/// files are gone a resume-only run is refused as a real CLI's lost session is.
#[test]
fn the_default_runtime_resumes_and_forks_across_processes_and_explain_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = dir.path().to_str().unwrap().to_owned();
    let run = |key: &str, extra: &[&str], prompt: &str| {
        agentctl(
            root,
            &[
                &["run", "--thread", key, "--workspace", &ws][..],
                extra,
                &[prompt],
            ]
            .concat(),
        )
    };
    let explain = |key: &str, extra: &[&str]| {
        agentctl(
            root,
            &[&["threads", "explain", key, "--workspace", &ws][..], extra].concat(),
        )
    };
    let first_line = |output: &Output| text(&output.stdout).lines().next().unwrap().to_owned();

    // Start (explain has no store to read yet; a run creates it).
    let before = explain("demo", &[]);
    assert_eq!(before.status.code(), Some(5), "{before:?}");
    let started = run("demo", &[], "hello");
    assert!(started.status.success(), "{started:?}");
    assert!(
        text(&started.stdout).starts_with("reference turn 1: hello\n"),
        "{started:?}"
    );
    assert!(
        text(&started.stdout).contains("session started"),
        "{started:?}"
    );
    let record = record_of(&started);

    // Another process: explain says resume, and the resume-only run resumes with history.
    let before = explain("demo", &["--resume-only"]);
    assert!(before.status.success(), "{before:?}");
    assert_eq!(first_line(&before), format!("resume: record {record}"));
    let resumed = run("demo", &["--resume-only"], "again");
    assert!(resumed.status.success(), "{resumed:?}");
    assert!(
        text(&resumed.stdout).starts_with("reference turn 2: again [earlier: hello]\n"),
        "{resumed:?}"
    );
    assert!(
        text(&resumed.stdout).contains("session resumed"),
        "{resumed:?}"
    );
    assert_eq!(record_of(&resumed), record);

    // Fork into a new key: explain names the parent, the fork carries the history.
    let before = explain("branch", &[]);
    assert_eq!(
        first_line(&before),
        "start: nothing is stored under this key"
    );
    let before = explain("branch", &["--fork-from", "demo"]);
    assert!(before.status.success(), "{before:?}");
    assert_eq!(first_line(&before), format!("fork: from record {record}"));
    let forked = run("branch", &["--fork-from", "demo"], "fork it");
    assert!(forked.status.success(), "{forked:?}");
    assert!(
        text(&forked.stdout).starts_with("reference turn 3: fork it [earlier: hello | again]\n"),
        "{forked:?}"
    );
    assert!(
        text(&forked.stdout).contains("session forked"),
        "{forked:?}"
    );
    let branch = explain("branch", &["--resume-only"]);
    assert_eq!(
        first_line(&branch),
        format!("resume: record {}", record_of(&forked))
    );
    let parent_again = run("demo", &["--resume-only"], "third");
    assert!(
        text(&parent_again.stdout)
            .starts_with("reference turn 3: third [earlier: hello | again]\n"),
        "the fork left the parent's session as it was: {parent_again:?}"
    );

    // The provider loses the sessions: the store still holds the Thread, so explain (which
    // never asks the provider) says resume; the resume-only run is refused, in one line, and
    // without starting over.
    let files = session_files(&dir.path().join("xdg-data"));
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        std::fs::remove_file(file).unwrap();
    }
    let before = explain("demo", &["--resume-only"]);
    assert!(before.status.success(), "{before:?}");
    let refused = run("demo", &["--resume-only"], "lost");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(refused.stdout.is_empty(), "{refused:?}");
    assert_eq!(
        text(&refused.stderr),
        "agentctl: the driver rejected the resume: the runtime does not know the session\n"
    );
    // Without --resume-only the run starts a new session on the same key.
    let restarted = run("demo", &[], "anew");
    assert!(restarted.status.success(), "{restarted:?}");
    assert!(
        text(&restarted.stdout).starts_with("reference turn 1: anew\n"),
        "{restarted:?}"
    );
    assert!(
        text(&restarted.stdout).contains("session restarted (resume rejected)"),
        "{restarted:?}"
    );
}

/// The reference runtime has no binary, endpoint or key: such flags are usage errors, not
/// silently ignored.
#[test]
fn the_reference_runtime_refuses_flags_it_cannot_take() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for flag in [
        ["--runtime-bin", "/bin/true"],
        ["--provider-url", "http://127.0.0.1:9/v1"],
        ["--provider-key-env", "HOME"],
    ] {
        let run = agentctl(
            root,
            &[&["run", "--thread", "t"][..], &flag, &["hi"]].concat(),
        );
        assert_eq!(run.status.code(), Some(2), "{flag:?}: {run:?}");
        assert!(text(&run.stderr).contains(flag[0]), "{run:?}");
    }
}

#[test]
fn run_json_prints_typed_events_and_unknown_runtimes_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run = agentctl(root, &["run", "--thread", "j", "--json", "hello"]);
    assert!(run.status.success(), "{run:?}");
    let kinds: Vec<String> = text(&run.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["kind"]["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    assert!(text(&run.stderr).contains("session started"));

    let unknown = agentctl(
        root,
        &["run", "--runtime", "opencode", "--thread", "c", "hi"],
    );
    assert_eq!(unknown.status.code(), Some(2), "no such runtime");
    let bad = agentctl(root, &["run", "--thread", "c", "--mcp", "nourl", "hi"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn an_mcp_server_on_a_new_port_keeps_the_thread_resumable_a_renamed_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = dir.path().to_str().unwrap().to_owned();
    let with = |mcp: &str| {
        vec![
            "--workspace".to_owned(),
            ws.clone(),
            "--mcp".to_owned(),
            mcp.to_owned(),
            "--mcp-bearer-env".to_owned(),
            format!("{}=UI_TOKEN", mcp.split('=').next().unwrap()),
        ]
    };
    let run_with = |args: &[&str], mcp: &str, token: &str| {
        on_store(root)
            .args(args)
            .args(with(mcp))
            .env("UI_TOKEN", token)
            .output()
            .unwrap()
    };
    let first = run_with(
        &["run", "--thread", "m", "hello"],
        "ui=http://127.0.0.1:4101/mcp",
        "token-one",
    );
    assert!(first.status.success(), "{first:?}");

    // A restarted server: new port, new token. Still resumable.
    let moved = run_with(
        &["threads", "explain", "m", "--resume-only"],
        "ui=http://127.0.0.1:4202/mcp",
        "token-two",
    );
    assert!(moved.status.success(), "{moved:?}");
    assert!(text(&moved.stdout).starts_with("resume: record "));

    // Another server name is a semantic change.
    let renamed = run_with(
        &["threads", "explain", "m", "--resume-only"],
        "tools=http://127.0.0.1:4202/mcp",
        "token-two",
    );
    assert_eq!(renamed.status.code(), Some(3), "{renamed:?}");
    for output in [&first, &moved, &renamed] {
        assert_no_secret(output, "token-");
    }

    // A bearer variable that is not set is a usage error.
    let unset = on_store(root)
        .args(["threads", "explain", "m"])
        .args(with("ui=http://127.0.0.1:4202/mcp"))
        .env_remove("UI_TOKEN")
        .output()
        .unwrap();
    assert_eq!(unset.status.code(), Some(2), "{unset:?}");
}

#[test]
fn postgres_store_run_explain_delete() {
    let url = support::postgres_url();
    let schema = support::unique_schema("agentctl_run");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_str().unwrap().to_owned();
    let pg = |args: &[&str]| {
        isolated(dir.path())
            .args(["--store", url.as_str(), "--pg-schema", schema.as_str()])
            .args(args)
            .output()
            .unwrap()
    };
    let run = pg(&["run", "--thread", "p", "--workspace", &ws, "hello"]);
    assert!(run.status.success(), "{run:?}");
    assert!(text(&run.stdout).contains("session started"));
    let explain = pg(&[
        "threads",
        "explain",
        "p",
        "--workspace",
        &ws,
        "--resume-only",
    ]);
    assert!(explain.status.success(), "{explain:?}");
    assert!(text(&explain.stdout).starts_with("resume: record "));
    let delete = pg(&["threads", "delete", "p"]);
    assert!(delete.status.success(), "{delete:?}");
    let explain = pg(&[
        "threads",
        "explain",
        "p",
        "--workspace",
        &ws,
        "--resume-only",
    ]);
    assert_eq!(explain.status.code(), Some(5), "{explain:?}");
}

/// `--runtime cursor` drives the Cursor driver. The Cursor CLI is not installable here, so the
/// binary is the fake CLI (behind a wrapper script that names its scenario, since the runtime's
/// environment is isolated) printing Cursor's documented stream-json; the second run resumes
/// the chat the first one started, across agentctl processes.
#[test]
fn cursor_runtime_starts_then_resumes_a_chat_across_processes() {
    use fake_cli::{Rule, Scenario};
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let record = dir.path().join("record.jsonl");
    let chat = "3f2b8c1e-6d4a-4f7e-9b0c-2a1d5e8f7c60";
    let turn = |rule: Rule, chat: &str, text: &str| {
        rule.stdout(format!(
            r#"{{"type":"system","subtype":"init","apiKeySource":"env","cwd":"/w","session_id":"{chat}","model":"m","permissionMode":"default"}}"#
        ))
        .stdout(format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"session_id":"{chat}"}}"#
        ))
        .stdout(format!(
            r#"{{"type":"result","subtype":"success","duration_ms":5,"duration_api_ms":5,"is_error":false,"result":"{text}","session_id":"{chat}"}}"#
        ))
    };
    let scenario = Scenario::new()
        .version("2026.08.11-e8db854")
        .record(&record)
        .rule(turn(Rule::when(["--resume"]), chat, "resumed"))
        .rule(turn(Rule::any(), chat, "started"));
    let scenario_path = dir.path().join("scenario.json");
    scenario.write_to(&scenario_path).unwrap();
    let wrapper = dir.path().join("cursor-agent");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec env FAKE_CLI_SCENARIO='{}' '{}' \"$@\"\n",
            scenario_path.display(),
            fake_cli::binary_path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o700)).unwrap();

    let base = dir.path().join("rt");
    let ws = dir.path().to_str().unwrap().to_owned();
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--runtime",
            "cursor",
            "--runtime-bin",
            wrapper.to_str().unwrap(),
            "--base",
            base.to_str().unwrap(),
            "--workspace",
            ws.as_str(),
            "--thread",
            "cur",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        agentctl(root, &refs)
    };

    let first = run(&["hello"]);
    assert!(first.status.success(), "{first:?}");
    assert!(text(&first.stdout).contains("started"), "{first:?}");
    let second = run(&["--resume-only", "again"]);
    assert!(second.status.success(), "{second:?}");
    assert!(text(&second.stdout).contains("resumed"), "{second:?}");
    assert!(
        text(&second.stdout).contains("session resumed"),
        "{second:?}"
    );

    let calls: Vec<_> = fake_cli::read_invocations(&record)
        .unwrap()
        .into_iter()
        .filter(|c| c.has_arg("-p"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].arg_after("--resume"), None);
    assert_eq!(calls[1].arg_after("--resume"), Some(chat));
    assert!(calls[1].has_arg("--approve-mcps"));

    // Cursor takes no model endpoint: a usage error, before anything runs.
    let url = run(&["--provider-url", "http://127.0.0.1:1", "x"]);
    assert_eq!(url.status.code(), Some(2), "{url:?}");
}

/// `RUST_LOG=trace`: every pipeline step of a start and of a resume is logged, each run under
/// the digest of its Thread key, and neither the key nor the MCP bearer value (a plain word
/// the line redactor has no pattern for, so only the libraries' own discipline keeps it out)
/// reaches the log.
#[test]
fn trace_logs_every_pipeline_step_and_no_key_or_secret() {
    const KEY: &str = "tenant-acme-private-thread";
    const CANARY: &str = "zebracanary4471";
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = dir.path().to_str().unwrap().to_owned();
    let traced = |extra: &[&str]| {
        on_store(root)
            .env("RUST_LOG", "trace")
            .env("DOCS_BEARER", CANARY)
            .args(["run", "--thread", KEY, "--workspace", ws.as_str()])
            .args(["--mcp", "docs=http://127.0.0.1:9/mcp"])
            .args(["--mcp-bearer-env", "docs=DOCS_BEARER"])
            .args(extra)
            .arg("hello")
            .output()
            .unwrap()
    };
    let start = traced(&[]);
    let resume = traced(&["--resume-only"]);
    for (run, decision) in [(&start, "start"), (&resume, "resume")] {
        assert!(run.status.success(), "{run:?}");
        let log = text(&run.stderr);
        for step in [
            "attach",
            "validate",
            "fingerprint",
            "lease",
            "decide",
            "drive",
            "persist",
            "detach",
        ] {
            assert!(log.contains(&format!("step=\"{step}\"")), "{step}: {log}");
        }
        assert!(log.contains(&format!("decision=\"{decision}\"")), "{log}");
        assert!(log.contains("elapsed_"), "{log}");
        assert!(log.contains("thread_run{run_id="), "{log}");
        assert!(log.contains("provider attached"), "{log}");
        for secret in [CANARY, KEY] {
            assert!(!log.contains(secret), "{secret} in {log}");
            assert!(!text(&run.stdout).contains(CANARY));
        }
    }
    // Both runs carry the same digest of the key, so the log still ties them together.
    let digest = |run: &Output| {
        let log = text(&run.stderr);
        let at = log.find("thread_run{").expect("the run span");
        let field = log[at..].split_whitespace().nth(1).unwrap();
        let digest = field.strip_prefix("thread=").expect(field).to_owned();
        assert!(
            digest.len() >= 12 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{digest}"
        );
        digest
    };
    assert_eq!(digest(&start), digest(&resume));
}
