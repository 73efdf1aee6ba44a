//! A message peer over a process's stdio: newline-delimited JSON messages, requests correlated
//! by id, each with its own timeout; notifications and requests of the other side delivered in
//! order on a bounded channel. It is the transport any resident dialect shares (Codex's
//! app-server, an ACP agent, Claude Code's stream-json input) and the one a worker process
//! serves its requests on, so it knows no method.
//!
//! **Framing.** How a message looks on the wire is a [`Framing`]: how a request, a
//! notification, an answer and an error answer are written, and what one line read is (an
//! answer to an id, a request, a notification, or nothing valid). [`JsonRpc`] is JSON-RPC 2.0:
//! it writes `"jsonrpc":"2.0"` and reads messages with or without it (Codex's app-server omits
//! it). A protocol with another framing brings its own (`driver-stream-json` has the control
//! protocol of Claude Code's and CodeBuddy's `--input-format stream-json`).
//!
//! **Two roles.** As a **client** ([`RpcPeer::client`]: a driver speaking to a resident
//! process) everything the other side starts is delivered; a line that is not a JSON message,
//! an answer to no pending request, or an over-long line is dropped and counted, never fatal:
//! a process's bad output cannot take the pool down. As a **server** ([`RpcPeer::server`]: a
//! worker reading requests on its stdin) the peer is built with the methods it serves and
//! delivers only those; what it cannot take it answers itself with the fixed JSON-RPC errors,
//! never echoing the input: a line that is not JSON with `-32700` "Parse error" (id `null`),
//! JSON that is no valid message (a missing or non-string method, an id or params of a wrong
//! type, a batch, which is not supported, an over-long line) with `-32600` "Invalid Request"
//! (its id when one can be read, else `null`), a request of another method with `-32601`
//! "Method not found" (its id); a notification of another method is dropped and counted, since
//! JSON-RPC forbids answering one. Both roles may send requests and notifications and answer
//! the other side's requests. When the other side's output ends, every pending request fails
//! with [`RpcError::Closed`].
//!
//! What the other side starts is delivered on a **bounded** queue ([`Inbox`]): when nobody
//! reads it, the reader stops reading, so back-pressure reaches the pipe and the other side
//! blocks instead of filling the host's memory. A client's resident process is **quiet**
//! between turns ([`RpcPeer::end_turn`]): what it writes then is read and dropped, never
//! queued, and more than its budget of bytes ends it ([`RpcPeer::on_flood`]). While a session
//! opens ([`RpcPeer::begin_opening`]) what the process starts is dropped too, uncounted (a
//! resumed session's history), so it can neither reach the turn nor fill the inbox ahead of
//! the answer. Each message is tagged with the turn it was read in, so one read before a turn
//! began never reaches that turn. A server never calls these: it has one endless turn.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::lines::{LineError, LineReader};

mod framing;
mod inbox;
mod server;

pub use framing::{Frame, Framing, JsonRpc};
pub use inbox::Inbox;
use inbox::{Listening, QUEUE};
use server::{Refusal, Role, Routed};

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
        /// The peer's message, then its `data` (a string as is, anything else as JSON) on a
        /// line of its own: for classification by the dialect only (never displayed).
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

/// A message the other side started: a notification, or a request to answer with
/// [`RpcPeer::respond`] (or [`RpcPeer::respond_error`]).
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
        /// The other side's id, echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
}

type Pending = Arc<Mutex<Waiting>>;

/// The requests waiting for an answer, by id, and whether the other side's output ended: a
/// request registered after that would wait for an answer nobody reads, so it is refused
/// (checked under the same lock the reader closes it under, so none slips in between).
#[derive(Default)]
struct Waiting {
    answers: HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>,
    closed: bool,
}

impl Waiting {
    /// Registers a request; `false` once the output ended.
    fn insert(&mut self, id: u64, waiter: oneshot::Sender<Result<Value, RpcError>>) -> bool {
        if self.closed {
            return false;
        }
        self.answers.insert(id, waiter);
        true
    }

    fn remove(&mut self, id: &u64) -> Option<oneshot::Sender<Result<Value, RpcError>>> {
        self.answers.remove(id)
    }

    fn len(&self) -> usize {
        self.answers.len()
    }

    /// The output ended: every waiting request fails with `Closed` (its sender dropped), and
    /// so does every later one.
    fn close(&mut self) {
        self.closed = true;
        self.answers.clear();
    }
}

/// Where messages are written: shared by the peer and, for a server's refusals, its reader,
/// one whole line under the lock.
type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// One side of a conversation over a process's stdio, client or server. Dropping it stops the
/// reader task.
pub struct RpcPeer {
    framing: &'static dyn Framing,
    writer: Writer,
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
    /// A client reading `output` (the process's stdout) and writing `input` (its stdin), in
    /// `framing`, lines at most `max_line` bytes. The notifications and requests the process
    /// starts arrive on the inbox, which ends when the output does. The reader runs as a task
    /// on the current Tokio runtime.
    pub fn client(
        framing: &'static dyn Framing,
        output: impl AsyncRead + Send + Unpin + 'static,
        input: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> (Self, Inbox) {
        Self::start(framing, Role::Client, output, input, max_line)
    }

    /// A server of `methods`, reading requests on `input` (its own stdin) and writing to
    /// `output` (its stdout), in `framing`, lines at most `max_line` bytes. Requests and
    /// notifications of its methods arrive on the inbox, to be answered with
    /// [`respond`](Self::respond) or [`respond_error`](Self::respond_error); everything else is
    /// answered or dropped as the [module](self) says. The reader runs as a task on the current
    /// Tokio runtime.
    ///
    /// ```
    /// use driver_process::peer::{Incoming, JsonRpc, RpcPeer};
    /// use serde_json::{Value, json};
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// # rt.block_on(async {
    /// // The worker's stdin and stdout, and the client's ends of them.
    /// let (stdin, mut client_writes) = tokio::io::duplex(4096);
    /// let (client_reads, stdout) = tokio::io::duplex(4096);
    /// let (server, mut inbox) = RpcPeer::server(&JsonRpc, ["work/run"], stdin, stdout, 4096);
    /// client_writes
    ///     .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"work/cancel\"}\n")
    ///     .await?;
    /// client_writes
    ///     .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"work/run\",\"params\":{}}\n")
    ///     .await?;
    /// let Some(Incoming::Request { id, method, .. }) = inbox.recv().await else {
    ///     panic!("a request");
    /// };
    /// assert_eq!(method, "work/run");
    /// server.respond(id, json!({"done": true})).await?;
    ///
    /// let mut answers = BufReader::new(client_reads).lines();
    /// let mut next = async || -> Value {
    ///     serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap()
    /// };
    /// assert_eq!(next().await, json!({"jsonrpc": "2.0", "id": 1,
    ///     "error": {"code": -32601, "message": "Method not found"}}));
    /// assert_eq!(next().await, json!({"jsonrpc": "2.0", "id": 2, "result": {"done": true}}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn server(
        framing: &'static dyn Framing,
        methods: impl IntoIterator<Item = impl Into<String>>,
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> (Self, Inbox) {
        let methods: HashSet<String> = methods.into_iter().map(Into::into).collect();
        Self::start(framing, Role::Server(methods), input, output, max_line)
    }

    /// A peer in `role` reading `from` and writing `to`.
    fn start(
        framing: &'static dyn Framing,
        role: Role,
        from: impl AsyncRead + Send + Unpin + 'static,
        to: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> (Self, Inbox) {
        let pending: Pending = Arc::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let listening = Arc::new(Listening::new());
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(to)));
        let (tx, rx) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read_loop(
            LineReader::new(from, max_line),
            Reading {
                framing,
                role,
                writer: Arc::clone(&writer),
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
            framing,
            writer,
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
        if !self.lock_pending().insert(id, tx) {
            return Err(RpcError::Closed);
        }
        let message = self.framing.request(id, method, params);
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
        self.send(self.framing.notification(method, params)).await
    }

    /// Answers a request of the other side.
    pub async fn respond(&self, id: Value, result: Value) -> Result<(), RpcError> {
        self.send(self.framing.answer(id, result)).await
    }

    /// Answers a request of the other side with an error.
    pub async fn respond_error(&self, id: Value, code: i64, message: &str) -> Result<(), RpcError> {
        self.send(self.framing.error_answer(id, code, message))
            .await
    }

    /// Lines that reached neither a waiting request nor the inbox so far: not JSON messages,
    /// answers to nothing, too long, read while quiet or opening, or (a server's) refused and
    /// of methods it does not serve.
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Requests waiting for an answer.
    pub fn pending_count(&self) -> usize {
        self.lock_pending().len()
    }

    async fn send(&self, message: Value) -> Result<(), RpcError> {
        write_line(&self.writer, &message).await
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Waiting> {
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

/// Writes `message` as one line and flushes it.
async fn write_line(writer: &Writer, message: &Value) -> Result<(), RpcError> {
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await.map_err(RpcError::Write)?;
    writer.flush().await.map_err(RpcError::Write)
}

/// What the reader shares with the peer.
struct Reading {
    framing: &'static dyn Framing,
    role: Role,
    writer: Writer,
    pending: Pending,
    dropped: Arc<AtomicUsize>,
    listening: Arc<Listening>,
    max_line: usize,
}

/// Reads the other side's lines until its output ends (or it floods while quiet); then fails
/// every pending request.
async fn read_loop<R: AsyncRead + Unpin>(
    mut lines: LineReader<R>,
    reading: Reading,
    incoming: mpsc::Sender<(u64, Incoming)>,
) {
    let Reading {
        framing,
        role,
        writer,
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
        let turn = listening.turn.load(Ordering::SeqCst);
        let routed = match line {
            // Too long to read, so its id is unknown too.
            None => role.refuse(Value::Null, Refusal::InvalidRequest),
            Some(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Some(line) => match serde_json::from_slice::<Value>(&line) {
                Ok(message) => route(framing.classify(message), &role, &pending),
                Err(_) => role.refuse(Value::Null, Refusal::Parse),
            },
        };
        let delivered = match routed {
            Routed::Answered => true,
            // Opening a session: what it replays is not the turn's.
            Routed::Started(_) if listening.opening.load(Ordering::SeqCst) => false,
            // A full inbox waits here: the peer's pipe fills and it blocks.
            Routed::Started(message) => incoming.send((turn, message)).await.is_ok(),
            Routed::Refused { id, refusal } => {
                let answer = framing.error_answer(id, refusal.code(), refusal.text());
                // A client that stopped reading is gone: its output ends, and so does this loop.
                let _ = write_line(&writer, &answer).await;
                false
            }
            Routed::Dropped => false,
        };
        if !delivered {
            dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                dropped = dropped.load(Ordering::Relaxed),
                "a peer's line reached neither a request nor the inbox"
            );
        }
    }
    // Dropping the senders fails each waiting request with `Closed`, and a later one is
    // refused.
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .close();
}

/// Routes one message as `framing` classified it: an answer to its waiting request, or what
/// the role makes of the rest.
fn route(frame: Frame, role: &Role, pending: &Pending) -> Routed {
    let (id, answer) = match frame {
        Frame::Answer { id, result } => (id, Ok(result)),
        Frame::ErrorAnswer { id, code, message } => (id, Err(RpcError::Remote { code, message })),
        Frame::Incoming(message) => return role.admit(message),
        Frame::Invalid { id } => {
            return role.refuse(id.unwrap_or(Value::Null), Refusal::InvalidRequest);
        }
    };
    // An answer is never answered, whatever the role: it names no request of ours, or a late one.
    let waiter = id.and_then(|id| {
        pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id)
    });
    match waiter {
        Some(waiter) => {
            let _ = waiter.send(answer);
            Routed::Answered
        }
        None => Routed::Dropped,
    }
}
