//! Credential namespaces and HOME/XDG isolation for agent runtimes (Codex, Claude Code, Cursor,
//! CodeBuddy, Gemini).
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
//! * [`IsolationLevel`], [`IsolationMode`], [`Tenancy`], [`check_policy`]: levels × modes ×
//!   tenancy, and the check that rejects unsafe combinations.
//! * [`RuntimeKind`], [`RuntimeDescriptor`]: the per-runtime descriptor table (state variable,
//!   config and credential files, API-key variables, keyring use, MCP mechanism).
//! * [`RuntimeEnvBuilder`], [`RuntimeEnv`], [`ConfigLock`], [`sweep_ephemeral`]: the builder,
//!   layout, config lock, ephemeral sessions and their sweep.
//! * [`HostEnv`], [`ChildEnv`]: the host-environment snapshot and the allow-listed child
//!   environment.
//! * [`FsError`], [`DIR_MODE`], [`FILE_MODE`]: 0700/0600 creation and the ownership, symlink
//!   and permission checks.
//! * [`AuthStatus`], [`Snapshot`], [`RuntimeEnvSummary`]: auth status, implicit-source
//!   snapshot and a secret-free summary.
//! * [`redact()`], [`Redactor`]: token redaction for logs, events and support output.
//!
//! # Invariants
//!
//! * A namespace is validated, never sanitized; distinct namespaces map to distinct
//!   directories (also on case-insensitive file systems), and every path stays under the base
//!   directory.
//! * Namespaced and ephemeral levels set HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME,
//!   XDG_CACHE_HOME, XDG_RUNTIME_DIR and TMPDIR to absolute paths under the root, and set every
//!   runtime's state variable (CODEX_HOME, CLAUDE_CONFIG_DIR, CURSOR_CONFIG_DIR,
//!   CODEBUDDY_CONFIG_DIR, GEMINI_CLI_HOME) explicitly, never from the host. The directories
//!   exist before a runtime starts (Codex refuses a missing CODEX_HOME).
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
//! * It does not spawn or supervise runtimes (it configures a [`std::process::Command`]), speak
//!   their protocols, or inject MCP servers (it offers a locked, atomic
//!   [`ConfigLock::write`] for whoever does).
//! * It does not change the process environment or umask, and never loosens or tightens
//!   permissions of existing directories.
//! * It does not isolate credentials kept in an OS keyring (macOS Keychain); it reports them as
//!   [`LoggedIn::Unknown`].
//! * It supports Unix only.
//!
//! # Example
//!
//! ```
//! use runtime_env::{HostEnv, RuntimeEnv, RuntimeKind, redact};
//! use secrecy::SecretString;
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
//!     .secret("OPENAI_API_KEY", SecretString::from("tenant-key"))
//!     .build()?;
//!
//! // The namespaced CODEX_HOME exists before launch; the host's is ignored.
//! let codex_home = env.state_dir(RuntimeKind::Codex);
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
mod redact;
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
    IsolationLevel, IsolationMode, PolicyError, RuntimeTraits, Tenancy, check as check_policy,
    check_runtime,
};
pub use redact::{MIN_SECRET_LEN, REDACTED, Redactor, redact};
pub use runtime::{
    Anchor, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeKind, SourceKind, SourceSpec,
};
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
