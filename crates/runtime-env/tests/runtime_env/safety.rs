//! Unsafe directories are refused with typed errors and never repaired: a planted symlink, a
//! world-writable directory, a directory owned by another user, and an over-permissive one.

use std::fs::{self, Permissions};
use std::os::unix::fs::{PermissionsExt, symlink};

use runtime_env::{Error, FsError};

use crate::support::{Sandbox, claude, codex, mode, my_uid};

#[test]
fn planted_symlink_is_refused() {
    let sb = Sandbox::new();
    let ns_root = sb.base().join("ns/user.victim");
    // Prepare base/ns/user.victim legitimately, then plant a symlink at `home`.
    drop(sb.builder("user:other").build().unwrap());
    fs::create_dir(&ns_root).unwrap();
    fs::set_permissions(&ns_root, Permissions::from_mode(0o700)).unwrap();
    let elsewhere = sb.tmp.path().join("attacker-home");
    fs::create_dir(&elsewhere).unwrap();
    fs::set_permissions(&elsewhere, Permissions::from_mode(0o700)).unwrap();
    symlink(&elsewhere, ns_root.join("home")).unwrap();

    let err = sb.builder("user:victim").build().unwrap_err();
    match err {
        Error::Fs(FsError::Symlink { path }) => assert_eq!(path, ns_root.join("home")),
        other => panic!("expected a symlink error, got {other}"),
    }
    assert_eq!(
        fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn symlinked_base_and_state_dir_are_refused() {
    let sb = Sandbox::new();
    let real = sb.tmp.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, Permissions::from_mode(0o700)).unwrap();
    symlink(&real, sb.base()).unwrap();
    let err = sb.builder("user:a").build().unwrap_err();
    assert!(matches!(err, Error::Fs(FsError::Symlink { .. })), "{err}");

    let sb = Sandbox::new();
    let env = sb.builder("user:a").build().unwrap();
    let codex = env.state_dir(codex()).unwrap().to_owned();
    drop(env);
    fs::remove_dir(&codex).unwrap();
    symlink(sb.tmp.path(), &codex).unwrap();
    let err = sb.builder("user:a").build().unwrap_err();
    assert!(matches!(err, Error::Fs(FsError::Symlink { .. })), "{err}");
}

#[test]
fn world_writable_directory_is_refused() {
    // The base itself.
    let sb = Sandbox::new();
    fs::create_dir(sb.base()).unwrap();
    fs::set_permissions(sb.base(), Permissions::from_mode(0o777)).unwrap();
    let err = sb.builder("user:a").build().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Fs(FsError::WritableByOthers { mode: 0o777, .. })
        ),
        "{err}"
    );
    assert_eq!(mode(&sb.base()), 0o777, "permissions are never changed");

    // A directory inside the layout.
    let sb = Sandbox::new();
    let env = sb.builder("user:a").build().unwrap();
    let cache = env.root().unwrap().join("cache");
    drop(env);
    fs::set_permissions(&cache, Permissions::from_mode(0o757)).unwrap();
    let err = sb.builder("user:a").build().unwrap_err();
    assert!(
        matches!(err, Error::Fs(FsError::WritableByOthers { .. })),
        "{err}"
    );
    assert_eq!(mode(&cache), 0o757);

    // Group- or other-readable is refused inside the layout too (tenant state would leak).
    fs::set_permissions(&cache, Permissions::from_mode(0o750)).unwrap();
    let err = sb.builder("user:a").build().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Fs(FsError::PermissionsTooOpen { mode: 0o750, .. })
        ),
        "{err}"
    );
    assert_eq!(mode(&cache), 0o750);
}

#[test]
fn directory_owned_by_another_user_is_refused() {
    if my_uid() == 0 {
        let sb = Sandbox::new();
        fs::create_dir(sb.base()).unwrap();
        fs::set_permissions(sb.base(), Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(sb.base(), Some(65534), Some(65534)).unwrap();
        let err = sb.builder("user:a").build().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Fs(FsError::OwnedByOtherUser { owner: 65534, .. })
            ),
            "{err}"
        );

        let sb = Sandbox::new();
        let env = sb.builder("user:a").build().unwrap();
        let home = env.home().to_owned();
        drop(env);
        std::os::unix::fs::chown(&home, Some(65534), None).unwrap();
        let err = sb.builder("user:a").build().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Fs(FsError::OwnedByOtherUser { owner: 65534, .. })
            ),
            "{err}"
        );
    } else {
        // Without root, a root-owned directory is "another user's".
        let err = runtime_env::RuntimeEnv::builder("/etc", "user:a".parse().unwrap(), "/")
            .build()
            .unwrap_err();
        assert!(
            matches!(err, Error::Fs(FsError::OwnedByOtherUser { owner: 0, .. })),
            "{err}"
        );
    }
}

#[test]
fn runtime_files_refuse_traversal_and_credential_files() {
    let sb = Sandbox::new();
    let env = sb.builder("user:a").build().unwrap();
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a//b",
        "./x",
        "a\\b",
    ] {
        let err = env.write_runtime_file(codex(), bad, b"x").unwrap_err();
        assert!(matches!(err, Error::InvalidRelativePath), "{bad}: {err}");
    }
    let err = env
        .write_runtime_file(codex(), "auth.json", b"x")
        .unwrap_err();
    assert!(matches!(err, Error::CredentialFile { .. }), "{err}");
    let lock = env.lock_config().unwrap();
    let err = lock.read(claude(), ".credentials.json").unwrap_err();
    assert!(matches!(err, Error::CredentialFile { .. }), "{err}");
    assert_eq!(lock.read(codex(), "config.toml").unwrap(), None);
}
