//! Version, rules, templates and steps.

use fake_cli::{LineRule, Rule, Scenario, Step};

use crate::support::{Run, stderr, stdout};

#[test]
fn version_is_answered_only_for_exactly_dash_dash_version() {
    let scenario = Scenario::new()
        .version("codex-cli 0.169.0")
        .rule(Rule::any().stdout("rule"));
    let run = Run::new(&scenario);
    let out = run.output(&["--version"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "codex-cli 0.169.0\n");
    assert_eq!(stdout(&run.output(&["--version", "x"])), "rule\n");
    // Without a version, --version goes through the rules.
    let run = Run::new(&Scenario::new().rule(Rule::when(["--version"]).stdout("from rule")));
    assert_eq!(stdout(&run.output(&["--version"])), "from rule\n");
}

#[test]
fn the_first_matching_rule_wins_and_no_match_means_a_silent_success() {
    let scenario = Scenario::new()
        .rule(Rule::when(["exec", "resume"]).stdout("resume"))
        .rule(Rule::when(["exec"]).stdout("exec"))
        .rule(Rule::when(["other"]).stdout("other"));
    let run = Run::new(&scenario);
    assert_eq!(stdout(&run.output(&["exec", "resume", "id"])), "resume\n");
    assert_eq!(stdout(&run.output(&["exec", "x"])), "exec\n");
    // Elements must match exactly.
    assert_eq!(stdout(&run.output(&["exec-ish"])), "");
    let out = run.output(&["nothing"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn templates_expand() {
    let scenario = Scenario::new().rule(
        Rule::any()
            .stdout(r#"{"id":"${NEW_UUID}","session":"${ARG_AFTER:resume}","prompt":"${STDIN}"}"#)
            .stdout("${NEW_UUID} ${ARG_AFTER:missing}| ${UNKNOWN} ${ARG_AFTER:last} ${unterminated")
            .stderr("err ${ARG_AFTER:resume}"),
    );
    let run = Run::new(&scenario);
    let prompt = "say \"hi\"\n\tand \\ bye ✓";
    let out = run.with_stdin(&["resume", "sess-1", "last"], prompt);
    assert!(out.status.success());
    let text = stdout(&out);
    let mut lines = text.lines();
    let json: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(json["session"], "sess-1");
    assert_eq!(json["prompt"], prompt);
    let uuid = json["id"].as_str().unwrap();
    assert_eq!(uuid.len(), 36);
    let second = lines.next().unwrap();
    assert_eq!(second, format!("{uuid} | ${{UNKNOWN}}  ${{unterminated"));
    assert_eq!(stderr(&out), "err sess-1\n");
    // A fresh UUID per invocation.
    let again = stdout(&run.output(&["x"]));
    assert!(!again.contains(uuid));
}

#[test]
fn exit_codes_and_crashes() {
    let run = Run::new(&Scenario::new().rule(Rule::any().stdout("a").exit(3).stdout("b")));
    let out = run.output(&[]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stdout(&out), "a\n");

    let run = Run::new(&Scenario::new().rule(Rule::any().stdout("a").kill_self().stdout("b")));
    let out = run.output(&[]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9));
    assert_eq!(stdout(&out), "a\n");
}

#[test]
fn unterminated_output_has_the_exact_size() {
    let n = 300_000;
    let run =
        Run::new(&Scenario::new().rule(Rule::any().stdout_unterminated_bytes(n).stderr("done")));
    let out = run.output(&[]);
    assert!(out.status.success());
    assert_eq!(out.stdout.len() as u64, n);
    assert!(out.stdout.iter().all(|&b| b == b'a'));
    assert_eq!(stderr(&out), "done\n");
}

#[test]
fn a_grandchild_sleeps_in_the_same_group_and_reports_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("gc.pid");
    let record = dir.path().join("record.jsonl");
    let scenario = Scenario::new()
        .record(&record)
        .rule(Rule::any().spawn_grandchild(&pid_file).stdout("spawned"));
    let run = Run::new(&scenario);
    // stdout is not captured: the grandchild inherits it and would hold a pipe open.
    let status = run
        .command(&[])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gc = rustix::process::Pid::from_raw(pid).unwrap();
    let fake = &fake_cli::read_invocations(&record).unwrap()[0];
    let pgid = rustix::process::getpgid(Some(gc));
    // Still sleeping after its parent exited: end it ourselves before asserting.
    let alive = rustix::process::test_kill_process(gc);
    let killed = rustix::process::kill_process(gc, rustix::process::Signal::KILL);
    assert!(alive.is_ok() && killed.is_ok());
    assert_eq!(pgid.unwrap().as_raw_pid().unsigned_abs(), fake.pgid);
}

#[test]
fn steps_round_trip_through_json() {
    let scenario = Scenario::new()
        .version("v")
        .record("/tmp/r")
        .record_env_values(["A"])
        .capture_arg_flag("--f")
        .capture_dir_from_env("D")
        .rule(
            Rule::when(["x"])
                .stdout("o")
                .stderr("e")
                .sleep_ms(1)
                .stdout_unterminated_bytes(2)
                .spawn_grandchild("/tmp/p")
                .hang()
                .exit(4)
                .kill_self()
                .step(Step::Hang(false)),
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    scenario.write_to(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""sleep_ms": 1"#) && text.contains(r#""spawn_grandchild""#));
    // Without serve rules, the file has no serve fields (older readers still accept it).
    assert!(!text.contains("serve"), "{text}");
    let back: Scenario = serde_json::from_str(&text).unwrap();
    assert_eq!(back, scenario);

    let scenario = scenario
        .serve_record("/tmp/served")
        .serve_exit_delay_ms(5)
        .serve(
            LineRule::when(["a", "b"])
                .once()
                .stdout("o")
                .stderr("e")
                .sleep_ms(1)
                .stdout_unterminated_bytes(2)
                .spawn_grandchild("/tmp/p")
                .hang()
                .exit(4)
                .kill_self()
                .step(Step::Hang(false)),
        )
        .serve(LineRule::any());
    scenario.write_to(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""once": true"#) && text.contains(r#""when_contains""#));
    let back: Scenario = serde_json::from_str(&text).unwrap();
    assert_eq!(back, scenario);
}
