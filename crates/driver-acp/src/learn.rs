//! [`AcpAgentBuilder::learn`]: what an agent can do, from one real `initialize`.

use driver_process::command::{CliCommand, Limits};
use driver_process::error::ProcessError;
use driver_process::peer::{JsonRpc, RpcError, RpcPeer};
use driver_process::process::CliProcess;
use runtime_env::RuntimeEnv;

use crate::agent::{AcpCapabilities, RegisterError};
use crate::register::AcpAgentBuilder;

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

impl AcpAgentBuilder {
    /// The agent with the capabilities it states: starts it (its program, arguments and
    /// plain variables) in `env` (the isolated spawn, in the environment's working
    /// directory), sends `initialize` (protocol version 1, no file system or terminal
    /// offered), reads what it says it can do, and ends it. A host that registers an agent it
    /// knows nothing of learns its capabilities once and keeps them with the registration.
    ///
    /// # Errors
    /// [`LearnError`] when the agent does not start, does not answer within `limits`' idle
    /// timeout, or answers with something else.
    pub async fn learn(self, env: &RuntimeEnv, limits: Limits) -> Result<Self, LearnError> {
        let mut command = CliCommand::new(self.program_path(), env.redactor())
            .args(self.arguments())
            .cwd(env.cwd())
            .keep_stdin();
        for (name, value) in self.plain_vars() {
            command = command.var(name, value);
        }
        let (child, stdin, stdout) = CliProcess::spawn_resident(env, command, limits)?;
        let (peer, _inbox) = RpcPeer::client(&JsonRpc, stdout, stdin, limits.max_line_bytes);
        let call = crate::protocol::initialize();
        let answer = peer
            .request(call.method(), call.params().clone(), limits.idle_timeout)
            .await;
        drop(peer);
        child.wait_or_terminate(Some(limits.kill_grace)).await;
        let capabilities = AcpCapabilities::from_initialize(&answer?)?;
        Ok(self.capabilities(capabilities))
    }
}
