//! The invocation record and file capture.

use std::os::unix::fs::PermissionsExt;

use fake_cli::{Rule, Scenario, read_invocations};

use crate::support::{Run, stdout};

#[test]
fn each_invocation_appends_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let scenario = Scenario::new()
        .record(&record)
        .record_env_values(["VISIBLE", "UNSET"])
        .rule(Rule::any().stdout("ok"));
    let run = Run::new(&scenario);
    let out = run
        .command(&["exec", "--json", "a b"])
        .env("VISIBLE", "shown")
        .env("HIDDEN_TOKEN", "not-recorded")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    run.with_stdin(&["resume", "abc"], "the prompt\n");

    let runs = read_invocations(&record).unwrap();
    assert_eq!(runs.len(), 2);
    let first = &runs[0];
    assert_eq!(first.argv, ["exec", "--json", "a b"]);
    assert_eq!(
        first.env_names,
        ["FAKE_CLI_SCENARIO", "HIDDEN_TOKEN", "VISIBLE"]
    );
    assert_eq!(first.env.len(), 1);
    assert_eq!(first.env["VISIBLE"], "shown");
    assert_eq!(first.stdin, "");
    assert_eq!(
        first.cwd.canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
    assert!(first.pid > 0 && first.pgid > 0);
    assert!(first.has_arg("--json") && !first.has_arg("json"));
    assert!(first.has_env("HIDDEN_TOKEN"));
    assert_eq!(runs[1].stdin, "the prompt\n");
    assert_eq!(runs[1].arg_after("resume"), Some("abc"));
    // The raw file never holds the unlisted value.
    assert!(
        !std::fs::read_to_string(&record)
            .unwrap()
            .contains("not-recorded")
    );
}

#[test]
fn concurrent_invocations_write_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let run = Run::new(&Scenario::new().record(&record));
    let children: Vec<_> = (0..16)
        .map(|i| run.command(&["run", &i.to_string()]).spawn().unwrap())
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let mut seen: Vec<String> = read_invocations(&record)
        .unwrap()
        .into_iter()
        .map(|inv| inv.argv[1].clone())
        .collect();
    seen.sort_by_key(|s| s.parse::<u32>().unwrap());
    assert_eq!(seen, (0..16).map(|i| i.to_string()).collect::<Vec<_>>());
}

#[test]
fn files_named_by_flags_and_under_env_dirs_are_captured_with_modes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("codex-home");
    std::fs::create_dir_all(home.join("nested/deeper")).unwrap();
    std::fs::write(home.join("config.toml"), "model = \"x\"").unwrap();
    std::fs::write(home.join("nested/deeper/mcp.json"), "{}").unwrap();
    std::fs::set_permissions(
        home.join("config.toml"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::set_permissions(
        home.join("nested/deeper/mcp.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc/hostname", home.join("link")).unwrap();
    let flagged = dir.path().join("flagged.json");
    std::fs::write(&flagged, "[1]").unwrap();
    let eq_form = dir.path().join("eq.json");
    std::fs::write(&eq_form, "[2]").unwrap();

    let record = dir.path().join("record.jsonl");
    let scenario = Scenario::new()
        .record(&record)
        .capture_arg_flag("--mcp-config")
        .capture_dir_from_env("CODEX_HOME");
    let run = Run::new(&scenario);
    let flag_arg = format!("--mcp-config={}", eq_form.display());
    let out = run
        .command(&[
            "--mcp-config",
            flagged.to_str().unwrap(),
            &flag_arg,
            "--mcp-config",
        ])
        .env("CODEX_HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success());

    let files = &read_invocations(&record).unwrap()[0].files;
    let key = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    assert_eq!(files.len(), 4, "{files:?}");
    assert_eq!(files[&key(&flagged)].contents, "[1]");
    assert_eq!(files[&key(&eq_form)].contents, "[2]");
    assert_eq!(files[&key(&home.join("config.toml"))].mode, "600");
    assert_eq!(
        files[&key(&home.join("config.toml"))].contents,
        "model = \"x\""
    );
    assert_eq!(
        files[&key(&home.join("nested/deeper/mcp.json"))].mode,
        "644"
    );
    // Symlinks are not followed.
    assert!(!files.contains_key(&key(&home.join("link"))));
    let _ = stdout(&out);
}
