//! The worker's tests: the protocol served in process over in-memory pipes, and the host's
//! `WorkerDriver` against the real `agent-worker` binary.

mod approvals;
mod cli_conformance;
mod cli_fakes;
mod conformance;
mod crash;
mod fuzz;
mod hot;
mod launchers;
mod lifecycle;
mod namespaces;
mod protocol;
mod protocol_hot;
mod real_codex;
mod real_hot;
mod real_restart;
mod secrets;
mod shutdown;
mod support;
mod thread;
