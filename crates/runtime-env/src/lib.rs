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
//! * [`namespace`]: the namespace grammar and its injective directory encoding.
//! * [`policy`]: levels × modes × tenancy, and the check that rejects unsafe combinations.
//! * [`runtime`]: the per-runtime descriptor table (state variable, config and credential
//!   files, API-key variables, keyring use, MCP mechanism).
//! * [`runtime_env`]: the builder, layout, config lock, ephemeral sessions and their sweep.
//! * [`child_env`]: the host-environment snapshot and the allow-listed child environment.
//! * [`secure_fs`]: 0700/0600 creation and the ownership, symlink and permission checks.
//! * [`auth`], [`snapshot`], [`summary`]: auth status, implicit-source snapshot and a
//!   secret-free summary.
//! * [`redact`](mod@redact): token redaction for logs, events and support output.
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

pub mod auth;
pub mod child_env;
pub mod error;
mod lock;
pub mod namespace;
mod paths;
pub mod policy;
pub mod redact;
pub mod runtime;
pub mod runtime_env;
pub mod secure_fs;
pub mod snapshot;
pub mod summary;

pub use auth::{AuthModel, AuthStatus, LoggedIn};
pub use child_env::{ChildEnv, HostEnv};
pub use error::Error;
pub use namespace::{CredentialNamespace, InvalidName, SessionId};
pub use policy::{IsolationLevel, IsolationMode, PolicyError, RuntimeTraits, Tenancy};
pub use redact::{Redactor, redact};
pub use runtime::{McpMechanism, RuntimeDescriptor, RuntimeKind};
pub use runtime_env::{ConfigLock, RuntimeEnv, RuntimeEnvBuilder, SweepReport, sweep_ephemeral};
pub use secure_fs::FsError;
pub use snapshot::{Snapshot, SourceStatus};
pub use summary::RuntimeEnvSummary;
