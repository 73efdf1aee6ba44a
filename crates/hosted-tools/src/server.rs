//! The loopback MCP Streamable HTTP server: rmcp's `StreamableHttpService` hosted by axum,
//! behind a bearer-token gate, with per-run call attribution by URL path.
//!
//! Request flow: axum accepts on `127.0.0.1:<os port>` → [`gate`] checks
//! `Authorization: Bearer <token>` (401 before anything else runs) and the path
//! (`/mcp/<slot>` of an attached run, else 404) and records the slot in the request's
//! extensions → rmcp answers `initialize`, `tools/list` and `tools/call` through [`McpHandler`], which reads the
//! slot back from the request parts rmcp attaches to each request.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use run_service::{RunId, RunServiceEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::credential::Credential;
use crate::{
    EVENT_ARGUMENTS, EVENT_RESULT, EVENT_STARTED, HostedTool, SERVICE_ID, ToolCall, ToolOutput,
    ToolSet,
};

/// How the tool endpoint handles MCP sessions.
///
/// MCP Streamable HTTP lets a server keep a session per client (`Mcp-Session-Id`). rmcp reaps
/// a session after a stretch without traffic and answers later requests that carry its id
/// with 404; the spec then asks the client to initialize again, and Claude Code and Codex do
/// not: every later tool call fails until the CLI restarts. A run with a long quiet stretch
/// between two tool calls (a long coding task) would lose its tools for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionMode {
    /// No sessions: every request stands alone (rmcp's stateless mode, JSON responses), so
    /// no idle gap, however long, strands a runtime. Tool calls, per-run attribution (by
    /// URL path), the bearer gate and events need no session. The default.
    #[default]
    Stateless,
    /// rmcp sessions, reaped after `idle_limit` without traffic (rmcp's default, 5 minutes,
    /// when `None`). Only for clients that re-initialize after a 404; see the type docs.
    Stateful {
        /// How long a silent session lives.
        idle_limit: Option<Duration>,
    },
}

/// How long `close` waits for in-flight requests before it drops the listener by force.
const GRACEFUL_CLOSE: Duration = Duration::from_secs(1);

/// The path prefix of the MCP endpoint.
pub(crate) const MCP_PATH: &str = "/mcp";

/// The run a live slot belongs to, the Thread it serves (if any), and where its events go.
#[derive(Clone)]
struct Slot {
    run: RunId,
    thread: Option<String>,
    events: mpsc::UnboundedSender<RunServiceEvent>,
}

/// State shared by the gate, every MCP session and the provider.
pub(crate) struct Shared {
    /// The host's runtime, where tool handlers run.
    host: tokio::runtime::Handle,
    tools: ToolSet,
    listed: Vec<Tool>,
    pub(crate) credential: Credential,
    slots: Mutex<HashMap<String, Slot>>,
    next_call: AtomicU64,
}

impl Shared {
    pub(crate) fn new(tools: ToolSet, credential: Credential) -> Self {
        let listed = tools.iter().map(to_mcp_tool).collect();
        Self {
            host: tokio::runtime::Handle::current(),
            tools,
            listed,
            credential,
            slots: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(0),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        // Every critical section is a single map operation; a panic cannot leave it torn.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds `slot` to `run` unless another run holds it; whether it did.
    pub(crate) fn open_slot(
        &self,
        slot: String,
        run: RunId,
        thread: Option<String>,
        events: mpsc::UnboundedSender<RunServiceEvent>,
    ) -> bool {
        match self.slots().entry(slot) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(Slot {
                    run,
                    thread,
                    events,
                });
                true
            }
        }
    }

    /// Closes every slot of `run`: its event stream ends, and later calls on its URL are
    /// refused (404).
    pub(crate) fn close_run(&self, run: &RunId) {
        self.slots().retain(|_, slot| &slot.run != run);
    }

    pub(crate) fn close_all(&self) {
        self.slots().clear();
    }

    /// The run a slot belongs to and its event sink, while that run is attached.
    fn attached(&self, slot: Option<&CallSlot>) -> Option<Slot> {
        let slot = slot?;
        self.slots().get(&slot.0).cloned()
    }

    fn is_attached(&self, slot: &CallSlot) -> bool {
        self.slots().contains_key(&slot.0)
    }
}

fn to_mcp_tool(tool: &HostedTool) -> Tool {
    // Validated object schemas (ToolSet::new); an empty map is unreachable.
    let object = |v: &serde_json::Value| v.as_object().cloned().unwrap_or_default();
    let mut listed = Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        object(&tool.input_schema),
    );
    listed.output_schema = tool.output_schema.as_ref().map(|s| Arc::new(object(s)));
    listed
}

/// The run slot named by a request's path, put into its extensions by [`gate`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallSlot(String);

/// A running server, on a thread of its own (see [`crate::quiet`]). Dropping it stops the
/// listener.
pub(crate) struct Running {
    pub(crate) port: u16,
    cancel: CancellationToken,
    /// Ends the accept loop at once (after the graceful stop's grace period).
    force: Option<tokio::sync::oneshot::Sender<()>>,
    /// Fires when the server thread has stopped serving.
    stopped: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Running {
    /// Binds `127.0.0.1:0` and serves until [`stop`](Self::stop) or drop.
    pub(crate) async fn start(shared: Arc<Shared>, sessions: SessionMode) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let cancel = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel.child_token())
            .with_sse_keep_alive(Some(Duration::from_secs(15)));
        let mut session_manager = LocalSessionManager::default();
        match sessions {
            SessionMode::Stateless => {
                config = config
                    .with_legacy_session_mode(false)
                    .with_json_response(true);
            }
            SessionMode::Stateful { idle_limit } => {
                config = config.with_legacy_session_mode(true);
                if let Some(limit) = idle_limit {
                    session_manager.session_config.keep_alive = Some(limit);
                }
            }
        }
        let handler_shared = Arc::clone(&shared);
        let mcp = StreamableHttpService::new(
            move || {
                Ok(McpHandler {
                    shared: Arc::clone(&handler_shared),
                })
            },
            Arc::new(session_manager),
            config,
        );
        let app = axum::Router::new()
            .fallback_service(mcp)
            .layer(middleware::from_fn_with_state(shared, gate));
        let shutdown = cancel.clone();
        let (force_tx, force_rx) = tokio::sync::oneshot::channel::<()>();
        let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<std::io::Result<()>>();
        let quiet = crate::quiet::Quiet::around_current();
        std::thread::Builder::new()
            .name("hosted-tools".to_owned())
            .spawn(move || {
                let _quiet = tracing::dispatcher::set_default(&tracing::Dispatch::new(quiet));
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let serve = axum::serve(listener, app)
                        .with_graceful_shutdown(async move { shutdown.cancelled().await });
                    tokio::select! {
                        served = serve => {
                            if served.is_err() {
                                tracing::debug!("tool server stopped with an I/O error");
                            }
                        }
                        _ = force_rx => {}
                    }
                });
                // Dropping the runtime ends whatever rmcp still runs.
                runtime.shutdown_timeout(GRACEFUL_CLOSE);
                let _ = stopped_tx.send(());
            })?;
        ready_rx
            .await
            .map_err(|_| std::io::Error::other("the tool server thread did not start"))??;
        tracing::debug!(port, "tool server listening on loopback");
        Ok(Self {
            port,
            cancel,
            force: Some(force_tx),
            stopped: Some(stopped_rx),
        })
    }

    /// Stops accepting, ends every MCP session, waits briefly for in-flight requests, then
    /// stops the accept loop by force. The port is released when this returns.
    pub(crate) async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(mut stopped) = self.stopped.take()
            && tokio::time::timeout(GRACEFUL_CLOSE, &mut stopped)
                .await
                .is_err()
        {
            if let Some(force) = self.force.take() {
                let _ = force.send(());
            }
            let _ = tokio::time::timeout(GRACEFUL_CLOSE * 2, stopped).await;
        }
        tracing::debug!(port = self.port, "tool server stopped");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(force) = self.force.take() {
            let _ = force.send(());
        }
    }
}

/// What a request path names.
fn parse_path(path: &str) -> Option<Option<CallSlot>> {
    let rest = path.strip_prefix(MCP_PATH)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Some(None);
    }
    let slot = rest.strip_prefix('/')?;
    let valid = !slot.is_empty() && slot.len() <= 64 && slot.bytes().all(|b| b.is_ascii_hexdigit());
    valid.then(|| Some(CallSlot(slot.to_owned())))
}

/// The bearer gate: nothing past it runs without the agent's token.
async fn gate(State(shared): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !shared.credential.accepts(authorization) {
        tracing::debug!("tool server refused a request without a valid bearer token");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"agent-tools\"")],
        )
            .into_response();
    }
    // Only an attached run's own URL is served: the bare endpoint and the URL of a run that
    // detached answer 404, so no handler runs outside a run it could be attributed to.
    let Some(Some(slot)) = parse_path(request.uri().path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if !shared.is_attached(&slot) {
        return StatusCode::NOT_FOUND.into_response();
    }
    request.extensions_mut().insert(slot);
    next.run(request).await
}

/// The rmcp server handler: one per MCP session, all sharing [`Shared`].
#[derive(Clone)]
struct McpHandler {
    shared: Arc<Shared>,
}

impl McpHandler {
    fn emit(
        sink: Option<&mpsc::UnboundedSender<RunServiceEvent>>,
        name: &str,
        data: serde_json::Value,
    ) {
        if let Some(sink) = sink {
            // The run may have detached meanwhile; its events are then dropped.
            let _ = sink.send(RunServiceEvent::new(SERVICE_ID, name, data));
        }
    }

    async fn run_handler(
        host: &tokio::runtime::Handle,
        tool: &HostedTool,
        call: ToolCall,
        cancelled: CancellationToken,
    ) -> Result<ToolOutput, String> {
        // A separate task, so a panicking handler becomes an error result, not a dead session;
        // on the host's runtime, where the handler's own resources live (the server's thread
        // only runs rmcp).
        let mut task = host.spawn((tool.handler)(call));
        tokio::select! {
            joined = &mut task => match joined {
                Ok(Ok(output)) => Ok(output),
                Ok(Err(rejection)) => Err(rejection.message().to_owned()),
                Err(join) if join.is_panic() => Err("the tool handler panicked".to_owned()),
                Err(_) => Err("the tool handler was cancelled".to_owned()),
            },
            () = cancelled.cancelled() => {
                task.abort();
                Err("the call was cancelled by the client".to_owned())
            }
        }
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVICE_ID, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.listed.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call_id = format!(
            "tool-call-{}",
            self.shared.next_call.fetch_add(1, Ordering::Relaxed) + 1
        );
        let runtime_call_id = runtime_call_id(&context.meta);
        let slot = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CallSlot>());
        // The gate admitted the request for an attached run; it may have detached since.
        let Some(Slot {
            run,
            thread,
            events: sink,
        }) = self.shared.attached(slot)
        else {
            return Err(ErrorData::invalid_request(
                "the run this URL belongs to is not attached",
                None,
            ));
        };
        let sink = Some(sink);
        let name = request.name.to_string();
        let arguments = request.arguments.unwrap_or_default();
        // Every event of the call names it the same way: the server's id, the tool, and the
        // runtime's own id of the call when its CLI passed one.
        let identity = |extra: serde_json::Value| {
            let mut data = serde_json::json!({"call_id": call_id, "tool": name});
            if let (Some(map), serde_json::Value::Object(extra)) = (data.as_object_mut(), extra) {
                if let Some(id) = &runtime_call_id {
                    map.insert("runtime_call_id".to_owned(), id.clone().into());
                }
                map.extend(extra);
            }
            data
        };
        Self::emit(
            sink.as_ref(),
            EVENT_STARTED,
            identity(serde_json::json!({})),
        );
        Self::emit(
            sink.as_ref(),
            EVENT_ARGUMENTS,
            identity(serde_json::json!({"arguments": arguments})),
        );
        let Some(tool) = self.shared.tools.get(&name) else {
            Self::emit(
                sink.as_ref(),
                EVENT_RESULT,
                identity(serde_json::json!({"is_error": true, "output": "unknown tool"})),
            );
            tracing::debug!(
                call_id,
                attributed = sink.is_some(),
                "call of an unknown tool"
            );
            return Err(ErrorData::invalid_params("unknown tool", None));
        };
        let call = ToolCall {
            call_id: call_id.clone(),
            runtime_call_id: runtime_call_id.clone(),
            tool: name.clone(),
            arguments,
            run,
            thread,
        };
        let outcome = Self::run_handler(&self.shared.host, tool, call, context.ct.clone()).await;
        let (result, output, structured) = match outcome {
            Ok(output) => {
                let mut result = CallToolResult::success(
                    output
                        .text
                        .iter()
                        .cloned()
                        .map(ContentBlock::text)
                        .collect(),
                );
                result.structured_content = output.structured.clone();
                (result, output.joined_text(), output.structured)
            }
            Err(message) => (
                CallToolResult::error(vec![ContentBlock::text(message.clone())]),
                message,
                None,
            ),
        };
        let is_error = result.is_error.unwrap_or(false);
        let mut data = identity(serde_json::json!({"is_error": is_error, "output": output}));
        if let (Some(structured), Some(map)) = (structured, data.as_object_mut()) {
            map.insert("structured".to_owned(), structured);
        }
        Self::emit(sink.as_ref(), EVENT_RESULT, data);
        tracing::debug!(
            call_id,
            tool = %name,
            attributed = sink.is_some(),
            is_error,
            "tool call served"
        );
        Ok(result.into())
    }
}

/// Where a runtime's CLI puts its own id of a call in a `tools/call` request's `_meta`, as the
/// pinned binaries do (seen on the wire): Codex 0.169.0 `callId` (the model's call id; its
/// app-server's tool-call items carry the same id, its `exec --json` items an id of their
/// own), Claude Code 2.1.197 `claudecode/toolUseId` (the `tool_use` id its stream carries).
/// CodeBuddy 0.3.201 and Gemini 0.61.0 send none.
const RUNTIME_CALL_ID_KEYS: &[&str] = &["callId", "claudecode/toolUseId"];

/// The longest runtime call id kept; a longer one (no runtime sends one) is dropped.
const MAX_RUNTIME_CALL_ID: usize = 256;

/// The runtime's own id of a call from the request's `_meta`: a short printable ASCII string
/// under one of [`RUNTIME_CALL_ID_KEYS`], else `None`.
fn runtime_call_id(meta: &rmcp::model::RequestMetaObject) -> Option<String> {
    RUNTIME_CALL_ID_KEYS
        .iter()
        .find_map(|key| meta.get(*key))
        .and_then(serde_json::Value::as_str)
        .filter(|id| {
            !id.is_empty()
                && id.len() <= MAX_RUNTIME_CALL_ID
                && id.bytes().all(|b| b.is_ascii_graphic())
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: serde_json::Value) -> rmcp::model::RequestMetaObject {
        let serde_json::Value::Object(map) = value else {
            panic!("an object")
        };
        rmcp::model::RequestMetaObject(rmcp::model::MetaObject(map))
    }

    #[test]
    fn a_runtime_call_id_comes_from_codex_or_claude_code_meta_only() {
        let id = |v| runtime_call_id(&meta(v));
        assert_eq!(
            id(serde_json::json!({"callId": "call_0", "itemId": "fc_0"})).as_deref(),
            Some("call_0")
        );
        assert_eq!(
            id(serde_json::json!({"claudecode/toolUseId": "toolu_01"})).as_deref(),
            Some("toolu_01")
        );
        // Gemini's progress token and CodeBuddy's empty `_meta` name no call.
        assert_eq!(id(serde_json::json!({"progressToken": "a3e6"})), None);
        assert_eq!(id(serde_json::json!({})), None);
        // Not a string, empty, too long, or not printable ASCII: dropped.
        assert_eq!(id(serde_json::json!({"callId": 7})), None);
        assert_eq!(id(serde_json::json!({"callId": ""})), None);
        assert_eq!(id(serde_json::json!({"callId": "x".repeat(257)})), None);
        assert_eq!(id(serde_json::json!({"callId": "a b\n"})), None);
    }

    #[test]
    fn paths_name_the_endpoint_and_an_optional_hex_slot() {
        assert_eq!(parse_path("/mcp"), Some(None));
        assert_eq!(parse_path("/mcp/"), Some(None));
        assert_eq!(
            parse_path("/mcp/00ff"),
            Some(Some(CallSlot("00ff".to_owned())))
        );
        assert_eq!(
            parse_path("/mcp/00ff/"),
            Some(Some(CallSlot("00ff".to_owned())))
        );
        for bad in ["/", "/other", "/mcpx", "/mcp/xyz", "/mcp/00/11", "/mcp//"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
        assert_eq!(parse_path(&format!("/mcp/{}", "a".repeat(65))), None);
    }
}
