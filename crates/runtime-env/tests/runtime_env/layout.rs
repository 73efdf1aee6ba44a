//! The layout and child environment of each level, and the builder's input and policy errors.

use std::path::Path;

use runtime_env::LAYOUT_VARS;
use runtime_env::{
    Error, HostEnv, IsolationLevel, IsolationMode, PolicyError, PolicyWarning, SessionId, Tenancy,
};
use secrecy::SecretString;

use crate::support::{Sandbox, child_value, claude, codebuddy, codex, cursor, gemini, mode};

#[test]
fn namespaced_layout_sets_every_variable_under_the_root() {
    let sb = Sandbox::new();
    let env = sb.builder("user:alice").build().unwrap();
    let root = env.root().unwrap().to_owned();
    assert_eq!(root, sb.base().join("ns").join("user.alice"));
    let child = env.child_env();
    for (var, sub) in LAYOUT_VARS {
        let p = Path::new(child.get(var).unwrap());
        assert_eq!(p, root.join(sub), "{var}");
        assert!(p.is_dir(), "{var}");
        assert_eq!(mode(p), 0o700, "{var}");
    }
    assert_eq!(child.get("XDG_CONFIG_DIRS").unwrap(), "/etc/xdg");
    assert_eq!(
        child.get("XDG_DATA_DIRS").unwrap(),
        "/usr/local/share:/usr/share"
    );
    let home = env.home();
    for (kind, sub) in [
        (codex(), ".codex"),
        (claude(), ".claude"),
        (cursor(), ".cursor"),
        (codebuddy(), ".codebuddy"),
        (gemini(), ""),
    ] {
        let var = kind.state_var;
        let expected = if sub.is_empty() {
            home.to_owned()
        } else {
            home.join(sub)
        };
        assert_eq!(Path::new(child.get(var).unwrap()), expected, "{var}");
        assert_eq!(env.state_dir(kind).unwrap(), expected);
        assert_eq!(mode(&expected), 0o700, "{var}");
    }
    assert_eq!(mode(&home.join(".gemini")), 0o700);
    // Allow-listed host variables pass; the host's HOME, state dirs and others do not.
    assert_eq!(
        child.get("PATH"),
        None,
        "copied values are not readable from ChildEnv"
    );
    assert_eq!(
        child_value(&env, "PATH").unwrap(),
        "/usr/local/bin:/usr/bin:/bin"
    );
    assert_eq!(child_value(&env, "LC_ALL").unwrap(), "C.UTF-8");
    assert!(!child.contains("LD_PRELOAD"));
    assert_ne!(child.get("HOME").unwrap(), "/home/host-user");
    // Reusing the namespace finds the same, still private, tree.
    drop(env);
    let again = sb.builder("user:alice").build().unwrap();
    assert_eq!(again.root().unwrap(), root);
}

#[test]
fn ephemeral_root_is_under_the_namespace_sessions_dir() {
    let sb = Sandbox::new();
    let id = SessionId::new("Run-7").unwrap();
    let env = sb
        .builder("ci:job-1")
        .level(IsolationLevel::Ephemeral(id.clone()))
        .build()
        .unwrap();
    let root = env.root().unwrap();
    assert_eq!(root, sb.base().join("ns/ci.job-1/sessions/^run-7"));
    assert_eq!(env.home(), root.join("home"));
    assert!(env.state_dir(codex()).unwrap().is_dir());
    let err = sb
        .builder("ci:job-1")
        .level(IsolationLevel::Ephemeral(id))
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::SessionExists(_)), "{err}");
}

#[test]
fn shared_level_uses_the_hosts_own_directories() {
    let sb = Sandbox::new();
    let host = HostEnv::from_vars([
        ("PATH", "/bin"),
        ("HOME", "/home/host-user"),
        ("XDG_CONFIG_HOME", "relative/config"),
        ("XDG_CACHE_HOME", ""),
        ("XDG_STATE_HOME", "/home/host-user/.state"),
        ("CODEX_HOME", "/srv/codex"),
        ("OPENAI_API_KEY", "canary-openai-host"),
    ]);
    let env = sb
        .bare("default")
        .host_env(host)
        .level(IsolationLevel::Shared)
        .tenancy(Tenancy::Single)
        .mode(IsolationMode::InProcess)
        .runtimes([codex(), claude()])
        .build()
        .unwrap();
    let child = env.child_env();
    assert_eq!(env.root(), None);
    assert_eq!(child.get("HOME").unwrap(), "/home/host-user");
    // Relative and empty XDG values are invalid per the spec and are ignored.
    assert!(!child.contains("XDG_CONFIG_HOME"));
    assert!(!child.contains("XDG_CACHE_HOME"));
    assert_eq!(
        child.get("XDG_STATE_HOME").unwrap(),
        "/home/host-user/.state"
    );
    // The host's own state variable is its own state; unset ones stay unset.
    assert_eq!(child.get("CODEX_HOME").unwrap(), "/srv/codex");
    assert!(!child.contains("CLAUDE_CONFIG_DIR"));
    assert_eq!(
        env.state_dir(claude()).unwrap(),
        Path::new("/home/host-user/.claude")
    );
    // Credentials still never pass from the host.
    assert!(!child.contains("OPENAI_API_KEY"));
    assert!(
        !Path::new("/home/host-user").exists(),
        "nothing created in the host HOME"
    );
}

#[test]
fn shared_level_needs_an_absolute_host_home() {
    let sb = Sandbox::new();
    let err = sb
        .builder("default")
        .host_env(HostEnv::from_vars([("HOME", "relative")]))
        .level(IsolationLevel::Shared)
        .tenancy(Tenancy::Single)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::HostHomeMissing), "{err}");
}

#[test]
fn policy_rejections_come_from_the_builder() {
    let sb = Sandbox::new();
    let err = sb
        .bare("user:a")
        .mode(IsolationMode::InProcess)
        .runtimes([codex()])
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Policy(PolicyError::InProcessMultiTenant { runtime: "codex" })
        ),
        "{err}"
    );
    let err = sb
        .bare("user:a")
        .level(IsolationLevel::Shared)
        .runtimes([claude()])
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Policy(PolicyError::SharedLevelMultiTenant { .. })
        ),
        "{err}"
    );
    let err = sb
        .bare("user:a")
        .mode(IsolationMode::InProcess)
        .tenancy(Tenancy::Single)
        .runtimes([cursor()])
        .build()
        .unwrap_err();
    assert!(
        matches!(err, Error::Policy(PolicyError::UnsupportedMode { .. })),
        "{err}"
    );
    // Nothing was created for a rejected combination.
    assert!(!sb.base().exists());
    // The single-tenant in-process Codex case is allowed.
    sb.bare("user:a")
        .mode(IsolationMode::InProcess)
        .tenancy(Tenancy::Single)
        .runtimes([codex()])
        .build()
        .unwrap();
}

#[test]
fn caller_variables_are_validated() {
    let sb = Sandbox::new();
    type Case = (runtime_env::RuntimeEnvBuilder, fn(&Error) -> bool);
    let cases: Vec<Case> = vec![
        (sb.builder("d").var("HOME", "/x"), |e| {
            matches!(e, Error::ReservedVar { .. })
        }),
        (sb.builder("d").var("CODEX_HOME", "/x"), |e| {
            matches!(e, Error::ReservedVar { .. })
        }),
        (sb.builder("d").var("XDG_DATA_DIRS", "/x"), |e| {
            matches!(e, Error::ReservedVar { .. })
        }),
        (
            sb.builder("d").secret("TMPDIR", SecretString::from("x")),
            |e| matches!(e, Error::ReservedVar { .. }),
        ),
        (sb.builder("d").var("OPENAI_API_KEY", "v"), |e| {
            matches!(e, Error::CredentialVar { .. })
        }),
        (sb.builder("d").var("MY_MCP_TOKEN", "v"), |e| {
            matches!(e, Error::CredentialVar { .. })
        }),
        (sb.builder("d").var("BAD-NAME", "v"), |e| {
            matches!(e, Error::InvalidVarName { len: 8 })
        }),
        (
            sb.builder("d")
                .secret("K_TOKEN", SecretString::from("a"))
                .secret("K_TOKEN", SecretString::from("b")),
            |e| matches!(e, Error::DuplicateVar { .. }),
        ),
        (
            sb.builder("d")
                .var("X", "1")
                .secret("X", SecretString::from("b")),
            |e| matches!(e, Error::DuplicateVar { .. }),
        ),
    ];
    for (builder, check) in cases {
        let err = builder.build().unwrap_err();
        assert!(check(&err), "{err}");
    }
    let err = runtime_env::RuntimeEnv::builder(sb.base(), "d".parse().unwrap(), "relative/cwd")
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::RelativeCwd), "{err}");

    let env = sb
        .builder("d")
        .var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .secret("ANTHROPIC_API_KEY", SecretString::from("injected"))
        .build()
        .unwrap();
    assert_eq!(
        child_value(&env, "ANTHROPIC_BASE_URL").unwrap(),
        "http://127.0.0.1:9"
    );
    assert!(env.child_env().contains("ANTHROPIC_API_KEY"));
    assert_eq!(
        env.child_env().get("ANTHROPIC_API_KEY"),
        None,
        "secrets are not readable"
    );
    assert_eq!(child_value(&env, "ANTHROPIC_API_KEY").unwrap(), "injected");
}

#[test]
fn command_applies_cwd_and_a_cleared_environment() {
    let sb = Sandbox::new();
    let env = sb.builder("d").build().unwrap();
    let cmd = env.command("codex");
    assert_eq!(cmd.get_current_dir(), Some(sb.project().as_path()));
    let names: Vec<_> = cmd
        .get_envs()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    let mut expected = env.child_env().names();
    expected.sort();
    assert_eq!(names, expected);
}

/// The policy's same-user warning is kept by the environment and reported by its summary: the
/// default (multi-tenant, a direct child) carries it, a worker and a single tenant do not.
#[test]
fn the_environment_keeps_and_reports_the_same_user_warning() {
    let sb = Sandbox::new();
    let direct = sb.builder("user:alice").build().unwrap();
    assert_eq!(direct.mode(), IsolationMode::Subprocess);
    assert_eq!(
        direct.policy_warnings(),
        [PolicyWarning::SameUserTenants {
            mode: IsolationMode::Subprocess
        }]
    );
    let summary = direct.summary();
    assert!(!summary.separates_principals);
    let text = summary.to_string();
    assert!(
        text.contains(
            "\nisolation: subprocess (direct child, same OS user) separates_principals=no\n  \
             warning: multi-tenant use of isolation mode `subprocess`"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["separates_principals"], false);
    assert_eq!(
        json["policy_warnings"],
        serde_json::json!([{"kind": "same_user_tenants", "mode": "subprocess"}])
    );

    // Even an environment that serves no runtime yet carries the mode's warning.
    let bare = sb.bare("user:carol").build().unwrap();
    assert_eq!(bare.policy_warnings().len(), 1);

    let worker = sb
        .builder("user:bob")
        .mode(IsolationMode::Worker)
        .build()
        .unwrap();
    assert!(worker.policy_warnings().is_empty());
    let text = worker.summary().to_string();
    assert!(
        text.contains("isolation: worker (worker, OS boundary) separates_principals=yes\n"),
        "{text}"
    );
    assert!(!text.contains("warning: multi-tenant"), "{text}");

    let single = sb
        .builder("default")
        .tenancy(Tenancy::Single)
        .build()
        .unwrap();
    assert!(single.policy_warnings().is_empty());
}
