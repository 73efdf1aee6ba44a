//! An environment serves the runtimes it is given, and only those: a runtime it was not told
//! about has no state directory in it (not even the host's, at the shared level), and
//! descriptors are checked before anything is created.

use runtime_env::{Error, IsolationLevel, RuntimeDescriptor, Tenancy};

use crate::support::{Sandbox, claude, codex};

fn unknown(err: Error) -> bool {
    matches!(err, Error::UnknownRuntime { runtime: "codex" })
}

#[test]
fn a_runtime_not_served_has_no_state_here() {
    let sb = Sandbox::new();
    let env = sb.bare("user:a").runtimes([claude()]).build().unwrap();
    assert_eq!(env.runtimes(), [claude()]);
    assert!(!env.child_env().contains("CODEX_HOME"));
    assert!(env.child_env().contains("CLAUDE_CONFIG_DIR"));
    assert!(!env.home().join(".codex").exists());
    assert!(unknown(env.state_dir(codex()).unwrap_err()));
    assert!(unknown(env.auth_status(codex()).unwrap_err()));
    let lock = env.lock_config().unwrap();
    assert!(unknown(lock.read(codex(), "config.toml").unwrap_err()));
    assert!(unknown(
        lock.write(codex(), "config.toml", b"x").unwrap_err()
    ));
    drop(lock);
    assert!(!env.home().join(".codex").exists(), "nothing created");
    let summary = env.summary();
    assert_eq!(summary.auth.len(), 1);
    assert_eq!(summary.snapshot.runtimes.len(), 1);
    assert!(!summary.paths.contains_key("CODEX_HOME"));
    // Only the served runtime's state variable is reserved.
    assert!(env.is_reserved_var("CLAUDE_CONFIG_DIR"));
    assert!(env.is_reserved_var("HOME"));
    assert!(!env.is_reserved_var("CODEX_HOME"));

    let none = sb.bare("user:b").build().unwrap();
    assert!(none.runtimes().is_empty());
    assert!(none.auth_statuses().is_empty());
}

#[test]
fn the_shared_level_never_guesses_a_state_directory_in_the_hosts_home() {
    let sb = Sandbox::new();
    let env = sb
        .bare("default")
        .level(IsolationLevel::Shared)
        .tenancy(Tenancy::Single)
        .build()
        .unwrap();
    assert!(unknown(env.state_dir(codex()).unwrap_err()));
    assert!(unknown(
        env.write_runtime_file(codex(), "config.toml", b"x")
            .unwrap_err()
    ));
}

static BAD_STATE_VAR: RuntimeDescriptor = RuntimeDescriptor {
    name: "bad",
    state_var: "HOME",
    ..TOOL
};
static SAME_NAME: RuntimeDescriptor = RuntimeDescriptor {
    name: "codex",
    ..TOOL
};
static SAME_STATE_VAR: RuntimeDescriptor = RuntimeDescriptor {
    state_var: "CODEX_HOME",
    ..TOOL
};
static TOOL: RuntimeDescriptor = RuntimeDescriptor {
    name: "tool",
    program: "tool",
    state_var: "TOOL_HOME",
    state_subdir: ".tool",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[],
    credential_files: &[],
    api_key_vars: &["TOOL_API_KEY"],
    endpoint_vars: &[],
    keyring: runtime_env::KeyringUse::Never,
    mcp: runtime_env::McpMechanism::McpConfigFlag,
    supported_modes: &[runtime_env::IsolationMode::Subprocess],
};

#[test]
fn descriptors_are_checked_before_anything_is_created() {
    let sb = Sandbox::new();
    for (runtimes, name) in [
        (vec![&BAD_STATE_VAR], "bad"),
        (vec![codex(), &SAME_NAME], "codex"),
        (vec![codex(), &SAME_STATE_VAR], "tool"),
    ] {
        let err = sb.bare("user:a").runtimes(runtimes).build().unwrap_err();
        assert!(
            matches!(err, Error::InvalidDescriptor { runtime, .. } if runtime == name),
            "{err}"
        );
    }
    assert!(!sb.base().exists());
    // A runtime given twice is served once; a new one is served with the others.
    let env = sb
        .bare("user:a")
        .runtimes([&TOOL, codex()])
        .runtimes([codex()])
        .build()
        .unwrap();
    assert_eq!(env.runtimes(), [&TOOL, codex()]);
    assert!(env.state_dir(&TOOL).unwrap().is_dir());
}
