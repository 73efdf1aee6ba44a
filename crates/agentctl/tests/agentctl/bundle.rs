//! `agentctl support-bundle`: versions as probed, the namespace and its level and mode, auth
//! status and config-source hashes, in one 0600 file that holds no secret, even with a
//! credential file, a config file and host API keys all carrying a canary.

use std::os::unix::fs::PermissionsExt;

use crate::support::{self, private_file};

const CANARY: &str = "sk-agentctl-BUNDLE-CANARY-5d2f";

#[test]
fn the_bundle_holds_versions_statuses_and_hashes_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("rt");
    let home = base.join("ns/user.alice/home");
    private_file(
        &home.join(".codex/auth.json"),
        &format!("{{\"OPENAI_API_KEY\":\"{CANARY}\"}}"),
        0o600,
    );
    private_file(
        &home.join(".codex/config.toml"),
        &format!("# token {CANARY}\nmodel = \"m\"\n"),
        0o600,
    );
    let fake_codex = dir.path().join("bin/codex");
    private_file(&fake_codex, "#!/bin/sh\necho \"codex-cli 9.8.7\"\n", 0o700);
    let failing = dir.path().join("bin/codebuddy");
    private_file(&failing, "#!/bin/sh\nexit 3\n", 0o700);

    let bundle_path = dir.path().join("bundle.json");
    let run = || {
        support::command()
            .args(["support-bundle", "--namespace", "user:alice", "-o"])
            .arg(&bundle_path)
            .arg("--base")
            .arg(&base)
            .env("CODEX_BIN", &fake_codex)
            .env("CLAUDE_BIN", dir.path().join("bin/absent"))
            .env("CODEBUDDY_BIN", &failing)
            .env("OPENAI_API_KEY", CANARY)
            .env("CODEBUDDY_API_KEY", CANARY)
            .output()
            .unwrap()
    };
    let out = run();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&bundle_path).unwrap();
    assert!(!text.contains(CANARY), "the bundle holds a secret");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(CANARY));
    let mode = std::fs::metadata(&bundle_path)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let bundle: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(bundle["format"], 1);
    assert_eq!(bundle["sdk_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(bundle["runtime_env"]["namespace"], "user:alice");
    assert_eq!(bundle["runtime_env"]["level"], "namespaced");
    // The mode in force: a direct child of agentctl, in its OS user, no principal boundary.
    assert_eq!(bundle["runtime_env"]["mode"], "subprocess");
    assert_eq!(bundle["runtime_env"]["separates_principals"], false);
    assert_eq!(
        bundle["runtime_env"]["policy_warnings"][0]["kind"],
        "same_user_tenants"
    );
    let probes = bundle["runtimes"].as_array().unwrap();
    let probe = |name: &str| {
        probes
            .iter()
            .find(|p| p["runtime"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(probe("codex")["version"], "9.8.7");
    assert_eq!(probe("claude_code")["probe"], "not_found");
    assert_eq!(probe("codebuddy")["probe"], "failed");
    let codex_auth = bundle["auth"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["runtime"] == "codex")
        .unwrap();
    assert_eq!(codex_auth["logged_in"], "yes");
    // The config file is hashed (so a support engineer can compare), never copied.
    let sources = bundle["snapshot"]["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["runtime"] == "codex")
        .unwrap()["sources"]
        .as_array()
        .unwrap()
        .clone();
    let config = sources
        .iter()
        .find(|s| s["path"] == "${HOME}/.codex/config.toml")
        .unwrap();
    assert_eq!(config["status"], "present");
    assert_eq!(config["blake3"].as_str().unwrap().len(), 64);

    // Never over an existing file.
    let again = run();
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&bundle_path).unwrap(), text);
}
