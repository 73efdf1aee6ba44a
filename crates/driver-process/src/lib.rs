//! The isolated process layer agent drivers run on, the message peer over a process's stdio,
//! and the pool of processes that outlive a turn or serve many tasks.
//!
//! * [`process`]: [`CliProcess`](process::CliProcess), a program run directly (never through
//!   a shell) in a credential namespace's [`RuntimeEnv`](runtime_env::RuntimeEnv) and in its
//!   own process group, from a [`CliCommand`](command::CliCommand) within
//!   [`Limits`](command::Limits); bounded, cancel-safe line reading with idle and total
//!   timeouts; how it ended ([`Finished`](process::Finished)) with a bounded, redacted stderr
//!   tail; [`collect`](process::CliProcess::collect) for a short command's whole output
//!   ([`output`]).
//! * [`files`] and [`turn_lock`]: per-run private files, and for CLIs that read config only
//!   from a namespace file, a cross-process turn lock and the install-then-restore of those
//!   files.
//! * [`version`] and [`probe`]: a CLI's `x.y.z`, and the `--version` probe through the same
//!   isolated spawn.
//! * [`peer`]: a message peer over a process's stdio, in either role: a client of a resident
//!   process ([`RpcPeer::client`](peer::RpcPeer::client)) or a server of its own methods on
//!   its stdin ([`RpcPeer::server`](peer::RpcPeer::server), answering what it cannot take with
//!   the fixed JSON-RPC errors); requests correlated by id with their own timeouts, and what
//!   the other side starts on a bounded queue. How messages look is a
//!   [`Framing`](peer::Framing): JSON-RPC ([`JsonRpc`](peer::JsonRpc)) here, another protocol's
//!   beside its dialect.
//! * [`pool`]: the resident-process pool, generic over its key
//!   ([`PoolKey`](pool::PoolKey): a CLI's [`ConversationKey`](pool::ConversationKey), a
//!   worker's namespace), with the exact private
//!   [`ProcessSignature`](driver_spi::ProcessSignature) deciding reuse or recycle; exclusive
//!   checkouts (one turn per process) and shared ones (tasks on one process, at most
//!   [`max_tasks_per_process`](pool::PoolLimits::max_tasks_per_process)); limits that each
//!   bind on their own, and statistics.
//! * [`error`]: [`ProcessError`](error::ProcessError), the one error type of the layer.
//!
//! # Invariants
//!
//! * Every spawn goes through a runtime environment by construction: the only constructors
//!   of a process ([`CliProcess::spawn`](process::CliProcess::spawn),
//!   [`spawn_resident`](process::CliProcess::spawn_resident)) take the
//!   [`RuntimeEnv`](runtime_env::RuntimeEnv) and the [`Limits`](command::Limits), and the
//!   workspace's tidy check keeps `std::process::Command` inside `runtime-env`. The child's
//!   environment is the runtime environment's (empty, an allow-list of host variables,
//!   namespace HOME/XDG/state variables, injected secrets) plus what the command adds; a host
//!   credential never reaches it, and a command may not override HOME, XDG_*, TMPDIR or state
//!   variables, nor pass a credential as a plain variable, nor (from a request's bindings)
//!   set what changes how or where the runtime runs ([`runtime_env::RefusedVar`]).
//! * Secret values are exposed only to configure the child's environment or, through the
//!   peer, written on its stdin. `Debug` of every type shows names only; error messages hold
//!   code constants, numbers, names and paths, never an output line, stderr text or a
//!   secret. The stderr tail passes the command's redactor.
//! * Memory is bounded: one stdout line holds at most
//!   [`Limits::max_line_bytes`](command::Limits::max_line_bytes), the stderr tail at most
//!   [`Limits::stderr_tail_bytes`](command::Limits::stderr_tail_bytes) plus a fixed 8 KiB
//!   redaction margin; the peer's incoming queue is bounded and quiet between turns.
//! * A spawned process never outlives its owner unnoticed: dropping it, a total timeout, or
//!   the end of the main process ends every remaining member of the process group, and the
//!   direct child is always reaped (by a dedicated thread, so this holds even when the Tokio
//!   runtime shuts down). A pooled process outlives a turn (or its last task) only idle in
//!   its pool, which ends it at its idle timeout, at a cap, when the next signature differs,
//!   and at close; the pool never formats a key, which may hold provider text.
//!
//! # What it deliberately does not do
//!
//! * It knows no CLI and no protocol method: argv, events, sessions and what a message means
//!   belong to a driver's dialect (`driver-cli`).
//! * It cannot reach processes that leave the group (`setsid`, double-fork into a new group);
//!   a CLI that does that must clean up after itself. It runs on Unix only.
//!
//! # Example
//!
//! The `--version` check, as a host runs it at startup (a driver runs it before its first
//! turn), through the same isolated spawn as a turn:
//!
//! ```
//! use std::os::unix::fs::PermissionsExt;
//! use std::time::Duration;
//!
//! use driver_process::probe::probe_version;
//! use driver_process::version::Version;
//! use runtime_env::{HostEnv, RuntimeEnv};
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! # rt.block_on(async {
//! let base = tempfile::tempdir()?;
//! let cli = base.path().join("mycli");
//! std::fs::write(&cli, "#!/bin/sh\necho 'mycli 1.4.2'\n")?;
//! std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755))?;
//! let env = RuntimeEnv::builder(base.path().join("rt"), "user:alice".parse()?, base.path())
//!     .host_env(HostEnv::from_vars([("PATH", "/usr/bin:/bin")]))
//!     .build()?;
//! let found = probe_version(&env, &cli, Version::new(1, 0, 0), Duration::from_secs(30)).await?;
//! assert_eq!(found, Version::new(1, 4, 2));
//! assert_eq!(found.to_string(), "1.4.2");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(not(unix))]
compile_error!("driver-process supports Unix only: it relies on process groups and signals");

pub mod command;
pub mod error;
pub mod files;
mod group;
pub mod lines;
pub mod output;
pub mod peer;
pub mod pool;
pub mod probe;
pub mod process;
mod spawn;
mod stderr;
#[cfg(test)]
mod tests;
pub mod turn_lock;
pub mod version;
