//! Scripted loopback mock model servers, for driving real agent CLIs offline in tests.
//!
//! A test starts a mock with a [`Script`] (an ordered queue of [`Reply`]s: a text, an MCP tool
//! call, an HTTP error), points the CLI at its [`base_url`](responses::MockResponses::base_url),
//! runs the CLI, and then asserts on what the CLI sent through [`RecordedRequest`]s
//! ([`input_texts`](RecordedRequest::input_texts),
//! [`function_call_outputs`](RecordedRequest::function_call_outputs),
//! [`tool_names`](RecordedRequest::tool_names), [`bearer`](RecordedRequest::bearer)).
//!
//! A reply in which the model uses the runtime's own command or file-write tool has one
//! constructor per runtime, in the shape its pinned CLI runs: [`Reply::codex_command`] and
//! [`Reply::codex_write`] (Codex's `exec_command`, and an `apply_patch` that Codex applies as a
//! file change), [`Reply::claude_command`] and [`Reply::claude_write`] (`Bash`, `Write`),
//! [`Reply::codebuddy_command`] and [`Reply::codebuddy_write`] (the same tools), and
//! [`Reply::gemini_command`] and [`Reply::gemini_write`] (`run_shell_command`, `write_file`).
//!
//! One module per wire API; each has its own server type and renders the shared [`Reply`]s in
//! its own format:
//! - [`responses`]: the OpenAI Responses API (SSE), as the Codex CLI uses it.
//! - [`anthropic`]: the Anthropic Messages API (SSE), as the Claude Code CLI uses it.
//! - [`chat`]: the OpenAI Chat Completions API (SSE), as the CodeBuddy Code CLI uses it.
//! - [`gemini`]: the Gemini API's `streamGenerateContent` (SSE), as the Gemini CLI uses it.
//!
//! [`real_cli::binary`] finds a real CLI for an end-to-end test and applies the skip rule:
//! a visible `SKIPPED` locally, a failure under CI. [`restart::run_scenario`] is the
//! host-restart scenario (rotated MCP endpoint, resume, semantic change, canary scan) that
//! every real-CLI driver test runs; [`approvals::run_approval_scenario`] is the permission
//! and approval scenario (deny, approve, allow, forbid a file write) of every CLI with
//! approvals; [`resident::run_resident_scenario`] is the
//! resident-process scenario (one live process reused, recycled on a rotation, a fork,
//! nothing left after `Agent::close`) that every resident-capable driver's test runs;
//! [`prewarm::run_prewarm_scenario`] is the pre-warm scenario (a new and a stored Thread's
//! first turn on the pre-warmed process, an incompatible pre-warm refused before any process
//! starts, a rotation that recycles it) of every pre-warming driver;
//! [`structured::run_structured_scenario`] is the structured-output scenario (a valid answer
//! as typed data, the schema seen by the model, a violating answer refused by the core with
//! nothing persisted) of every CLI with native structured output.
//!
//! # Invariants
//! - **Loopback only.** Every server binds `127.0.0.1` on an ephemeral port; nothing here opens
//!   an outbound connection.
//! - **Everything is recorded**, in arrival order, before it is answered, whatever the method
//!   or path; unknown routes get a JSON 404, never a hang.
//! - **One step per model request.** Only model requests consume script steps; the first step
//!   that accepts the request is taken; an exhausted script answers [`DEFAULT_TEXT`] (or the
//!   reply set by [`Script::with_default`]).
//! - **Self-contained lifecycle.** Each server runs on its own thread and Tokio runtime, so it
//!   works from plain `#[test]`s and from any async runtime; shutdown (explicit, through
//!   `&self` so that a mock shared in an `Arc` can be stopped by any holder, or on drop)
//!   closes the port and every connection, even one whose reply is still delayed.
//!
//! # What this crate deliberately does not do
//! It does not simulate a model (no reasoning, no token counting: usage is scripted), does not
//! validate requests against the real APIs, does not stream replies incrementally (each reply
//! is written at once), and does not speak TLS. It is a test double: `publish = false`, never a
//! dependency of production code.
//!
//! # Example
//! ```
//! use std::io::{Read, Write};
//! use test_kit::{Reply, Script, responses::MockResponses};
//!
//! let mock = MockResponses::start(
//!     Script::new()
//!         .then(Reply::tool_call("agent-tools", "add", serde_json::json!({"a": 1, "b": 2})))
//!         .then(Reply::text("3")),
//! )?;
//! assert!(mock.base_url().starts_with("http://127.0.0.1:"));
//!
//! // What a client does (Codex: `-c model_providers.<p>.base_url="<base_url>"`).
//! let body = r#"{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"1+2?"}]}]}"#;
//! let mut stream = std::net::TcpStream::connect(mock.addr())?;
//! write!(
//!     stream,
//!     "POST /v1/responses HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
//!     body.len()
//! )?;
//! let mut answer = String::new();
//! stream.read_to_string(&mut answer)?;
//! assert!(answer.contains(r#""namespace":"mcp__agent_tools""#));
//!
//! let requests = mock.model_requests();
//! assert_eq!(requests[0].input_texts(), ["1+2?"]);
//! assert_eq!(requests[0].bearer(), Some("k"));
//! assert_eq!(mock.pending_replies(), 1);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Stability: a test utility inside this workspace; its API changes with its users.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod anthropic;
pub mod approvals;
mod body;
pub mod chat;
pub mod gemini;
mod hosts;
mod names;
mod openai;
pub mod prewarm;
pub mod real_cli;
mod record;
pub mod resident;
pub mod responses;
pub mod restart;
mod script;
mod server;
pub mod steer;
pub mod structured;

pub use record::{FunctionCallOutput, RecordedRequest, WireApi};
pub use script::{DEFAULT_TEXT, Reply, Script, Usage};
