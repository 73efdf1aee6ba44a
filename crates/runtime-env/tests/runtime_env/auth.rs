//! Auth status per namespace and runtime from fake homes: nothing, a credential file, an
//! injected key, a keyring setting. Nothing secret is read or shown.

use std::fs::{self, Permissions};
use std::os::unix::fs::PermissionsExt;

use runtime_env::{AuthModel, LoggedIn};
use secrecy::SecretString;

use crate::support::{Sandbox, claude, codebuddy, codex, cursor, gemini};

fn status(
    env: &runtime_env::RuntimeEnv,
    kind: &runtime_env::RuntimeDescriptor,
) -> (LoggedIn, Option<AuthModel>, Option<String>) {
    let s = env.auth_status(kind).unwrap();
    (s.logged_in, s.auth_model, s.account_label)
}

#[test]
fn fresh_namespace_is_logged_out_or_unknown() {
    let sb = Sandbox::new();
    // The host has every credential variable set; none of it counts for a tenant.
    let env = sb.builder("user:new").build().unwrap();
    assert_eq!(status(&env, codex()), (LoggedIn::No, None, None));
    let claude = status(&env, claude());
    if cfg!(target_os = "macos") {
        assert_eq!(claude, (LoggedIn::Unknown, Some(AuthModel::Keyring), None));
    } else {
        assert_eq!(claude, (LoggedIn::No, None, None));
    }
    // Runtimes that may use a keyring are never reported as logged out.
    for kind in [cursor(), codebuddy(), gemini()] {
        assert_eq!(
            status(&env, kind),
            (LoggedIn::Unknown, Some(AuthModel::Keyring), None)
        );
    }
    let all = env.auth_statuses();
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|s| s.api_key_vars.is_empty()));
}

#[test]
fn credential_files_count_as_login_by_presence() {
    let sb = Sandbox::new();
    let env = sb.builder("user:files").build().unwrap();
    let auth = env.state_dir(codex()).unwrap().join("auth.json");
    fs::write(&auth, b"{\"OPENAI_API_KEY\":\"canary-file-key\"}").unwrap();
    fs::set_permissions(&auth, Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        status(&env, codex()),
        (
            LoggedIn::Yes,
            Some(AuthModel::OauthFile),
            Some("file:${HOME}/.codex/auth.json".to_owned())
        )
    );
    let s = env.auth_status(codex()).unwrap();
    assert_eq!(s.credential_files[0].private, Some(true));
    assert!(s.warnings.is_empty());

    // A credential file others can read is reported.
    fs::set_permissions(&auth, Permissions::from_mode(0o644)).unwrap();
    let s = env.auth_status(codex()).unwrap();
    assert_eq!(s.credential_files[0].private, Some(false));
    assert!(
        s.warnings[0].contains("not private (mode 0644"),
        "{:?}",
        s.warnings
    );

    // An empty file is not a login.
    fs::write(&auth, b"").unwrap();
    assert_eq!(status(&env, codex()).0, LoggedIn::No);

    fs::write(
        env.state_dir(claude()).unwrap().join(".credentials.json"),
        b"{}",
    )
    .unwrap();
    assert_eq!(
        status(&env, claude()),
        (
            LoggedIn::Yes,
            Some(AuthModel::OauthFile),
            Some("file:${HOME}/.claude/.credentials.json".to_owned())
        )
    );
    fs::write(env.home().join(".gemini/oauth_creds.json"), b"{}").unwrap();
    assert_eq!(status(&env, gemini()).1, Some(AuthModel::OauthFile));

    let text = serde_json::to_string(&env.auth_statuses()).unwrap();
    assert!(!text.contains("canary"));
}

#[test]
fn injected_keys_count_as_login_by_name() {
    let sb = Sandbox::new();
    let env = sb
        .builder("user:keys")
        .secret(
            "OPENAI_API_KEY",
            SecretString::from("canary-injected-openai"),
        )
        .secret(
            "CURSOR_API_KEY",
            SecretString::from("canary-injected-cursor"),
        )
        .build()
        .unwrap();
    assert_eq!(
        status(&env, codex()),
        (
            LoggedIn::Yes,
            Some(AuthModel::ApiKeyVar),
            Some("env:OPENAI_API_KEY".to_owned())
        )
    );
    assert_eq!(
        env.auth_status(codex()).unwrap().api_key_vars,
        ["OPENAI_API_KEY"]
    );
    assert_eq!(status(&env, cursor()).1, Some(AuthModel::ApiKeyVar));
    // A key for one runtime does not log in another.
    assert_eq!(status(&env, gemini()).0, LoggedIn::Unknown);
    let text = format!("{:?}", env.auth_statuses());
    assert!(!text.contains("canary"));
}

#[test]
fn codex_keyring_store_makes_the_status_unknown() {
    let sb = Sandbox::new();
    let env = sb.builder("user:kr").build().unwrap();
    env.write_runtime_file(
        codex(),
        "config.toml",
        b"model = \"x\"\ncli_auth_credentials_store = \"keyring\"\n",
    )
    .unwrap();
    assert_eq!(
        status(&env, codex()),
        (LoggedIn::Unknown, Some(AuthModel::Keyring), None)
    );
    env.write_runtime_file(
        codex(),
        "config.toml",
        b"cli_auth_credentials_store = \"file\"\n",
    )
    .unwrap();
    assert_eq!(status(&env, codex()).0, LoggedIn::No);
}

#[test]
fn namespaces_have_separate_auth() {
    let sb = Sandbox::new();
    let a = sb.builder("user:a").build().unwrap();
    let b = sb.builder("user:b").build().unwrap();
    fs::write(a.state_dir(codex()).unwrap().join("auth.json"), b"{}").unwrap();
    assert_eq!(status(&a, codex()).0, LoggedIn::Yes);
    assert_eq!(status(&b, codex()).0, LoggedIn::No);
}
