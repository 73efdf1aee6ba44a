//! How the peer's messages look on the wire: the [`Framing`] trait (how a request, a
//! notification, an answer and an error answer are written, and what one line read is), and
//! [`JsonRpc`], the JSON-RPC 2.0 framing most resident processes speak. Another framing (the
//! stream-json control protocol of Claude Code and CodeBuddy) lives beside the dialect that
//! speaks it.

use serde_json::{Map, Value, json};

use super::{Incoming, RemoteText};

/// How one protocol frames the peer's messages, one JSON value per line. It knows the shape
/// of a message, never a method: what a method means belongs to the dialect.
///
/// A framing is stateless and shared (`&'static`): the peer asks it to write each message it
/// sends and to [`classify`](Self::classify) each line it reads.
pub trait Framing: Send + Sync {
    /// A request `method` with `params`, whose answer will name `id`.
    fn request(&self, id: u64, method: &str, params: Value) -> Value;

    /// A notification `method` with `params`: never answered.
    fn notification(&self, method: &str, params: Value) -> Value;

    /// The answer `result` to the other side's request `id`.
    fn answer(&self, id: Value, result: Value) -> Value;

    /// The error answer (`code`, `message`) to the other side's request `id` (`null` when its
    /// id could not be read).
    fn error_answer(&self, id: Value, code: i64, message: &str) -> Value;

    /// What one JSON value read from the other side is.
    fn classify(&self, message: Value) -> Frame;
}

/// What one line read from the other side is, as its [`Framing`] reads it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Frame {
    /// The answer to this side's request `id`; `None` when it names no id this side could
    /// have sent (it is dropped, never answered).
    Answer {
        /// The request's id.
        id: Option<u64>,
        /// The result.
        result: Value,
    },
    /// An error answer to this side's request `id` (`None` as for [`Answer`](Self::Answer)).
    ErrorAnswer {
        /// The request's id.
        id: Option<u64>,
        /// The error code (`0` when the framing has none).
        code: i64,
        /// The other side's message, kept for classification only.
        message: RemoteText,
    },
    /// A request or a notification the other side started.
    Incoming(Incoming),
    /// Not a message of this framing (a client drops it; a server answers it as an invalid
    /// request), with the request's id when one could be read.
    Invalid {
        /// The id, when the message had a readable one.
        id: Option<Value>,
    },
}

/// JSON-RPC 2.0: `{"jsonrpc":"2.0","id","method","params"}` requests, `{"id","result"}` and
/// `{"id","error":{"code","message"}}` answers, notifications without an id. It writes
/// `"jsonrpc":"2.0"` and reads messages with or without it (Codex's app-server omits it).
///
/// A request's id is a number, a string or `null`, and its params an object or an array when
/// present; anything else, like a batch (an array of messages, which this framing does not
/// support), is [`Frame::Invalid`].
///
/// ```
/// use driver_process::peer::{Frame, Framing, Incoming, JsonRpc};
/// use serde_json::json;
///
/// assert_eq!(
///     JsonRpc.request(7, "initialize", json!({})),
///     json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}})
/// );
/// let Frame::Incoming(Incoming::Request { id, method, .. }) =
///     JsonRpc.classify(json!({"id": "a", "method": "work/run"}))
/// else {
///     panic!("a request");
/// };
/// assert_eq!((id, method.as_str()), (json!("a"), "work/run"));
/// assert!(matches!(JsonRpc.classify(json!([])), Frame::Invalid { id: None }));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonRpc;

impl Framing for JsonRpc {
    fn request(&self, id: u64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn notification(&self, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    fn answer(&self, id: Value, result: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    fn error_answer(&self, id: Value, code: i64, message: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
    }

    fn classify(&self, message: Value) -> Frame {
        let Value::Object(mut message) = message else {
            return Frame::Invalid { id: None };
        };
        let id = message.remove("id");
        let method = match message.remove("method") {
            Some(Value::String(method)) => method,
            Some(_) => {
                return Frame::Invalid {
                    id: id.filter(is_id),
                };
            }
            None => return answer(id, message),
        };
        let params = match message.remove("params") {
            None => Value::Null,
            Some(params @ (Value::Null | Value::Object(_) | Value::Array(_))) => params,
            Some(_) => {
                return Frame::Invalid {
                    id: id.filter(is_id),
                };
            }
        };
        match id {
            None => Frame::Incoming(Incoming::Notification { method, params }),
            Some(id) if is_id(&id) => Frame::Incoming(Incoming::Request { id, method, params }),
            Some(_) => Frame::Invalid { id: None },
        }
    }
}

/// Whether `id` may name a JSON-RPC request: a number, a string or `null`.
fn is_id(id: &Value) -> bool {
    matches!(id, Value::Number(_) | Value::String(_) | Value::Null)
}

/// A message without a method: an answer to `id` (with neither result nor error, an empty
/// one), or, without an id, nothing.
fn answer(id: Option<Value>, mut message: Map<String, Value>) -> Frame {
    let Some(id) = id else {
        return Frame::Invalid { id: None };
    };
    // Only ids this side wrote (numbers) can match; any other is an answer to nothing.
    let id = id.as_u64();
    match (message.remove("result"), message.remove("error")) {
        (_, Some(error)) => Frame::ErrorAnswer {
            id,
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: RemoteText(remote_text(&error)),
        },
        (result, None) => Frame::Answer {
            id,
            result: result.unwrap_or(Value::Null),
        },
    }
}

/// The text of a JSON-RPC error object for classification: its `message`, then its `data`
/// (where agents put the reason: Gemini's ACP mode answers `Internal error` with the cause
/// only in `data.details`), each on a line of its own.
fn remote_text(error: &Value) -> String {
    let mut text = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match error.get("data") {
        None | Some(Value::Null) => {}
        Some(Value::String(data)) => {
            text.push('\n');
            text.push_str(data);
        }
        Some(data) => {
            text.push('\n');
            text.push_str(&data.to_string());
        }
    }
    text
}
