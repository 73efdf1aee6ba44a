//! One host-defined tool: its declaration (name, description, schemas, revision) and its
//! async handler, with the values a handler receives and returns.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The boxed future a [`Handler`] returns.
pub(crate) type HandlerFuture =
    Pin<Box<dyn Future<Output = Result<ToolOutput, ToolRejection>> + Send>>;

/// A tool's handler: called once per `tools/call`, on the server's Tokio runtime.
pub(crate) type Handler = Arc<dyn Fn(ToolCall) -> HandlerFuture + Send + Sync>;

/// A Rust function the host hands to the agent runtime as an MCP tool.
///
/// The declaration (name, description, input and output JSON Schemas, revision) is what the
/// runtime sees in `tools/list` and what the resume fingerprint covers; the handler is what
/// runs on `tools/call`. The **revision is required**: bump it whenever the tool's behaviour
/// changes in a way a stored conversation must not silently carry over (the schemas and
/// description are covered anyway). A tool without one is rejected when the catalog is built
/// ([`CatalogError::MissingRevision`](crate::CatalogError::MissingRevision)).
///
/// ```
/// use hosted_tools::{HostedTool, ToolOutput, ToolRejection};
/// use serde_json::json;
///
/// let tool = HostedTool::new(
///     "lookup_order",
///     "Looks up an order by id.",
///     json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
///     |call| async move {
///         match call.arguments.get("id").and_then(|v| v.as_str()) {
///             Some(id) => Ok(ToolOutput::text(format!("order {id}: shipped"))),
///             None => Err(ToolRejection::new("`id` must be a string")),
///         }
///     },
/// )
/// .with_revision("1");
/// assert_eq!(tool.name(), "lookup_order");
/// ```
#[derive(Clone)]
pub struct HostedTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: serde_json::Value,
    pub(crate) output_schema: Option<serde_json::Value>,
    pub(crate) revision: Option<String>,
    pub(crate) handler: Handler,
}

impl HostedTool {
    /// A tool with this name, description, input JSON Schema (an object schema,
    /// `{"type": "object", ...}`) and handler. Set its revision with
    /// [`with_revision`](Self::with_revision).
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: serde_json::Value,
        handler: F,
    ) -> Self
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolRejection>> + Send + 'static,
    {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            revision: None,
            handler: Arc::new(move |call| Box::pin(handler(call))),
        }
    }

    /// Sets the revision (required, non-blank, at most 128 bytes, no control characters).
    pub fn with_revision(mut self, revision: impl Into<String>) -> Self {
        self.revision = Some(revision.into());
        self
    }

    /// Declares an output JSON Schema (an object schema). A handler of such a tool should
    /// answer with [`ToolOutput::json`].
    pub fn with_output_schema(mut self, schema: serde_json::Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input JSON Schema.
    pub fn input_schema(&self) -> &serde_json::Value {
        &self.input_schema
    }

    /// The output JSON Schema, if declared.
    pub fn output_schema(&self) -> Option<&serde_json::Value> {
        self.output_schema.as_ref()
    }

    /// The revision, if set.
    pub fn revision(&self) -> Option<&str> {
        self.revision.as_deref()
    }
}

impl fmt::Debug for HostedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostedTool")
            .field("name", &self.name)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

/// One `tools/call` as the handler sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The server-assigned id of this call, also used in the run's `tool_call.*` events.
    pub call_id: String,
    /// The runtime's own id of this call, when its CLI passes one to the MCP server (Codex:
    /// `_meta.callId`; Claude Code: `_meta["claudecode/toolUseId"]`); also in the run's
    /// `tool_call.*` events as `runtime_call_id`. Where the runtime's tool-call events carry the
    /// same id (Codex's app-server, Claude Code), it is the `call_id` of the run's
    /// `ToolCallStarted` for this call. `None` for runtimes that pass none (CodeBuddy,
    /// Gemini).
    pub runtime_call_id: Option<String>,
    /// The tool name.
    pub tool: String,
    /// The arguments: always a JSON object (empty when the client sent none). The server does
    /// not validate them against the input schema; the handler does.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The run the call serves (calls are served only within an attached run), so a handler
    /// can scope what it does, for example by tenant.
    pub run: run_service::RunId,
    /// The key of the Thread the run belongs to, for a Thread run (`None` for a bare
    /// [`attach_run`](run_service::RunServiceProvider::attach_run)).
    pub thread: Option<String>,
}

/// What a successful call returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// Text content blocks, in order.
    pub text: Vec<String>,
    /// Structured content (for tools with an output schema).
    pub structured: Option<serde_json::Value>,
}

impl ToolOutput {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: vec![text.into()],
            structured: None,
        }
    }

    /// Structured content, also rendered as one JSON text block for clients that only read
    /// text.
    pub fn json(value: serde_json::Value) -> Self {
        Self {
            text: vec![value.to_string()],
            structured: Some(value),
        }
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text.push(text.into());
        self
    }

    /// The text blocks joined with newlines (what the run's `tool_call.result` event shows).
    pub fn joined_text(&self) -> String {
        self.text.join("\n")
    }
}

/// A handler's typed refusal: the call is answered with a tool-level error (`isError: true`)
/// whose text is this message, so the model sees why. The message must not hold a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolRejection {
    message: String,
}

impl ToolRejection {
    /// A rejection with this caller-visible message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}
