//! Shared helpers: temporary bases, test host environments, the registered runtimes and `stat`
//! shorthands.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use runtime_env::{CredentialNamespace, HostEnv, RuntimeDescriptor, RuntimeEnv, RuntimeEnvBuilder};
use tempfile::TempDir;

/// A temporary directory holding a base dir (`<tmp>/base`) and a project dir (`<tmp>/project`).
pub(crate) struct Sandbox {
    pub(crate) tmp: TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("project")).unwrap();
        Self { tmp }
    }

    pub(crate) fn base(&self) -> PathBuf {
        self.tmp.path().join("base")
    }

    pub(crate) fn project(&self) -> PathBuf {
        self.tmp.path().join("project")
    }

    /// A builder serving every registered runtime.
    pub(crate) fn builder(&self, ns: &str) -> RuntimeEnvBuilder {
        self.bare(ns).runtimes(all_runtimes())
    }

    /// A builder serving no runtime yet (the test names them).
    pub(crate) fn bare(&self, ns: &str) -> RuntimeEnvBuilder {
        RuntimeEnv::builder(
            self.base(),
            ns.parse::<CredentialNamespace>().unwrap(),
            self.project(),
        )
        .host_env(test_host())
    }
}

/// The real runtimes, as their driver crates describe them (through the registry).
pub(crate) fn all_runtimes() -> impl Iterator<Item = &'static RuntimeDescriptor> {
    runtimes::all().iter().map(|r| &r.descriptor)
}

fn registered(name: &str) -> &'static RuntimeDescriptor {
    &runtimes::find(name).expect("registered").descriptor
}

pub(crate) fn codex() -> &'static RuntimeDescriptor {
    registered("codex")
}

pub(crate) fn claude() -> &'static RuntimeDescriptor {
    registered("claude_code")
}

pub(crate) fn cursor() -> &'static RuntimeDescriptor {
    registered("cursor")
}

pub(crate) fn codebuddy() -> &'static RuntimeDescriptor {
    registered("codebuddy")
}

pub(crate) fn gemini() -> &'static RuntimeDescriptor {
    registered("gemini")
}

/// A host environment with PATH, a host HOME/CODEX_HOME and canary credentials.
pub(crate) fn test_host() -> HostEnv {
    HostEnv::from_vars([
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("TERM", "dumb"),
        ("HOME", "/home/host-user"),
        ("XDG_CONFIG_HOME", "/home/host-user/.config"),
        ("CODEX_HOME", "/somewhere"),
        ("CLAUDE_CONFIG_DIR", "/somewhere/claude"),
        ("OPENAI_API_KEY", "canary-openai-host"),
        ("ANTHROPIC_API_KEY", "canary-anthropic-host"),
        ("CLAUDE_CODE_OAUTH_TOKEN", "canary-claude-oauth-host"),
        ("CURSOR_API_KEY", "canary-cursor-host"),
        ("CODEBUDDY_API_KEY", "canary-codebuddy-host"),
        ("GEMINI_API_KEY", "canary-gemini-host"),
        ("GITHUB_TOKEN", "canary-github-host"),
        ("MY_SERVICE_TOKEN", "canary-generic-host"),
        ("LD_PRELOAD", "/canary/preload.so"),
    ])
}

pub(crate) fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// The effective uid, read from a file this process creates (no libc needed).
pub(crate) fn my_uid() -> u32 {
    let f = tempfile::NamedTempFile::new().unwrap();
    f.as_file().metadata().unwrap().uid()
}

/// Every path under `root` (inclusive), without following symlinks.
pub(crate) fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_owned()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                out.push(e.unwrap().path());
            }
        }
        i += 1;
    }
    out
}

/// The value a child started from `env` gets for `name` (read through the configured
/// `Command`, the only place copied values and secrets are handed on).
pub(crate) fn child_value(env: &RuntimeEnv, name: &str) -> Option<std::ffi::OsString> {
    let cmd = env.command("true");
    cmd.get_envs()
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.map(ToOwned::to_owned))
}
