//! Implicit-source snapshots: identical across namespaces with equal content, one changed byte
//! changes exactly one hash, credentials are presence-only, odd files never block.

use std::fs;
use std::path::Path;
use std::process::Command;

use runtime_env::{RuntimeEnv, SourceStatus};

use crate::support::{Sandbox, claude, codex, cursor, gemini};

/// Writes the same config tree into an environment and its project.
fn populate(env: &RuntimeEnv, project: &Path) {
    env.write_runtime_file(codex(), "config.toml", b"model = \"gpt\"\n")
        .unwrap();
    env.write_runtime_file(codex(), "rules/default.rules", b"allow ls\n")
        .unwrap();
    env.write_runtime_file(codex(), "rules/nested/x.rules", b"deny rm\n")
        .unwrap();
    env.write_runtime_file(claude(), "settings.json", b"{\"a\":1}")
        .unwrap();
    env.write_runtime_file(gemini(), ".gemini/settings.json", b"{}")
        .unwrap();
    env.write_runtime_file(cursor(), "mcp.json", b"{\"mcpServers\":{}}")
        .unwrap();
    // Credential files are written by the runtimes' own logins, never by this crate.
    fs::write(
        env.state_dir(codex()).unwrap().join("auth.json"),
        b"{\"tokens\":{\"access_token\":\"canary-oauth-token\"}}",
    )
    .unwrap();
    fs::write(project.join("AGENTS.md"), b"# Agents\n").unwrap();
    fs::create_dir_all(project.join(".cursor/rules")).unwrap();
    fs::write(project.join(".cursor/rules/style.mdc"), b"be terse").unwrap();
}

fn two_envs() -> (Sandbox, RuntimeEnv, Sandbox, RuntimeEnv) {
    let a = Sandbox::new();
    let env_a = a.builder("user:alice").build().unwrap();
    populate(&env_a, &a.project());
    // A different base path (length too), namespace and project directory.
    let b = Sandbox::new();
    let b_base = b.tmp.path().join("a-much-longer-base-directory-name");
    let env_b = RuntimeEnv::builder(&b_base, "ci:Job-42".parse().unwrap(), b.project())
        .host_env(crate::support::test_host())
        .runtimes(crate::support::all_runtimes())
        .build()
        .unwrap();
    populate(&env_b, &b.project());
    (a, env_a, b, env_b)
}

#[test]
fn equal_content_gives_byte_identical_snapshots() {
    let (_a, env_a, _b, env_b) = two_envs();
    let (ja, jb) = (env_a.snapshot().to_json(), env_b.snapshot().to_json());
    assert_eq!(ja, jb);
    // Deterministic across calls, and independent of the machine's paths.
    assert_eq!(ja, env_a.snapshot().to_json());
    assert!(!ja.contains(env_a.base_dir().to_str().unwrap()));
    assert!(
        ja.contains("\"path\":\"${HOME}/.codex/config.toml\""),
        "{ja}"
    );
    assert!(ja.contains("\"path\":\"${CWD}/AGENTS.md\""), "{ja}");
    // The file hash is plain BLAKE3 of the raw bytes.
    let expected = blake3::hash(b"model = \"gpt\"\n").to_hex().to_string();
    assert!(ja.contains(&expected), "{ja}");
}

#[test]
fn one_changed_byte_changes_exactly_one_hash() {
    let (_a, env_a, _b, env_b) = two_envs();
    env_b
        .write_runtime_file(codex(), "config.toml", b"model = \"gpu\"\n")
        .unwrap();
    let (sa, sb) = (env_a.snapshot(), env_b.snapshot());
    let mut differing = Vec::new();
    for (ra, rb) in sa.runtimes.iter().zip(&sb.runtimes) {
        for (x, y) in ra.sources.iter().zip(&rb.sources) {
            assert_eq!((&x.path, x.status), (&y.path, y.status));
            if x.blake3 != y.blake3 {
                differing.push(x.path.clone());
            }
        }
    }
    assert_eq!(differing, ["${HOME}/.codex/config.toml"]);

    // A byte inside a directory source changes that directory's hash only.
    env_b
        .write_runtime_file(codex(), "config.toml", b"model = \"gpt\"\n")
        .unwrap();
    env_b
        .write_runtime_file(codex(), "rules/nested/x.rules", b"deny rn\n")
        .unwrap();
    let sb = env_b.snapshot();
    let differing: Vec<_> = sa.runtimes[0]
        .sources
        .iter()
        .zip(&sb.runtimes[0].sources)
        .filter(|(x, y)| x.blake3 != y.blake3)
        .map(|(x, _)| x.path.clone())
        .collect();
    assert_eq!(differing, ["${HOME}/.codex/rules"]);
}

#[test]
fn credentials_are_presence_only() {
    let (_a, env_a, _b, _env_b) = two_envs();
    let snap = env_a.snapshot();
    let json = snap.to_json();
    assert!(!json.contains("canary"));
    let codex = &snap.runtimes[0];
    let auth = codex
        .sources
        .iter()
        .find(|s| s.path == "${HOME}/.codex/auth.json")
        .unwrap();
    assert_eq!(auth.status, SourceStatus::CredentialPresent);
    assert_eq!(auth.blake3, None);
    let claude = snap
        .runtimes
        .iter()
        .find(|r| r.runtime == "claude_code")
        .unwrap();
    let creds = claude
        .sources
        .iter()
        .find(|s| s.path.ends_with(".credentials.json"))
        .unwrap();
    assert_eq!(creds.status, SourceStatus::Absent);
    for r in &snap.runtimes {
        for s in &r.sources {
            if s.status != SourceStatus::Present {
                assert_eq!(s.blake3, None, "{}", s.path);
            } else {
                assert!(
                    s.blake3.as_ref().is_some_and(|h| h.len() == 64),
                    "{}",
                    s.path
                );
            }
        }
    }
}

#[test]
fn fifo_and_wrong_types_are_unreadable_and_never_block() {
    let sb = Sandbox::new();
    let env = sb
        .bare("user:odd")
        .runtimes([codex(), cursor()])
        .build()
        .unwrap();
    let fifo = env.state_dir(codex()).unwrap().join("config.toml");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    // A directory where a file is expected, a file where a directory is expected.
    fs::create_dir(env.state_dir(cursor()).unwrap().join("mcp.json")).unwrap();
    fs::write(env.state_dir(codex()).unwrap().join("rules"), b"not a dir").unwrap();
    let snap = env.snapshot();
    let status = |path: &str| {
        snap.runtimes
            .iter()
            .flat_map(|r| &r.sources)
            .find(|s| s.path == path)
            .unwrap()
            .status
    };
    assert_eq!(
        status("${HOME}/.codex/config.toml"),
        SourceStatus::Unreadable
    );
    assert_eq!(status("${HOME}/.cursor/mcp.json"), SourceStatus::Unreadable);
    assert_eq!(status("${HOME}/.codex/rules"), SourceStatus::Unreadable);
    assert_eq!(status("${CWD}/AGENTS.md"), SourceStatus::Absent);
    // Auth detection reads config.toml for the keyring setting: it must not block either.
    let _ = env.auth_status(codex()).unwrap();
}

/// Golden shape of the serialization (format version, field order, status names).
#[test]
fn serialization_shape() {
    let sb = Sandbox::new();
    let env = sb.bare("user:g").runtimes([cursor()]).build().unwrap();
    env.write_runtime_file(cursor(), "cli-config.json", b"{}")
        .unwrap();
    let expected = format!(
        concat!(
            r#"{{"format":1,"runtimes":[{{"runtime":"cursor","sources":["#,
            r#"{{"path":"${{HOME}}/.cursor/cli-config.json","kind":"config","status":"present","blake3":"{}"}},"#,
            r#"{{"path":"${{HOME}}/.cursor/mcp.json","kind":"mcp","status":"absent"}},"#,
            r#"{{"path":"${{CWD}}/.cursor/cli.json","kind":"policy","status":"absent"}},"#,
            r#"{{"path":"${{CWD}}/.cursor/mcp.json","kind":"mcp","status":"absent"}},"#,
            r#"{{"path":"${{CWD}}/.cursor/rules","kind":"instructions","status":"absent"}},"#,
            r#"{{"path":"${{CWD}}/AGENTS.md","kind":"instructions","status":"absent"}}"#,
            r#"]}}]}}"#
        ),
        blake3::hash(b"{}").to_hex()
    );
    assert_eq!(env.snapshot().to_json(), expected);
}
