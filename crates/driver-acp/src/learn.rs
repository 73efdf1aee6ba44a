//! [`learn`]: what an agent can do, from one real `initialize`.

use std::path::Path;

use driver_process::command::{CliCommand, Limits};
use driver_process::error::ProcessError;
use driver_process::peer::{JsonRpc, RpcError, RpcPeer};
use driver_process::process::CliProcess;
use runtime_env::RuntimeEnv;

use crate::agent::{AcpCapabilities, RegisterError};

/// Why an agent's capabilities could not be learned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LearnError {
    /// The agent could not be started.
    #[error(transparent)]
    Spawn(#[from] ProcessError),
    /// It did not answer `initialize` (it exited, timed out or refused).
    #[error("ACP initialize: {0}")]
    Rpc(#[from] RpcError),
    /// Its answer is not an `initialize` answer of protocol version 1.
    #[error(transparent)]
    Answer(#[from] RegisterError),
}

/// Starts `program` with `args` in `env` (its isolated spawn, in the environment's working
/// directory), sends `initialize` (protocol version 1, no file system or terminal offered),
/// reads what the agent says it can do, and ends it. A host that registers an agent it knows
/// nothing of learns its capabilities once and keeps them
/// ([`AcpAgentBuilder::capabilities`](crate::AcpAgentBuilder::capabilities)).
///
/// # Errors
/// [`LearnError`] when the agent does not start, does not answer within `limits`' idle
/// timeout, or answers with something else.
pub async fn learn(
    env: &RuntimeEnv,
    program: &Path,
    args: &[&str],
    limits: Limits,
) -> Result<AcpCapabilities, LearnError> {
    let command = CliCommand::new(program, env.redactor())
        .args(args.iter().copied())
        .cwd(env.cwd())
        .keep_stdin();
    let (child, stdin, stdout) = CliProcess::spawn_resident(env, command, limits)?;
    let (peer, _inbox) = RpcPeer::client(&JsonRpc, stdout, stdin, limits.max_line_bytes);
    let call = crate::protocol::initialize();
    let answer = peer
        .request(call.method(), call.params().clone(), limits.idle_timeout)
        .await;
    drop(peer);
    child.wait_or_terminate(Some(limits.kill_grace)).await;
    Ok(AcpCapabilities::from_initialize(&answer?)?)
}
