//! The wire-independent loopback HTTP server behind every mock: a dedicated thread with its own
//! Tokio runtime, an axum fallback handler that records every request, and a [`Script`].

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use tokio::sync::oneshot;

use crate::record::{RecordedRequest, WireApi};
use crate::script::{Reply, ReplyKind, Script, Usage};

/// Bodies larger than this are cut off (and the request answered 413).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A complete HTTP answer, built by a wire module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpAnswer {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: String,
}

impl HttpAnswer {
    /// A JSON answer: errors, fixed routes and non-streamed replies on every wire.
    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Self {
        HttpAnswer {
            status,
            content_type: "application/json".to_owned(),
            body: body.to_string(),
        }
    }

    /// A `200 text/event-stream` answer carrying an already framed stream.
    pub(crate) fn event_stream(body: String) -> Self {
        HttpAnswer {
            status: 200,
            content_type: "text/event-stream".to_owned(),
            body,
        }
    }
}

/// How a wire module wants a request handled.
#[derive(Debug)]
pub(crate) enum Route {
    /// A model request: consume a script step and render it.
    Model,
    /// Answer this without touching the script.
    Fixed(HttpAnswer),
}

impl Route {
    /// A fixed JSON answer, the usual [`Route::Fixed`].
    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Self {
        Route::Fixed(HttpAnswer::json(status, body))
    }
}

/// The part of a request path the wires route on: without the query and trailing slashes, so
/// that `?beta=true` or a base URL ending in `/` changes nothing.
pub(crate) fn route_path(path: &str) -> &str {
    path.split('?').next().unwrap_or(path).trim_end_matches('/')
}

/// The message of every wire's 404, naming what was asked for.
pub(crate) fn no_route(method: &str, path: &str) -> String {
    format!("test-kit: no route for {method} {path}")
}

/// A model turn, the part of a [`Reply`] each wire renders in its own format.
pub(crate) enum Turn<'a> {
    /// A final assistant text.
    Text(&'a str),
    /// A call of an MCP tool or of a built-in tool.
    ToolCall(ToolCall<'a>),
}

/// A call of `tool` of MCP server `server` (names as configured; each wire mangles them its
/// CLI's way), or of the built-in tool `tool` (no server, name unmangled), with its call id
/// already chosen.
pub(crate) struct ToolCall<'a> {
    /// The MCP server's configuration key; `None` for a built-in tool.
    pub(crate) server: Option<&'a str>,
    /// The tool's name on that server.
    pub(crate) tool: &'a str,
    /// The arguments, a JSON object.
    pub(crate) arguments: &'a serde_json::Value,
    /// The scripted id, else `call_<sequence>`.
    pub(crate) call_id: String,
}

impl ToolCall<'_> {
    /// The name the model calls: the built-in tool's own name, else `mangle(server, tool)`.
    pub(crate) fn name(&self, mangle: impl FnOnce(&str, &str) -> String) -> String {
        match self.server {
            Some(server) => mangle(server, self.tool),
            None => self.tool.to_owned(),
        }
    }
}

/// Declares a public mock server: a struct around a [`LoopbackServer`] serving one [`Wire`],
/// with the methods every mock shares (`start`, `base_url`, `addr`, `requests`,
/// `model_requests`, `push_reply`, `pending_replies`, `shutdown`). Each wire gives its struct
/// docs and how its base URL is built from the bound address.
macro_rules! mock_server {
    (
        $(#[$meta:meta])*
        pub struct $name:ident serves $wire:ty;
        $(#[$url_meta:meta])*
        base_url = |$addr:ident| $url:expr;
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            server: $crate::server::LoopbackServer,
        }

        impl $name {
            /// Binds `127.0.0.1:0` and starts serving `script`.
            ///
            /// # Errors
            /// When the port cannot be bound or the server thread cannot be started.
            pub fn start(script: $crate::Script) -> std::io::Result<$name> {
                Ok($name {
                    server: $crate::server::LoopbackServer::start::<$wire>(script)?,
                })
            }

            $(#[$url_meta])*
            pub fn base_url(&self) -> String {
                let $addr = self.server.addr();
                $url
            }

            /// The bound address.
            pub fn addr(&self) -> std::net::SocketAddr {
                self.server.addr()
            }

            /// Every request received so far, in arrival order.
            pub fn requests(&self) -> Vec<$crate::RecordedRequest> {
                self.server.requests()
            }

            /// The model requests received so far (those that consumed, or would have
            /// consumed, a script step), in arrival order.
            pub fn model_requests(&self) -> Vec<$crate::RecordedRequest> {
                let mut requests = self.server.requests();
                requests.retain($crate::RecordedRequest::is_model_request);
                requests
            }

            /// Appends a step to the running script (see [`Script::push`]($crate::Script::push)).
            pub fn push_reply(&self, reply: $crate::Reply) {
                self.server.push_reply(reply);
            }

            /// The number of script steps not consumed yet.
            pub fn pending_replies(&self) -> usize {
                self.server.pending_replies()
            }

            /// Stops the server, closing its port and every open connection (a reply still
            /// waiting on [`Reply::delayed`]($crate::Reply::delayed) is dropped), and waits
            /// for its thread. Takes `&self`, so a mock shared in an `Arc` (with a driver, a
            /// task, a fixture) can be stopped by any holder; idempotent, and later calls of
            /// the other methods still answer from what was recorded. Dropping the mock does
            /// the same, so a test needs `shutdown` only to stop the model before the mock
            /// goes out of scope (to see how a runtime takes a vanished model).
            pub fn shutdown(&self) {
                self.server.shutdown();
            }
        }
    };
}

pub(crate) use mock_server;

/// The parts of a wire API the generic server needs.
pub(crate) trait Wire: Send + Sync + 'static {
    /// The API, recorded with each request.
    const API: WireApi;
    /// Decides what a request is, from its method, path (with query) and parsed body.
    fn route(method: &str, path: &str, body: &serde_json::Value) -> Route;
    /// The JSON body of a scripted error with this status.
    fn error_body(status: u16, message: &str) -> serde_json::Value;
    /// Renders a turn for the `sequence`-th (zero-based) model request, whose parsed body is
    /// `request` (some wires echo the model or answer non-streaming requests in kind).
    fn render_turn(
        turn: &Turn<'_>,
        usage: &Usage,
        sequence: usize,
        request: &serde_json::Value,
    ) -> HttpAnswer;
}

/// Renders a scripted reply on wire `W`: errors and raw answers the same way on every wire
/// (only the error body differs), turns by the wire.
pub(crate) fn render<W: Wire>(
    reply: &Reply,
    sequence: usize,
    request: &serde_json::Value,
) -> HttpAnswer {
    let turn = match &reply.kind {
        ReplyKind::Text(text) => Turn::Text(text),
        ReplyKind::ToolCall {
            server,
            tool,
            arguments,
        } => Turn::ToolCall(ToolCall {
            server: server.as_deref(),
            tool,
            arguments,
            call_id: reply
                .call_id
                .clone()
                .unwrap_or_else(|| format!("call_{sequence}")),
        }),
        ReplyKind::Error { status, message } => {
            return HttpAnswer::json(*status, &W::error_body(*status, message));
        }
        ReplyKind::Raw {
            status,
            content_type,
            body,
        } => {
            return HttpAnswer {
                status: *status,
                content_type: content_type.clone(),
                body: body.clone(),
            };
        }
    };
    W::render_turn(&turn, &reply.usage, sequence, request)
}

struct Inner {
    script: Script,
    requests: Vec<RecordedRequest>,
    model_requests: usize,
}

pub(crate) struct Shared {
    state: Mutex<Inner>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // matters to a test double; keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running loopback server; stops on [`LoopbackServer::shutdown`] or drop.
pub(crate) struct LoopbackServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The stop signal and the server thread, taken by the first shutdown (behind a lock so
    /// that shutdown takes `&self`).
    running: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

impl LoopbackServer {
    /// Binds `127.0.0.1:0` and serves wire `W` with `script` on a dedicated thread.
    pub(crate) fn start<W: Wire>(script: Script) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(Inner {
                script,
                requests: Vec::new(),
                model_requests: 0,
            }),
        });
        let app = axum::Router::new()
            .fallback(handle::<W>)
            .with_state(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("test-kit-mock-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let serve = std::future::IntoFuture::into_future(axum::serve(listener, app));
                    tokio::select! {
                        _ = serve => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime cancels every connection task, including replies that
                // are still sleeping, and closes the listener.
                drop(runtime);
            })?;
        Ok(LoopbackServer {
            addr,
            shared,
            running: Mutex::new(Some((stop, thread))),
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    pub(crate) fn push_reply(&self, reply: Reply) {
        self.shared.lock().script.push(reply);
    }

    pub(crate) fn pending_replies(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// Stops serving and waits for the server thread; idempotent. A concurrent second call
    /// returns at once, possibly before the thread has ended.
    pub(crate) fn shutdown(&self) {
        // Taken under the lock, joined outside it: `running` never waits on the thread.
        let running = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((stop, thread)) = running {
            // The receiver is gone only if the server already ended.
            let _ = stop.send(());
            // A panic on the server thread has nothing left to report here.
            let _ = thread.join();
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for LoopbackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackServer")
            .field("addr", &self.addr)
            .field(
                "running",
                &self
                    .running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some(),
            )
            .finish()
    }
}

async fn handle<W: Wire>(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (raw_body, too_large) = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => (bytes.to_vec(), false),
        Err(_) => (Vec::new(), true),
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(serde_json::Value::Null);
    let route = W::route(&method, &path, &body);
    let is_model = matches!(route, Route::Model);

    let scripted = {
        let mut state = shared.lock();
        let recorded = RecordedRequest {
            wire_api: W::API,
            index: state.requests.len(),
            method,
            path,
            headers,
            raw_body,
            body,
            model_request: is_model,
        };
        let scripted = if is_model && !too_large {
            let sequence = state.model_requests;
            state.model_requests += 1;
            let reply = state.script.next_for(&recorded);
            Some((reply, sequence, recorded.body.clone()))
        } else {
            None
        };
        state.requests.push(recorded);
        scripted
    };

    let answer = if too_large {
        HttpAnswer::json(
            413,
            &serde_json::json!({"error": {"message": "test-kit: body too large"}}),
        )
    } else {
        match (route, scripted) {
            (Route::Fixed(answer), _) => answer,
            (Route::Model, Some((reply, sequence, body))) => {
                if let Some(delay) = reply.delay {
                    tokio::time::sleep(delay).await;
                }
                render::<W>(&reply, sequence, &body)
            }
            (Route::Model, None) => HttpAnswer::json(500, &serde_json::json!({})),
        }
    };
    into_response(answer)
}

/// Frames events as SSE: `event: <type>\ndata: <json>\n\n` each.
pub(crate) fn sse(events: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for event in events {
        let kind = event
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("message");
        out.push_str("event: ");
        out.push_str(kind);
        out.push_str("\ndata: ");
        out.push_str(&event.to_string());
        out.push_str("\n\n");
    }
    out
}

fn into_response(answer: HttpAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let is_sse = answer.content_type.starts_with("text/event-stream");
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() = status;
    let content_type = header::HeaderValue::from_str(&answer.content_type)
        .unwrap_or(header::HeaderValue::from_static("application/octet-stream"));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    if is_sse {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-cache"),
        );
    }
    response
}
