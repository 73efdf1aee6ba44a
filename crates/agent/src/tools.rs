//! Host-defined tools: registration on the [`AgentBuilder`], and the only place in this crate
//! that knows the `hosted-tools` provider exists.
//!
//! [`AgentBuilder::tool`] collects [`HostedTool`]s; [`AgentBuilder::build`] validates them
//! (typed [`BuildError`]s) and, when there is at least one, appends a
//! [`HostedToolsProvider`] to the provider list as an
//! ordinary `Arc<dyn RunServiceProvider>`. From then on the core treats it like every other
//! provider: it attaches per run, its events are forwarded, it resumes Threads only through
//! its [`RunServiceCompatibility`](run_service::RunServiceCompatibility), and
//! [`Agent::close`](crate::Agent::close) closes it (stopping the server).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use agent::tools::{HostedTool, ToolOutput};
//! use agent::{Agent, BuildError};
//! use driver_spi::reference::ReferenceDriver;
//! use serde_json::json;
//!
//! let greet = || {
//!     HostedTool::new("greet", "Greets someone.", json!({"type": "object"}), |_call| async {
//!         Ok(ToolOutput::text("hello"))
//!     })
//! };
//! let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
//!     .tool(greet().with_revision("1"))
//!     .build()
//!     .unwrap();
//! agent.close().await;
//!
//! let missing = Agent::builder(Arc::new(ReferenceDriver::new())).tool(greet()).build();
//! assert!(matches!(missing, Err(BuildError::ToolWithoutRevision { .. })));
//! let twice = Agent::builder(Arc::new(ReferenceDriver::new()))
//!     .tools([greet().with_revision("1"), greet().with_revision("2")])
//!     .build();
//! assert!(matches!(twice, Err(BuildError::DuplicateTool { .. })));
//! # });
//! ```

use std::sync::Arc;

use hosted_tools::HostedToolsProvider;
use run_service::RunServiceProvider;

pub use hosted_tools::{
    COMPATIBILITY_ID, CatalogError, EVENT_ARGUMENTS, EVENT_RESULT, EVENT_STARTED, HostedTool,
    SERVICE_ID, ToolCall, ToolOutput, ToolRejection, ToolSet,
};

use crate::{AgentBuilder, BuildError};

/// The tools registered on a builder.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    tools: Vec<HostedTool>,
}

impl Registry {
    /// Validates the tools; `None` when there are none (no server is ever started).
    pub(crate) fn into_provider(self) -> Result<Option<Arc<dyn RunServiceProvider>>, BuildError> {
        if self.tools.is_empty() {
            return Ok(None);
        }
        let tools = ToolSet::new(self.tools).map_err(|e| match e {
            CatalogError::MissingRevision { tool } => BuildError::ToolWithoutRevision { tool },
            CatalogError::DuplicateName { tool } => BuildError::DuplicateTool { tool },
            other => BuildError::InvalidTool(other),
        })?;
        Ok(Some(Arc::new(HostedToolsProvider::new(tools))))
    }
}

impl AgentBuilder {
    /// Registers a host-defined tool, served to the runtime over a loopback MCP endpoint.
    ///
    /// Validated by [`build`](Self::build): a tool without a revision is
    /// [`BuildError::ToolWithoutRevision`], two tools with one name are
    /// [`BuildError::DuplicateTool`]. The tool server attaches after every provider added with
    /// [`run_service`](Self::run_service).
    pub fn tool(mut self, tool: HostedTool) -> Self {
        self.tools.tools.push(tool);
        self
    }

    /// Registers several tools; see [`tool`](Self::tool).
    pub fn tools(mut self, tools: impl IntoIterator<Item = HostedTool>) -> Self {
        self.tools.tools.extend(tools);
        self
    }
}
