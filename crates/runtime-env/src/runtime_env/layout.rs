//! The directory layout of each level: the shared level's host directories, the private
//! roots of namespaced and ephemeral levels.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::{CONFIG_LOCK, EphemeralGuard, LAYOUT_VARS, NS_DIR, SHARED_LOCK};
use crate::child_env::{HostEnv, XDG_SEARCH_DIRS};
use crate::error::Error;
use crate::namespace::CredentialNamespace;
use crate::paths::{self};
use crate::runtime::RuntimeDescriptor;
use crate::secure_fs::{self, FsError, Strictness};

/// What a level's layout contributes to the environment.
pub(super) struct Layout {
    pub(super) root: Option<PathBuf>,
    pub(super) home: PathBuf,
    pub(super) vars: Vec<(&'static str, OsString)>,
    pub(super) state_dirs: BTreeMap<&'static str, PathBuf>,
    pub(super) lock_dir: PathBuf,
    pub(super) lock_name: &'static str,
    pub(super) guard: Option<EphemeralGuard>,
}

pub(super) fn namespace_root(base: &Path, ns: &CredentialNamespace) -> Result<PathBuf, FsError> {
    let dir = ns.dir_name();
    secure_fs::ensure_dirs(
        base,
        [OsStr::new(NS_DIR), OsStr::new(&dir)],
        Strictness::Private,
    )
}

pub(super) fn private_layout(
    root: PathBuf,
    lock_dir: PathBuf,
    guard: Option<EphemeralGuard>,
    runtimes: &[&'static RuntimeDescriptor],
) -> Result<Layout, Error> {
    let mut vars = Vec::new();
    let mut home = root.join("home");
    for (var, sub) in LAYOUT_VARS {
        let dir = secure_fs::ensure_dir(&root, OsStr::new(sub), Strictness::Private)?;
        if *var == "HOME" {
            home.clone_from(&dir);
        }
        vars.push((*var, dir.into_os_string()));
    }
    for (var, value) in XDG_SEARCH_DIRS {
        vars.push((*var, OsString::from(value)));
    }
    let mut state_dirs = BTreeMap::new();
    for d in runtimes {
        let state = secure_fs::ensure_dirs(
            &home,
            d.state_subdir
                .split('/')
                .filter(|c| !c.is_empty())
                .map(OsStr::new),
            Strictness::Private,
        )?;
        for sub in d.private_subdirs {
            secure_fs::ensure_dir(&state, OsStr::new(sub), Strictness::Private)?;
        }
        vars.push((d.state_var, state.clone().into_os_string()));
        state_dirs.insert(d.name, state);
    }
    Ok(Layout {
        root: Some(root),
        home,
        vars,
        state_dirs,
        lock_dir,
        lock_name: CONFIG_LOCK,
        guard,
    })
}

pub(super) fn shared_layout(
    base: &Path,
    host: &HostEnv,
    runtimes: &[&'static RuntimeDescriptor],
) -> Result<Layout, Error> {
    let home = host.absolute_path("HOME").ok_or(Error::HostHomeMissing)?;
    let mut vars = vec![("HOME", home.clone().into_os_string())];
    for (var, _) in LAYOUT_VARS.iter().filter(|(v, _)| *v != "HOME") {
        if let Some(p) = host.absolute_path(var) {
            vars.push((*var, p.into_os_string()));
        }
    }
    for (var, _) in XDG_SEARCH_DIRS {
        if let Some(v) = host.get(var).filter(|v| !v.is_empty()) {
            vars.push((*var, v.to_owned()));
        }
    }
    let mut state_dirs = BTreeMap::new();
    for d in runtimes {
        // Only the host's own setting is passed on: setting a variable the host left unset
        // would move state (Claude keeps `.claude.json` in HOME unless CLAUDE_CONFIG_DIR is
        // set), and Codex refuses a CODEX_HOME that names a missing directory.
        let state = match host.absolute_path(d.state_var) {
            Some(p) => {
                vars.push((d.state_var, p.clone().into_os_string()));
                p
            }
            None => paths::join_rel(&home, d.state_subdir),
        };
        state_dirs.insert(d.name, state);
    }
    Ok(Layout {
        root: None,
        home,
        vars,
        state_dirs,
        lock_dir: base.to_owned(),
        lock_name: SHARED_LOCK,
        guard: None,
    })
}
