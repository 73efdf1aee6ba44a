//! A JSON-RPC peer over a resident process's stdio: newline-delimited JSON messages, requests
//! correlated by id, each with its own timeout; notifications and server requests delivered
//! in order on a channel.
//!
//! It is the transport any resident dialect shares (Codex's app-server, an ACP agent, a
//! subprocess worker), so it knows no method. The same roles (requests with ids, their
//! answers, messages the peer starts) have a second framing, [`Wire::StreamJson`]: the control
//! protocol of Claude Code's and CodeBuddy's `--input-format stream-json`, where a request is a
//! `control_request` with a `request_id`, its answer a `control_response`, every other line an
//! event named by its `type`, and a notification a raw line. It sends `"jsonrpc":"2.0"` and accepts messages
//! with or without it (Codex's app-server omits it). A line that is not a JSON object, a
//! response to no pending request, or an over-long line is dropped and counted, never fatal:
//! a peer's bad output cannot take the pool down. When the peer's output ends, every pending
//! request fails with [`RpcError::Closed`].
//!
//! What the peer starts is delivered on a **bounded** queue ([`Inbox`]): when nobody reads
//! it, the reader stops reading, so back-pressure reaches the pipe and the peer blocks instead
//! of filling the host's memory. Between turns the peer is **quiet** ([`RpcPeer::end_turn`]):
//! what it writes then is read and dropped, never queued, and more than its budget of bytes
//! ends it ([`RpcPeer::on_flood`]). While a session opens ([`RpcPeer::begin_opening`]) what
//! the peer starts is dropped too, uncounted (a resumed session's history), so it can neither
//! reach the turn nor fill the inbox ahead of the answer. Each message is tagged with the turn
//! it was read in, so one read before a turn began never reaches that turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::lines::{LineError, LineReader};

mod inbox;

pub use inbox::Inbox;
use inbox::{Listening, QUEUE};

/// Why a request failed. No variant carries the peer's text in its `Display`: an error's
/// message comes from the runtime and may quote provider output.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No answer within the request's timeout; the request is forgotten (a late answer is
    /// dropped).
    #[error("no answer to `{method}` within {timeout:?}")]
    Timeout {
        /// The method (the dialect's constant).
        method: &'static str,
        /// The timeout.
        timeout: Duration,
    },
    /// The peer's output ended (it exited) before the answer.
    #[error("the peer closed its output before answering")]
    Closed,
    /// Writing to the peer failed.
    #[error("cannot write to the peer")]
    Write(#[source] std::io::Error),
    /// The peer answered with an error object.
    #[error("the peer answered with error code {code}")]
    Remote {
        /// The JSON-RPC error code.
        code: i64,
        /// The peer's message, for classification by the dialect only (never displayed).
        message: RemoteText,
    },
}

/// Text the peer sent: kept for classification, shown by length only.
pub struct RemoteText(pub String);

impl std::fmt::Debug for RemoteText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteText({} bytes)", self.0.len())
    }
}

/// A message the peer started: a notification, or a request the client must answer with
/// [`RpcPeer::respond`].
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `{"method", "params"}` without an id.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// `{"id", "method", "params"}`.
    Request {
        /// The peer's id, echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// How messages are framed on a resident process's stdio (one JSON object per line in both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wire {
    /// JSON-RPC 2.0 (`id`, `method`, `params`, `result`, `error`), with or without the
    /// `jsonrpc` member: Codex's app-server, ACP.
    #[default]
    JsonRpc,
    /// The stream-json control protocol of Claude Code and CodeBuddy: requests both ways are
    /// `{"type":"control_request","request_id","request":{"subtype",…}}`, answers
    /// `{"type":"control_response","response":{"subtype":"success"|"error","request_id",…}}`;
    /// every other line is an event whose kind is its `type`; a notification is written as its
    /// params alone (a `user` message).
    StreamJson,
}

/// The client side of one peer. Dropping it stops the reader task.
pub struct RpcPeer {
    wire: Wire,
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    next_id: AtomicU64,
    dropped: Arc<AtomicUsize>,
    listening: Arc<Listening>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for RpcPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcPeer")
            .field("pending", &self.pending_count())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Drop for RpcPeer {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl RpcPeer {
    /// A peer reading `output` (the process's stdout) and writing `input` (its stdin), lines
    /// at most `max_line` bytes. Incoming notifications and requests arrive on the receiver,
    /// which ends when the output does. The reader runs as a task on the current Tokio runtime.
    #[cfg(test)]
    pub fn new(
        output: impl AsyncRead + Send + Unpin + 'static,
        input: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> (Self, Inbox) {
        Self::with_wire(Wire::JsonRpc, output, input, max_line)
    }

    /// A peer framing its messages as `wire`.
    pub fn with_wire(
        wire: Wire,
        output: impl AsyncRead + Send + Unpin + 'static,
        input: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> (Self, Inbox) {
        let pending: Pending = Arc::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let listening = Arc::new(Listening::new());
        let (tx, rx) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read_loop(
            wire,
            LineReader::new(output, max_line),
            Reading {
                pending: Arc::clone(&pending),
                dropped: Arc::clone(&dropped),
                listening: Arc::clone(&listening),
                max_line,
            },
            tx,
        ));
        let inbox = Inbox {
            rx,
            listening: Arc::clone(&listening),
        };
        let peer = Self {
            wire,
            writer: tokio::sync::Mutex::new(Box::new(input)),
            pending,
            next_id: AtomicU64::new(1),
            dropped,
            listening,
            reader,
        };
        (peer, inbox)
    }

    /// Ends the peer with `end` when it writes more than `budget` bytes while quiet.
    pub fn on_flood(&self, budget: usize, end: impl FnOnce() + Send + 'static) {
        self.listening.budget.store(budget, Ordering::SeqCst);
        *self
            .listening
            .on_flood
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Box::new(end));
    }

    /// A new turn begins: what the peer writes from now on is queued for it, and nothing read
    /// before reaches it.
    pub fn begin_turn(&self) {
        self.listening.turn.fetch_add(1, Ordering::SeqCst);
        self.listening.opening.store(false, Ordering::SeqCst);
        self.listening.quiet.store(false, Ordering::SeqCst);
    }

    /// A session opens: until the next [`begin_turn`](Self::begin_turn), what the peer starts
    /// (a resumed session's history, replayed as notifications) is dropped, never queued, so
    /// it neither reaches the turn nor fills the inbox ahead of the answer; answers still
    /// reach their requests.
    pub fn begin_opening(&self) {
        self.listening.turn.fetch_add(1, Ordering::SeqCst);
        self.listening.opening.store(true, Ordering::SeqCst);
        self.listening.quiet.store(false, Ordering::SeqCst);
    }

    /// The turn ended: until the next [`begin_turn`](Self::begin_turn) the peer is quiet, and
    /// what it writes is dropped (and counted against its flood budget).
    pub fn end_turn(&self) {
        self.listening.quiet_bytes.store(0, Ordering::SeqCst);
        self.listening.turn.fetch_add(1, Ordering::SeqCst);
        self.listening.quiet.store(true, Ordering::SeqCst);
    }

    /// Whether the peer wrote more than its budget while quiet (and was ended).
    pub fn flooded(&self) -> bool {
        self.listening.flooded.load(Ordering::SeqCst)
    }

    /// Sends a request and waits for its answer, at most `timeout`.
    pub async fn request(
        &self,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        self.send_request(method, params).await?.wait(timeout).await
    }

    /// Sends a request; once this returns `Ok`, the request was written (a caller that must
    /// deliver a message at most once may retry elsewhere only after an `Err`).
    pub async fn send_request(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Answer, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(id, tx);
        let message = match self.wire {
            Wire::JsonRpc => {
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            }
            Wire::StreamJson => {
                let mut request = match params {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                request.insert("subtype".into(), Value::from(method));
                json!({"type": "control_request", "request_id": id.to_string(), "request": request})
            }
        };
        let sent = self.send(message).await;
        if let Err(e) = sent {
            self.lock_pending().remove(&id);
            return Err(e);
        }
        Ok(Answer {
            id,
            method,
            rx,
            pending: Arc::clone(&self.pending),
        })
    }

    /// Whether the peer's output ended (it exited, or closed stdout).
    pub fn is_closed(&self) -> bool {
        self.reader.is_finished()
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &'static str, params: Value) -> Result<(), RpcError> {
        match self.wire {
            Wire::JsonRpc => {
                self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
                    .await
            }
            Wire::StreamJson => self.send(params).await,
        }
    }

    /// Answers a request of the peer.
    pub async fn respond(&self, id: Value, result: Value) -> Result<(), RpcError> {
        match self.wire {
            Wire::JsonRpc => {
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
                    .await
            }
            Wire::StreamJson => {
                self.send(json!({"type": "control_response", "response": {
                    "subtype": "success", "request_id": id, "response": result}}))
                    .await
            }
        }
    }

    /// Answers a request of the peer with an error object.
    pub async fn respond_error(&self, id: Value, code: i64, message: &str) -> Result<(), RpcError> {
        match self.wire {
            Wire::JsonRpc => {
                self.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
                    .await
            }
            Wire::StreamJson => {
                self.send(json!({"type": "control_response", "response": {
                    "subtype": "error", "request_id": id, "error": message}}))
                    .await
            }
        }
    }

    /// Lines dropped so far (not JSON objects, answers to nothing, too long).
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Requests waiting for an answer.
    pub fn pending_count(&self) -> usize {
        self.lock_pending().len()
    }

    async fn send(&self, message: Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(&message).unwrap_or_default();
        line.push(b'\n');
        let mut writer = self.writer.lock().await;
        writer.write_all(&line).await.map_err(RpcError::Write)?;
        writer.flush().await.map_err(RpcError::Write)
    }

    fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The answer to a request that was written ([`RpcPeer::send_request`]).
pub struct Answer {
    id: u64,
    method: &'static str,
    rx: oneshot::Receiver<Result<Value, RpcError>>,
    pending: Pending,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("id", &self.id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl Answer {
    /// Waits for the answer, at most `timeout`; a request that times out is forgotten.
    pub async fn wait(self, timeout: Duration) -> Result<Value, RpcError> {
        let Self {
            id,
            method,
            rx,
            pending,
        } = self;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => {
                pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                Err(RpcError::Timeout { method, timeout })
            }
        }
    }
}

/// What the reader shares with the peer.
struct Reading {
    pending: Pending,
    dropped: Arc<AtomicUsize>,
    listening: Arc<Listening>,
    max_line: usize,
}

/// What one line was.
enum Routed {
    /// An answer, handed to its waiting request.
    Answered,
    /// A message the peer started, for the inbox.
    Started(Incoming),
    /// Neither: dropped and counted.
    Dropped,
}

/// Reads the peer's lines until its output ends (or it floods while quiet); then fails every
/// pending request.
async fn read_loop<R: AsyncRead + Unpin>(
    wire: Wire,
    mut lines: LineReader<R>,
    reading: Reading,
    incoming: mpsc::Sender<(u64, Incoming)>,
) {
    let Reading {
        pending,
        dropped,
        listening,
        max_line,
    } = reading;
    loop {
        let line = match lines.read_line().await {
            Ok(Some(line)) => Some(line),
            Ok(None) | Err(LineError::Io(_)) => break,
            Err(LineError::TooLong) => None,
        };
        if listening.quiet.load(Ordering::SeqCst) {
            // Between turns nothing is wanted: drop it, and end a peer that will not stop.
            let bytes = line.as_ref().map_or(max_line, Vec::len).saturating_add(1);
            dropped.fetch_add(1, Ordering::Relaxed);
            if listening.flood(bytes) {
                tracing::warn!(
                    reason = "flooded",
                    "a resident process wrote past its budget between turns and was ended"
                );
                break;
            }
            continue;
        }
        let Some(line) = line else {
            dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let turn = listening.turn.load(Ordering::SeqCst);
        let routed = match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(message)) => match wire {
                Wire::JsonRpc => dispatch(message, &pending),
                Wire::StreamJson => dispatch_stream_json(message, &pending),
            },
            _ => Routed::Dropped,
        };
        let delivered = match routed {
            Routed::Answered => true,
            // Opening a session: what it replays is not the turn's.
            Routed::Started(_) if listening.opening.load(Ordering::SeqCst) => false,
            // A full inbox waits here: the peer's pipe fills and it blocks.
            Routed::Started(message) => incoming.send((turn, message)).await.is_ok(),
            Routed::Dropped => false,
        };
        if !delivered {
            dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                dropped = dropped.load(Ordering::Relaxed),
                "json-rpc line dropped"
            );
        }
    }
    // Dropping the senders fails each waiting request with `Closed`.
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

/// Routes one stream-json line: a control request, a control response, or an event (a
/// notification named by its `type`); `false` when it is none of them.
fn dispatch_stream_json(mut message: Map<String, Value>, pending: &Pending) -> Routed {
    let kind = match message.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Routed::Dropped,
    };
    match kind.as_str() {
        "control_request" => {
            let id = message.remove("request_id").unwrap_or(Value::Null);
            let params = message.remove("request").unwrap_or(Value::Null);
            let Some(method) = params.get("subtype").and_then(Value::as_str) else {
                return Routed::Dropped;
            };
            let method = method.to_owned();
            Routed::Started(Incoming::Request { id, method, params })
        }
        "control_response" => {
            let Some(Value::Object(mut response)) = message.remove("response") else {
                return Routed::Dropped;
            };
            let id = response
                .get("request_id")
                .and_then(Value::as_str)
                .and_then(|id| id.parse::<u64>().ok());
            let Some(waiter) = id.and_then(|id| {
                pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id)
            }) else {
                return Routed::Dropped;
            };
            let answer = match response.get("subtype").and_then(Value::as_str) {
                Some("success") => Ok(response.remove("response").unwrap_or(Value::Null)),
                _ => Err(RpcError::Remote {
                    code: 0,
                    message: RemoteText(
                        response
                            .get("error")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                }),
            };
            let _ = waiter.send(answer);
            Routed::Answered
        }
        _ => Routed::Started(Incoming::Notification {
            method: kind,
            params: Value::Object(message),
        }),
    }
}

/// Routes one message: a response, a request or a notification.
fn dispatch(mut message: Map<String, Value>, pending: &Pending) -> Routed {
    let method = match message.remove("method") {
        Some(Value::String(method)) => Some(method),
        Some(_) => return Routed::Dropped,
        None => None,
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("id"), method) {
        (Some(id), Some(method)) => Routed::Started(Incoming::Request { id, method, params }),
        (None, Some(method)) => Routed::Started(Incoming::Notification { method, params }),
        (Some(id), None) => {
            let Some(id) = id.as_u64() else {
                return Routed::Dropped;
            };
            let Some(waiter) = pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id)
            else {
                return Routed::Dropped;
            };
            let answer = match (message.remove("result"), message.remove("error")) {
                (Some(result), None) => Ok(result),
                (_, Some(error)) => Err(RpcError::Remote {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: RemoteText(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                }),
                (None, None) => Ok(Value::Null),
            };
            let _ = waiter.send(answer);
            Routed::Answered
        }
        (None, None) => Routed::Dropped,
    }
}
