//! `agentctl acp`: the SDK as an Agent Client Protocol agent on stdio (crate `acp-agent`),
//! each session's agent built from the same options as `agentctl run`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use thread_store::ThreadStore;

use crate::run::RunOptions;
use crate::store::StoreSpec;
use crate::{Failure, exit};

/// `agentctl acp`'s options: those of `run`, plus the editor MCP servers' identity.
#[derive(Debug, Clone, Args)]
pub(crate) struct AcpOptions {
    #[command(flatten)]
    run: RunOptions,
    /// An MCP server the editor declares under this name gets a semantic identity, repeatable:
    /// a restart that moves it to a new port or token (a stdio server: new env values)
    /// resumes. Every other editor server is exact: a new port, token or env value makes the
    /// session's Thread incompatible.
    #[arg(long = "mcp-identity", value_name = "NAME")]
    mcp_identity: Vec<String>,
    /// Where the session map lives (default: next to a SQLite store, `<FILE>.acp-sessions`;
    /// required with a PostgreSQL store).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
}

/// Builds each session's agent from the `run` options, in the session's working directory.
struct Factory {
    options: RunOptions,
    store: Arc<dyn ThreadStore>,
}

#[run_service::async_trait]
impl acp_agent::AgentFactory for Factory {
    async fn build(&self, setup: acp_agent::SessionSetup) -> Result<agent::Agent, String> {
        let mut options = self.options.clone();
        options.workspace = Some(setup.cwd);
        let mut builder = crate::run::agent_builder(&options, Arc::clone(&self.store))
            .await
            .map_err(|f| f.message().to_owned())?;
        for provider in setup.run_services {
            builder = builder.run_service(provider);
        }
        builder
            .build()
            .map_err(|e| format!("invalid configuration: {}", crate::with_causes(&e)))
    }
}

/// Serves ACP on stdin and stdout until stdin ends.
pub(crate) async fn serve(
    spec: &StoreSpec,
    store: Arc<dyn ThreadStore>,
    options: &AcpOptions,
) -> Result<(), Failure> {
    let dir = match (&options.sessions_dir, spec) {
        (Some(dir), _) => dir.clone(),
        (None, StoreSpec::Sqlite(path)) => {
            PathBuf::from(format!("{}.acp-sessions", path.display()))
        }
        (None, StoreSpec::Postgres(_)) => {
            return Err(Failure::new(
                exit::USAGE,
                "--sessions-dir is required with a PostgreSQL store",
            ));
        }
    };
    let namespace: String = options.run.env.credential_namespace()?.into();
    let sessions = acp_agent::SessionStore::new(dir, namespace);
    let factory = Arc::new(Factory {
        options: options.run.clone(),
        store,
    });
    acp_agent::AcpAgent::new(factory, sessions)
        .semantic_mcp(options.mcp_identity.iter().cloned())
        .approval_timeout(std::time::Duration::from_secs(options.run.approval_timeout))
        .serve(tokio::io::stdin(), tokio::io::stdout())
        .await;
    Ok(())
}
