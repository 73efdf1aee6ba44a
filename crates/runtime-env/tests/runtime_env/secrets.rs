//! The summary, `Debug` output and every error are free of canary secrets.

use runtime_env::{CredentialNamespace, Error, IsolationMode, SessionId};
use secrecy::SecretString;

use crate::support::{Sandbox, codex};

const INJECTED: &str = "canary-injected-secret-7d1";

fn assert_clean(text: &str) {
    assert!(!text.contains("canary"), "secret leaked: {text}");
}

#[test]
fn summary_is_free_of_secrets() {
    let sb = Sandbox::new();
    let env = sb
        .builder("user:alice")
        .secret("ANTHROPIC_API_KEY", SecretString::from(INJECTED))
        .secret("MY_MCP_TOKEN", SecretString::from(INJECTED))
        .build()
        .unwrap();
    std::fs::write(
        env.state_dir(codex()).unwrap().join("auth.json"),
        b"{\"refresh_token\":\"canary-on-disk\"}",
    )
    .unwrap();
    let summary = env.summary();
    let shown = summary.to_string();
    let json = serde_json::to_string(&summary).unwrap();
    for text in [&shown, &json, &format!("{summary:?}"), &format!("{env:?}")] {
        assert_clean(text);
        assert!(!text.contains("/home/host-user"), "{text}");
    }
    // Placeholder paths, names and statuses are there.
    assert!(shown.contains("root: ${BASE}/ns/user.alice"), "{shown}");
    assert!(shown.contains("HOME=${ROOT}/home"), "{shown}");
    assert!(shown.contains("CODEX_HOME=${ROOT}/home/.codex"), "{shown}");
    assert!(
        shown.contains("secrets: ANTHROPIC_API_KEY MY_MCP_TOKEN"),
        "{shown}"
    );
    assert!(
        shown.contains("claude_code: logged_in=yes model=api_key_var label=env:ANTHROPIC_API_KEY"),
        "{shown}"
    );
    assert!(
        shown.contains("codex: logged_in=yes model=oauth_file label=file:${HOME}/.codex/auth.json"),
        "{shown}"
    );
    assert!(
        shown.contains("codex ${HOME}/.codex/auth.json credential_present"),
        "{shown}"
    );
    assert!(json.contains("\"level\":\"namespaced\""), "{json}");
    assert!(json.contains("\"mode\":\"subprocess\""), "{json}");
    assert!(
        json.contains("\"injected_secrets\":[\"ANTHROPIC_API_KEY\",\"MY_MCP_TOKEN\"]"),
        "{json}"
    );
    // No absolute path of this machine at all.
    assert!(!json.contains(sb.tmp.path().to_str().unwrap()), "{json}");
}

#[test]
fn ephemeral_summary_names_the_session() {
    let sb = Sandbox::new();
    let env = sb
        .builder("ci:job")
        .level(runtime_env::IsolationLevel::Ephemeral(
            SessionId::new("s-1").unwrap(),
        ))
        .build()
        .unwrap();
    let shown = env.summary().to_string();
    assert!(
        shown.starts_with(
            "runtime env: namespace=ci:job level=ephemeral session=s-1 mode=subprocess"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("root: ${BASE}/ns/ci.job/sessions/s-1"),
        "{shown}"
    );
}

#[test]
fn builder_and_child_env_debug_are_free_of_secrets() {
    let sb = Sandbox::new();
    let builder = sb
        .builder("user:a")
        .secret("OPENAI_API_KEY", SecretString::from(INJECTED));
    assert_clean(&format!("{builder:?}"));
    let env = builder.build().unwrap();
    assert_clean(&format!("{:?}", env.child_env()));
}

#[test]
fn errors_are_free_of_secrets() {
    let sb = Sandbox::new();
    let mut errors: Vec<String> = vec![
        // A secret passed where a name belongs (arguments swapped).
        sb.builder("user:a")
            .secret("canary-token-as-name", SecretString::from("OPENAI_API_KEY"))
            .build()
            .unwrap_err()
            .to_string(),
        // A credential given as a plain variable.
        sb.builder("user:a")
            .var("OPENAI_API_KEY", "canary-plain")
            .build()
            .unwrap_err()
            .to_string(),
        // Reserved and duplicate names with secret values.
        sb.builder("user:a")
            .secret("HOME", SecretString::from("canary-home"))
            .build()
            .unwrap_err()
            .to_string(),
        sb.builder("user:a")
            .secret("T_TOKEN", SecretString::from("canary-1"))
            .secret("T_TOKEN", SecretString::from("canary-2"))
            .build()
            .unwrap_err()
            .to_string(),
        // Namespaces and session ids carrying a secret-looking value.
        CredentialNamespace::new("user:canary/../x")
            .unwrap_err()
            .to_string(),
        CredentialNamespace::new("canary:\0")
            .unwrap_err()
            .to_string(),
        SessionId::new("canary session").unwrap_err().to_string(),
        // A policy error.
        sb.builder("user:a")
            .secret("OPENAI_API_KEY", SecretString::from("canary-p"))
            .mode(IsolationMode::InProcess)
            .build()
            .unwrap_err()
            .to_string(),
    ];
    // Runtime-file and file-system errors.
    let env = sb
        .builder("user:a")
        .secret("OPENAI_API_KEY", SecretString::from("canary-q"))
        .build()
        .unwrap();
    for rel in ["../canary", "auth.json"] {
        let e = env
            .write_runtime_file(codex(), rel, b"canary-content")
            .unwrap_err();
        errors.push(format!("{e} / {e:?}"));
    }
    std::fs::set_permissions(
        env.home(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let fs_err: Error = sb
        .builder("user:a")
        .secret("OPENAI_API_KEY", SecretString::from("canary-r"))
        .build()
        .unwrap_err();
    assert!(matches!(fs_err, Error::Fs(_)), "{fs_err}");
    errors.push(format!("{fs_err} / {fs_err:?}"));
    // The remaining variants: relative cwd, missing host HOME, existing session, large file.
    let with_secret = |b: runtime_env::RuntimeEnvBuilder| {
        b.secret("OPENAI_API_KEY", SecretString::from("canary-s"))
            .build()
            .unwrap_err()
    };
    let e = with_secret(runtime_env::RuntimeEnv::builder(
        sb.base(),
        "user:b".parse().unwrap(),
        "relative",
    ));
    assert!(matches!(e, Error::RelativeCwd));
    errors.push(format!("{e} / {e:?}"));
    let e = with_secret(
        sb.builder("user:b")
            .host_env(runtime_env::HostEnv::from_vars([("HOME", "canary-rel")]))
            .level(runtime_env::IsolationLevel::Shared)
            .tenancy(runtime_env::Tenancy::Single),
    );
    assert!(matches!(e, Error::HostHomeMissing));
    errors.push(format!("{e} / {e:?}"));
    let session = runtime_env::IsolationLevel::Ephemeral(SessionId::new("s-dup").unwrap());
    let live = sb.builder("user:b").level(session.clone()).build().unwrap();
    let e = with_secret(sb.builder("user:b").level(session));
    assert!(matches!(e, Error::SessionExists(_)));
    errors.push(format!("{e} / {e:?}"));
    drop(live);
    let big = sb.builder("user:b").build().unwrap();
    std::fs::write(
        big.state_dir(codex()).unwrap().join("big.toml"),
        vec![b'x'; (runtime_env::MAX_RUNTIME_FILE + 1) as usize],
    )
    .unwrap();
    let e = big
        .lock_config()
        .unwrap()
        .read(codex(), "big.toml")
        .unwrap_err();
    assert!(matches!(e, Error::FileTooLarge { .. }));
    errors.push(format!("{e} / {e:?}"));
    let e = sb
        .bare("user:c")
        .secret("OPENAI_API_KEY", SecretString::from("canary-s"))
        .build()
        .unwrap()
        .state_dir(codex())
        .unwrap_err();
    assert!(matches!(e, Error::UnknownRuntime { .. }));
    errors.push(format!("{e} / {e:?}"));
    assert_eq!(errors.len(), 16);
    for e in &errors {
        assert_clean(e);
    }
}

#[test]
fn runtime_env_redactor_knows_injected_secrets() {
    let sb = crate::support::Sandbox::new();
    let env = sb
        .builder("user:r")
        .secret("MY_MCP_TOKEN", SecretString::from("opaque-canary-9f2"))
        .build()
        .unwrap();
    assert_eq!(
        env.redactor().redact("tool said opaque-canary-9f2"),
        "tool said [REDACTED]"
    );
}
