//! `agentctl auth status` and `agentctl runtime-env show` as processes: a credential file in
//! the namespace counts as a login and is named by placeholder path only; neither its content
//! nor a host API key reaches the output.

use std::path::Path;
use std::process::Output;

use crate::support::{self, assert_no_secret, private_file};

const CANARY: &str = "sk-agentctl-ENV-CANARY-90ab";

fn agentctl(base: &Path, args: &[&str]) -> Output {
    support::command()
        .args(args)
        .arg("--base")
        .arg(base)
        .env("OPENAI_API_KEY", CANARY)
        .env("ANTHROPIC_API_KEY", CANARY)
        .output()
        .unwrap()
}

#[test]
fn auth_status_reports_a_namespaced_login_by_placeholder_only() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("rt");
    // A Codex login inside the namespace user:alice, holding the canary.
    let codex_home = base.join("ns/user.alice/home/.codex");
    private_file(
        &codex_home.join("auth.json"),
        &format!("{{\"OPENAI_API_KEY\":\"{CANARY}\"}}"),
        0o600,
    );

    let out = agentctl(
        &base,
        &[
            "auth",
            "status",
            "--runtime",
            "codex",
            "--namespace",
            "user:alice",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let statuses: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = &statuses[0];
    assert_eq!(codex["runtime"], "codex");
    assert_eq!(codex["logged_in"], "yes", "{codex}");
    assert_eq!(codex["auth_model"], "oauth_file");
    assert_eq!(codex["account_label"], "file:${HOME}/.codex/auth.json");
    assert_no_secret(&out, CANARY);

    // Another namespace is not logged in: the host's API key does not leak into it.
    let table = agentctl(&base, &["auth", "status", "--namespace", "user:bob"]);
    assert!(table.status.success(), "{table:?}");
    let text = String::from_utf8(table.stdout.clone()).unwrap();
    let codex_row = text.lines().find(|l| l.starts_with("codex")).unwrap();
    assert!(codex_row.contains(" no "), "{text}");
    // The mode in force comes first, with the same-user warning of multi-tenant use.
    assert!(
        text.starts_with(
            "isolation: subprocess (direct child, same OS user) separates_principals=no\n  \
             warning: multi-tenant use of isolation mode `subprocess`"
        ),
        "{text}"
    );
    assert_no_secret(&table, CANARY);

    let bad = agentctl(&base, &["auth", "status", "--namespace", "../etc"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn runtime_env_show_prints_placeholder_paths_and_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("rt");
    let out = agentctl(
        &base,
        &["runtime-env", "show", "--namespace", "ci:build-7", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["namespace"], "ci:build-7");
    assert_eq!(summary["level"], "namespaced");
    assert_eq!(summary["mode"], "subprocess");
    assert_eq!(summary["separates_principals"], false);
    assert_eq!(summary["policy_warnings"][0]["kind"], "same_user_tenants");
    assert_eq!(summary["policy_warnings"][0]["mode"], "subprocess");
    assert_eq!(summary["paths"]["HOME"], "${ROOT}/home");
    assert_eq!(summary["paths"]["CODEX_HOME"], "${ROOT}/home/.codex");
    let names = summary["env_names"].as_array().unwrap();
    assert!(
        !names.iter().any(|n| n == "OPENAI_API_KEY"),
        "host keys stay out"
    );
    assert_no_secret(&out, CANARY);
    let dir_text = dir.path().to_str().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(dir_text),
        "paths are placeholders, not the host's"
    );

    let text = agentctl(&base, &["runtime-env", "show"]);
    assert!(text.status.success());
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.starts_with("runtime env: namespace=default level=namespaced"));
    assert!(
        shown.contains(
            "isolation: subprocess (direct child, same OS user) separates_principals=no\n"
        ),
        "{shown}"
    );
    assert!(shown.contains("  warning: multi-tenant use of isolation mode `subprocess`"));

    // One tenant (the shared level): no principal to separate, so no warning.
    let single = agentctl(&base, &["runtime-env", "show", "--level", "shared"]);
    let single = String::from_utf8_lossy(&single.stdout);
    assert!(single.contains("separates_principals=no"), "{single}");
    assert!(!single.contains("warning: multi-tenant"), "{single}");
    assert_no_secret(&text, CANARY);
}
