//! The error type of building and using a [`RuntimeEnv`](crate::RuntimeEnv).
//!
//! Messages name variables and paths, never variable values or secret contents.

use crate::namespace::{InvalidName, SessionId};
use crate::policy::PolicyError;
use crate::secure_fs::FsError;

/// Building or using a runtime environment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The combination of runtime, level, mode and tenancy is unsafe or unsupported.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A directory or file failed a safety check, or an I/O operation failed.
    #[error(transparent)]
    Fs(#[from] FsError),
    /// A namespace or session id is invalid.
    #[error(transparent)]
    Name(#[from] InvalidName),
    /// The working directory is not an absolute path.
    #[error("the working directory must be an absolute path without `..`")]
    RelativeCwd,
    /// The shared level needs the host's HOME and the host environment has no absolute one.
    #[error("the host environment has no absolute HOME, which the shared level needs")]
    HostHomeMissing,
    /// The ephemeral session's directory already exists.
    #[error("ephemeral session `{0}` already exists")]
    SessionExists(SessionId),
    /// A caller-supplied variable name is not `[A-Za-z_][A-Za-z0-9_]*` (at most 256 bytes).
    #[error("invalid environment variable name ({len} bytes)")]
    InvalidVarName {
        /// Length of the rejected name; the name itself is not shown (it may be a misplaced value).
        len: usize,
    },
    /// The variable is set by the runtime environment itself (HOME, XDG_*, TMPDIR, the state
    /// variables of the runtimes it serves).
    #[error("`{name}` is managed by the runtime environment and cannot be set by the caller")]
    ReservedVar {
        /// The variable.
        name: String,
    },
    /// A credential variable was given as a plain variable; inject it as a secret instead.
    #[error("`{name}` carries a credential: inject it as a secret, not a plain variable")]
    CredentialVar {
        /// The variable.
        name: String,
    },
    /// The same variable was given twice (as a plain variable and a secret, or two secrets).
    #[error("`{name}` is given more than once")]
    DuplicateVar {
        /// The variable.
        name: String,
    },
    /// A path given for a runtime file is not a plain relative path (empty, absolute, `.`,
    /// `..`, or containing a backslash or NUL).
    #[error("a runtime file path must be a plain relative path inside the state directory")]
    InvalidRelativePath,
    /// The path names a credential file, which this crate never reads or writes.
    #[error("`{path}` is a credential file of {runtime}; this crate never reads or writes it")]
    CredentialFile {
        /// The runtime's name.
        runtime: &'static str,
        /// The relative path.
        path: String,
    },
    /// A runtime file is larger than the crate reads.
    #[error("runtime file is larger than {max} bytes")]
    FileTooLarge {
        /// The limit.
        max: u64,
    },
    /// The environment does not serve this runtime: it was not among the builder's
    /// [`runtimes`](crate::RuntimeEnvBuilder::runtimes), so it has no state directory here.
    #[error(
        "the runtime environment does not serve runtime `{runtime}`; name it in \
         RuntimeEnvBuilder::runtimes"
    )]
    UnknownRuntime {
        /// The runtime's name.
        runtime: &'static str,
    },
    /// A runtime descriptor breaks a rule of
    /// [`RuntimeDescriptor::validate`](crate::RuntimeDescriptor::validate), or clashes with
    /// another runtime of the environment (the same name or the same state variable).
    #[error("runtime descriptor `{runtime}` is invalid: {reason}")]
    InvalidDescriptor {
        /// The runtime's name, as the descriptor gives it.
        runtime: &'static str,
        /// The rule it breaks.
        reason: &'static str,
    },
}
