//! Credential namespaces and HOME/XDG isolation for agent runtimes (Codex, Claude Code, Cursor,
//! CodeBuddy, Gemini, and any runtime a driver crate describes).
//!
//! Agent CLIs keep OAuth caches, config, policy and session transcripts on local disk. A host
//! that runs them for several principals must decide where that state lives, or behaviour
//! differs from machine to machine and one tenant's credentials reach another. This crate
//! builds a [`RuntimeEnv`]: a working directory, a [`CredentialNamespace`], an
//! [`IsolationLevel`] and [`IsolationMode`], the directory layout, and an explicit
//! [`ChildEnv`] for the runtime's process.
//!
//! The parts, all at the crate root:
//!
//! * [`CredentialNamespace`], [`SessionId`]: the namespace grammar and its injective directory
//!   encoding.
//! * [`IsolationLevel`], [`IsolationMode`], [`Tenancy`], [`check_policy`], [`Verdict`],
//!   [`PolicyWarning`]: levels × modes × tenancy, and the check that rejects unsafe
//!   combinations and warns about multi-tenant use of a mode that does not separate
//!   principals ([`IsolationMode::separates_principals`]).
//! * [`RuntimeDescriptor`]: what the crate must know about one runtime (state variable, config
//!   and credential files, API-key variables, keyring use, MCP mechanism). Each driver crate
//!   states its own; an environment serves the ones its builder is given
//!   ([`RuntimeEnvBuilder::runtimes`]).
//! * [`RuntimeEnvBuilder`], [`RuntimeEnv`], [`ConfigLock`], [`sweep_ephemeral`]: the builder,
//!   layout, config lock, ephemeral sessions and their sweep.
//! * [`HostEnv`], [`ChildEnv`]: the host-environment snapshot and the allow-listed child
//!   environment.
//! * [`FsError`], [`DIR_MODE`], [`FILE_MODE`]: 0700/0600 creation and the ownership, symlink
//!   and permission checks.
//! * [`AuthStatus`], [`Snapshot`], [`RuntimeEnvSummary`]: auth status, implicit-source
//!   snapshot and a secret-free summary.
//! * [`redact()`], [`Redactor`]: the workspace's one redactor (re-exported from `redaction`).
//! * [`refused_request_var`], [`RefusedVar`], [`is_endpoint_var`]: what a run service's
//!   binding may not set in a runtime's process (loader, interpreter, `PATH`, TLS trust,
//!   proxies, model endpoints and keys), and which variables carry an endpoint.
//!
//! # Invariants
//!
//! * A namespace is validated, never sanitized; distinct namespaces map to distinct
//!   directories (also on case-insensitive file systems), and every path stays under the base
//!   directory.
//! * Namespaced and ephemeral levels set HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME,
//!   XDG_CACHE_HOME, XDG_RUNTIME_DIR and TMPDIR to absolute paths under the root, and set the
//!   state variable of every runtime the environment serves (CODEX_HOME, CLAUDE_CONFIG_DIR, …)
//!   explicitly, never from the host. The directories exist before a runtime starts (Codex
//!   refuses a missing CODEX_HOME).
//! * A runtime the environment does not serve has no state directory in it
//!   ([`Error::UnknownRuntime`]), rather than one guessed (at the shared level, the host's own
//!   HOME). Every descriptor is checked before anything is created, and no two runtimes of an
//!   environment share a name or a state variable.
//! * Every directory the crate creates is 0700 and every file 0600, whatever the umask. A
//!   symlinked component, a directory owned by another user, or a group- or world-writable
//!   directory is refused with a typed error; existing permissions are never changed.
//! * A child environment starts empty and copies only an allow-list from the [`HostEnv`];
//!   credential variables reach a child only when injected as [`secrecy::SecretString`]s.
//!   Values leave a [`ChildEnv`] only through [`ChildEnv::apply_to`].
//! * Auth status and snapshots never open a credential file; summaries, `Debug` output and
//!   errors carry no secret value.
//!
//! # What it deliberately does not do
//!
//! * It keeps no list of runtimes: the descriptors come from the driver crates, and the list
//!   of them from the host (or the `runtimes` registry crate).
//! * It does not spawn or supervise runtimes (it configures a [`std::process::Command`]), speak
//!   their protocols, or inject MCP servers (it offers a locked, atomic
//!   [`ConfigLock::write`] for whoever does).
//! * It does not change the process environment or umask, and never loosens or tightens
//!   permissions of existing directories.
//! * It does not put an OS boundary between tenants: its directories are 0700 directories of
//!   the host's user, so in the in-process and subprocess modes an agent allowed to run
//!   commands can read every namespace. The `worker` crate hosts a namespace in a process of
//!   its own ([`IsolationMode::Worker`] once it runs under a sandbox or uid).
//! * It does not isolate credentials kept in an OS keyring (macOS Keychain); it reports them as
//!   [`LoggedIn::Unknown`].
//! * It supports Unix only.
//!
//! # Example
//!
//! ```
//! use runtime_env::{
//!     Anchor, HostEnv, IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeEnv,
//!     SourceKind, SourceSpec, redact,
//! };
//! use secrecy::SecretString;
//!
//! // Each driver crate states its runtime's descriptor; this is part of Codex's.
//! static CODEX: RuntimeDescriptor = RuntimeDescriptor {
//!     name: "codex",
//!     program: "codex",
//!     state_var: "CODEX_HOME",
//!     state_subdir: ".codex",
//!     state_dir_must_exist: true,
//!     private_subdirs: &[],
//!     sources: &[SourceSpec::file(Anchor::StateDir, "config.toml", SourceKind::Config)],
//!     credential_files: &[SourceSpec::file(Anchor::StateDir, "auth.json", SourceKind::Credential)],
//!     api_key_vars: &["CODEX_API_KEY", "OPENAI_API_KEY"],
//!     endpoint_vars: &["OPENAI_BASE_URL"],
//!     keyring: KeyringUse::Never,
//!     mcp: McpMechanism::CodexConfigToml,
//!     supported_modes: &[IsolationMode::Subprocess],
//! };
//!
//! let base = tempfile::tempdir()?;
//! let project = tempfile::tempdir()?;
//! let host = HostEnv::from_vars([
//!     ("PATH", "/usr/bin:/bin"),
//!     ("CODEX_HOME", "/home/host/.codex"),
//!     ("OPENAI_API_KEY", "host-key"),
//! ]);
//! let env = RuntimeEnv::builder(base.path().join("rt"), "user:alice".parse()?, project.path())
//!     .host_env(host)
//!     .runtimes([&CODEX])
//!     .secret("OPENAI_API_KEY", SecretString::from("tenant-key"))
//!     .build()?;
//!
//! // The namespaced CODEX_HOME exists before launch; the host's is ignored.
//! let codex_home = env.state_dir(&CODEX)?;
//! assert!(codex_home.is_dir());
//! assert_eq!(env.child_env().get("CODEX_HOME"), Some(codex_home.as_os_str()));
//! let cmd = env.command("codex"); // env_clear + allow-list + namespace vars + secrets
//! # drop(cmd);
//!
//! // Nothing secret in the summary; the injected key counts as a login.
//! let summary = env.summary().to_string();
//! assert!(!summary.contains("tenant-key") && !summary.contains("host-key"));
//! assert!(summary.contains("codex: logged_in=yes model=api_key_var label=env:OPENAI_API_KEY"));
//! assert_eq!(redact("Authorization: Bearer abc"), "Authorization: Bearer [REDACTED]");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!("runtime-env supports Unix only: it relies on Unix permissions and ownership");

// The modules are private: every public item is re-exported here, at one path each.
mod auth;
mod child_env;
mod error;
mod lock;
mod namespace;
mod paths;
mod policy;
mod request_vars;
mod runtime;
mod runtime_env;
mod secure_fs;
mod snapshot;
mod summary;

pub use auth::{AuthModel, AuthStatus, CredentialFileStatus, LoggedIn};
pub use child_env::{
    ALLOWED_HOST_VARS, CREDENTIAL_VARS, ChildEnv, HostEnv, PROXY_VARS, is_allowed_host_var,
    is_credential_var, strip_proxy_userinfo,
};
pub use error::Error;
pub use namespace::{
    CredentialNamespace, InvalidName, MAX_ID_LEN, MAX_KIND_LEN, MAX_NAMESPACE_LEN,
    MAX_SESSION_ID_LEN, SessionId,
};
pub use policy::{
    IsolationLevel, IsolationMode, PolicyError, PolicyWarning, RuntimeTraits, Tenancy, Verdict,
    check as check_policy, check_runtime,
};
/// The workspace's one redactor, re-exported from [`redaction`].
pub use redaction::{MIN_SECRET_LEN, REDACTED, Redactor, redact};
pub use request_vars::{RefusedVar, is_endpoint_var, refused_request_var};
pub use runtime::{Anchor, KeyringUse, McpMechanism, RuntimeDescriptor, SourceKind, SourceSpec};
pub use runtime_env::{
    ConfigLock, LAYOUT_VARS, MAX_RUNTIME_FILE, RuntimeEnv, RuntimeEnvBuilder, SweepReport,
    is_reserved_var, sweep_ephemeral,
};
pub use secure_fs::{DIR_MODE, FILE_MODE, FsError};
pub use snapshot::{
    DIR_HASH_CONTEXT, MAX_DIR_DEPTH, MAX_DIR_ENTRIES, MAX_FILE_BYTES, RuntimeSnapshot,
    SNAPSHOT_FORMAT, Snapshot, SourceRecord, SourceStatus,
};
pub use summary::RuntimeEnvSummary;
