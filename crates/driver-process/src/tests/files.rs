//! Per-run files, and the namespace files a turn installs and restores.

use std::os::unix::fs::PermissionsExt;

use fake_cli::read_invocations;

use crate::error::ProcessError;
use crate::files::RUNS_DIR;
use crate::files::RunFiles;
use crate::process::CliProcess;
use crate::tests::support::{CLAUDE, CODEX, fixture, limits};
use crate::turn_lock::NamespaceFiles;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn files_are_private_and_visible_to_the_child() {
    let fx = fixture();
    let files = RunFiles::create(&fx.env, &CODEX, "run-42").unwrap();
    let runs = fx.env.state_dir(&CODEX).unwrap().join(RUNS_DIR);
    assert_eq!(files.dir().parent().unwrap(), runs);
    assert!(files.dir().is_dir());
    assert_eq!(mode(files.dir()), 0o700);
    assert!(
        files
            .dir()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("run-42-"),
        "{}",
        files.dir().display()
    );
    // Empty until something is written.
    assert_eq!(std::fs::read_dir(files.dir()).unwrap().count(), 0);

    let config = br#"{"mcpServers":{"docs":{"command":"docs-server"}}}"#;
    let path = files.write("mcp.json", config).unwrap();
    assert_eq!(path, files.dir().join("mcp.json"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read(&path).unwrap(), config);

    let (record, scenario) = fx.recording();
    let scenario = scenario.capture_arg_flag("--mcp-config");
    let command = fx.fake(&scenario).arg("--mcp-config").arg(&path);
    CliProcess::spawn(&fx.env, command, limits())
        .unwrap()
        .wait()
        .await
        .unwrap();
    let seen = &read_invocations(&record).unwrap()[0].files[path.to_str().unwrap()];
    assert_eq!(seen.contents.as_bytes(), config);
    assert_eq!(seen.mode, "600");
}

#[test]
fn concurrent_runs_with_the_same_id_never_share_a_directory() {
    let fx = fixture();
    let dirs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let env = &fx.env;
                s.spawn(move || {
                    let files = RunFiles::create(env, &CODEX, "same-run").unwrap();
                    files
                        .write("config.toml", format!("n = {i}").as_bytes())
                        .unwrap();
                    files
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut unique: Vec<_> = dirs.iter().map(|f| f.dir().to_owned()).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 8);
    let mut contents: Vec<String> = dirs
        .iter()
        .map(|f| std::fs::read_to_string(f.dir().join("config.toml")).unwrap())
        .collect();
    contents.sort();
    assert_eq!(
        contents,
        (0..8).map(|i| format!("n = {i}")).collect::<Vec<_>>()
    );
}

#[test]
fn the_directory_is_removed_on_drop_and_on_remove() {
    let fx = fixture();
    let dropped = RunFiles::create(&fx.env, &CLAUDE, "r").unwrap();
    dropped.write("a.json", b"{}").unwrap();
    let dropped_dir = dropped.dir().to_owned();
    drop(dropped);
    assert!(!dropped_dir.exists());

    let removed = RunFiles::create(&fx.env, &CLAUDE, "r").unwrap();
    removed.write("a.json", b"{}").unwrap();
    let removed_dir = removed.dir().to_owned();
    removed.remove().unwrap();
    assert!(!removed_dir.exists());
    // The parent stays for other runs.
    assert!(removed_dir.parent().unwrap().is_dir());
}

#[test]
fn file_names_must_be_plain() {
    let fx = fixture();
    let files = RunFiles::create(&fx.env, &CODEX, "r").unwrap();
    for name in [
        "",
        ".",
        "..",
        "../escape",
        "a/b",
        "/etc/passwd",
        "a\\b",
        "nul\0",
    ] {
        let err = files.write(name, b"x").unwrap_err();
        assert!(
            matches!(err, ProcessError::InvalidFileName { .. }),
            "{name:?}: {err:?}"
        );
    }
    assert!(files.write(".hidden", b"x").is_ok());
}

#[test]
fn odd_run_ids_stay_inside_the_runs_directory() {
    let fx = fixture();
    let files = RunFiles::create(&fx.env, &CODEX, "../../etc").unwrap();
    let runs = fx.env.state_dir(&CODEX).unwrap().join(RUNS_DIR);
    assert_eq!(files.dir().parent().unwrap(), runs);
}

#[test]
fn restoring_namespace_files_removes_a_file_that_was_not_there() {
    let fx = fixture();
    let files = NamespaceFiles::install(&fx.env, &CLAUDE, &["mcp.json"], |_| {
        vec![Some(b"{}".to_vec())]
    })
    .unwrap();
    let path = fx.env.state_dir(&CLAUDE).unwrap().join("mcp.json");
    assert!(path.exists());
    files.restore().unwrap();
    assert!(!path.exists());
}
