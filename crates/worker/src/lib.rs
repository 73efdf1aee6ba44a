//! The agent worker: one process per credential namespace that hosts drivers behind the
//! worker protocol (`worker-protocol`: JSON-RPC 2.0 over stdio), and the host-side driver
//! that runs a driver configuration through it.
//!
//! The two halves of one boundary live in one crate, as the binary and its client share
//! their build and their tests (the integration tests start the real `agent-worker`):
//! - [`serve`]: the worker's side, which the `agent-worker` binary runs on its stdin and
//!   stdout: it builds each configured driver inside its own environment
//!   ([`DriverConfig`](worker_protocol::DriverConfig): a runtime of the registry with its
//!   common arguments, or the file-backed reference runtime), runs tasks concurrently,
//!   streams their events as numbered notifications, relays approval requests to the host
//!   and lives on after malformed input;
//! - [`WorkerDriver`]: the host's side, a `driver_spi::Driver` layer that stands for a driver
//!   configuration, on a [`Workers`] pool of one worker per namespace.
//!
//! Building a driver starts no worker: the pool starts one for the namespace at its first run.
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let env = runtime_env::RuntimeEnv::builder(dir.path().join("env"), "user:alice".parse()?, dir.path()).build()?;
//! # let program = std::path::PathBuf::from("agent-worker");
//! use std::sync::Arc;
//! use driver_process::pool::PoolLimits;
//! use worker::{WorkerDriver, Workers};
//! use worker_protocol::{DriverConfig, WireEnv};
//!
//! let workers = Workers::new(program, PoolLimits::default());
//! let wire_env = WireEnv {
//!     base_dir: env.base_dir().to_path_buf(),
//!     namespace: env.namespace().as_str().to_owned(),
//!     cwd: env.cwd().to_path_buf(),
//!     vars: Default::default(),
//! };
//! let config: DriverConfig = serde_json::from_value(serde_json::json!({
//!     "kind": "reference", "env": wire_env,
//! }))?;
//! let driver = WorkerDriver::new(workers, Arc::new(env), config)?;
//! # Ok(()) }
//! ```
//!
//! # Invariants
//! - One worker serves one credential namespace: the pool is keyed by the namespace, and a
//!   worker is spawned in that namespace's `RuntimeEnv` (through `driver-process`, so nothing
//!   of the host beyond the allow-list reaches it). Secrets reach it on its stdin only.
//! - A worker ends what its drivers kept: at its stdin's end it closes every configured
//!   driver's processes (resident CLIs) as closing them does in process, each waited for, and
//!   the host waits that out before ending the worker itself, so `close_processes` on the host
//!   returns with the CLIs gone, none orphaned.
//! - A task has exactly one terminal event on the wire; a worker that dies mid-task fails
//!   the host's run with `FailureKind::Process` and `RunFailure::retryable`: `true` when no
//!   tool call was in flight, `false` when one was.
//! - Approvals answered on the host, exactly once, under the host's `Approvals` (handler and
//!   timeout, whose expiry reads `timed_out` as in process); the worker denies when the host's
//!   answer names another request or attempt, or does not come. A cancelled run's open
//!   requests close with it.
//! - Hot Threads work as the wrapped driver does them: its `prewarm` and `steer` capabilities
//!   are declared through (`runtime.prewarm`, whose ticket rides in the next task's request;
//!   `runtime.steer`, acknowledged after the task's `follow_up` event, and abandoned in the
//!   worker with `runtime.abandonSteer` when the caller stops waiting), and
//!   `holds_conversation`/`changes()` answer from what the worker last said
//!   (`runtime.holds`, refreshed after each resident run and on `runtime.processesChanged`);
//!   a worker that ended or died holds nothing, and `changes()` says so.
//! - The driver kit passes on a `WorkerDriver` of the reference runtime, every clause run
//!   (the worker's test-only `runtime.script` lets it script a tool use and see the tools
//!   that ran and the provider's materialization), and on one of each CLI driver over the
//!   scripted fake CLI, per turn and resident, with the in-process run's skips less the
//!   process clauses, which a worker always serves.
//!
//! # Launchers: what separates tenants
//! How a worker starts is a [`Launcher`] the host chooses ([`Workers::with_launcher`]); it
//! only shapes the program and arguments of the command `driver-process` spawns, so the
//! environment is the namespace's allow-list in every case:
//! - [`Launcher::Direct`] (the default): the host's own user, the host's whole file system.
//!   Directories and environments are separate, principals are not: an agent allowed to run
//!   commands can read every other namespace of the user.
//! - [`Launcher::Bubblewrap`]: a sandbox that sees only its namespace and workspace
//!   (read-write), the system directories, the worker binary and the runtime binaries'
//!   directories (read-only); its own PID namespace, so a killed worker takes its CLIs with
//!   it. Another namespace is not visible at all. Still the host's uid.
//! - [`Launcher::Prefix`]: `ssh HOST`, `docker exec -i …`, `kubectl exec -i …` before the
//!   worker program: the same protocol over any stdio pipe; the boundary is the prefix's.
//!
//! # What it deliberately does not do (yet)
//! - No uid per namespace: the bubblewrap launcher separates files and processes, not users.
//!   A worker under a uid of its own would build its environment as that uid, while the host
//!   builds the same environment as itself, and `runtime-env` trusts only directories the
//!   building process owns; both sides agreeing needs an owner notion in `runtime-env` first
//!   (docs/runtime-isolation.md).
//! - A [`Launcher::Direct`] worker killed from outside (SIGKILL) leaves the CLI processes it
//!   spawned running until they end on their own: they sit in process groups of their own,
//!   which the host's group kill of the worker does not reach. Use the bubblewrap launcher,
//!   whose PID namespace dies with the worker.
//! - No host-run tools: `runtime.sendToolResult`/`sendToolDenied` are refused
//!   (`TOOL_NOT_AWAITED`), as no driver here hands a tool to the host.
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod build;
mod host;
mod launcher;
mod serve;

pub use build::{BuildError, build};
pub use host::{WorkerDriver, Workers};
pub use launcher::{Bubblewrap, Launcher, Prefix};
pub use serve::{APPROVAL_GRACE, MAX_LINE, serve};
