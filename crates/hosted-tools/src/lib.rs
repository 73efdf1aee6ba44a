//! Host-defined Rust tools, served to agent runtimes over a real MCP endpoint.
//!
//! A host declares [`HostedTool`]s (name, description, input and optional output JSON Schema,
//! a required revision, an async handler). [`ToolSet`] validates them, and
//! [`HostedToolsProvider`] serves them as an MCP Streamable HTTP server (rmcp, hosted by
//! axum) on `127.0.0.1`, attached to every run like any other
//! [`RunServiceProvider`](run_service::RunServiceProvider). Every MCP-capable runtime can then
//! list and call them.
//!
//! # Invariants
//! - **One path.** The provider resumes Threads only through the generic
//!   [`RunServiceCompatibility`](run_service::RunServiceCompatibility) contract: id
//!   [`COMPATIBILITY_ID`], fingerprint [`ToolSet::fingerprint`] (names, descriptions, schemas,
//!   revisions; nothing allocation-specific). The agent core never recognises it by type,
//!   name or reuse key; a tidy test in `workspace-tests` checks that.
//! - **Bearer gate.** Every request needs `Authorization: Bearer <token>`; otherwise the answer
//!   is HTTP 401 and no MCP code, let alone a tool, runs. The token (32 random bytes) and the
//!   env-var name carrying it (`AGENT_TOOLS_TOKEN_<16 hex>`) are random per provider, hence per
//!   agent. Presented tokens are compared in constant time (equality of blake3 digests).
//! - **The token is a secret**: it exists as a [`secrecy::SecretString`] and leaves the crate
//!   only as the run's secret [`EnvBinding`](run_service::EnvBinding); it is never logged,
//!   never put in an event, an error or a fingerprint.
//! - **No session to lose.** The endpoint is stateless by default ([`SessionMode`]): rmcp
//!   would reap an idle MCP session and answer its id with 404, and Claude Code and Codex do
//!   not re-initialize, so a quiet stretch in a long run would cost it its tools.
//! - **Tool data stays out of the host's logs.** rmcp logs whole requests (arguments
//!   included) at DEBUG; the server runs on a thread of its own whose dispatcher drops rmcp's
//!   logging below INFO before it reaches the host's subscriber. Tool handlers run on the
//!   host's runtime.
//! - **Lifecycle.** The server starts on the first attach and stops on
//!   [`close`](run_service::RunServiceProvider::close) (or when the provider is dropped),
//!   releasing its port.
//! - **Events.** Calls made through a run's URL appear in that run's event stream as
//!   [`RunServiceEvent`](run_service::RunServiceEvent)s [`EVENT_STARTED`],
//!   [`EVENT_ARGUMENTS`] and [`EVENT_RESULT`] (with `is_error`; a handler's rejection or panic
//!   is reported there, never swallowed).
//!
//! # What this crate deliberately does not do
//! It does not validate arguments against the input schema (handlers do), does not depend on
//! the `agent` crate, does not listen on anything but loopback, and offers no way to fix the
//! port or the token.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet, COMPATIBILITY_ID};
//! use run_service::{RunId, RunServiceProvider};
//! use serde_json::json;
//!
//! let add = HostedTool::new(
//!     "add",
//!     "Adds two integers.",
//!     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
//!     |call| async move {
//!         let n = |k: &str| call.arguments.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
//!         Ok(ToolOutput::text((n("a") + n("b")).to_string()))
//!     },
//! )
//! .with_revision("1");
//! let provider = HostedToolsProvider::new(ToolSet::new([add]).unwrap());
//!
//! let attachment = provider.attach_run(&RunId::new("run-1")).await.unwrap();
//! let service = &attachment.services[0];
//! assert!(service.url.as_deref().unwrap().starts_with("http://127.0.0.1:"));
//! assert!(service.secret_env[0].name().starts_with("AGENT_TOOLS_TOKEN_"));
//! assert_eq!(attachment.resume_compatibility.as_ref().unwrap().id, COMPATIBILITY_ID);
//!
//! provider.detach_run(&RunId::new("run-1")).await.unwrap();
//! provider.close().await.unwrap(); // the port is released
//! # });
//! ```
//!
//! Stability: pre-1.0, the API may change in any release; [`COMPATIBILITY_ID`] never changes
//! meaning.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod catalog;
mod credential;
mod provider;
mod quiet;
mod server;
mod tool;

pub use catalog::{CatalogError, MAX_NAME_LEN, MAX_REVISION_LEN, ToolSet};
pub use credential::TOKEN_ENV_PREFIX;
pub use provider::HostedToolsProvider;
pub use server::SessionMode;
pub use tool::{HostedTool, ToolCall, ToolOutput, ToolRejection};

/// The resume-compatibility id of every hosted-tools attachment. Its meaning is immutable: a
/// catalog of host-defined tools served by this crate's loopback MCP server under one bearer
/// token per agent.
pub const COMPATIBILITY_ID: &str = "dev.agent-sdk.hosted-tools";

/// The service id and MCP server key the runtime sees.
pub const SERVICE_ID: &str = "agent-tools";

/// Event name: a call began. Data: `{"call_id", "tool"}`, and `"runtime_call_id"` when the
/// runtime's CLI passed its own id of the call (see [`ToolCall::runtime_call_id`]); the other
/// `tool_call.*` events carry the same identity.
pub const EVENT_STARTED: &str = "tool_call.started";
/// Event name: a call's arguments. Data: `{"call_id", "tool", "arguments"}`.
pub const EVENT_ARGUMENTS: &str = "tool_call.arguments";
/// Event name: a call's result. Data: `{"call_id", "tool", "is_error", "output"}` and
/// `"structured"` when the handler returned structured content.
pub const EVENT_RESULT: &str = "tool_call.result";
