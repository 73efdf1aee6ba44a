//! Two-way transcript replay: a recorded JSON-RPC session of a resident protocol (what the
//! client sent, what the server answered and started), replayed with this side as the server,
//! by method and id rather than by line order.
//!
//! A transcript ([`RpcTranscript`]) is JSONL, one message per line, each wrapped in the side
//! that sent it: `{"client": {...}}` or `{"server": {...}}`. Every server message belongs to the
//! client message before it (its trigger; the ones before any client message to the start),
//! and [`RpcReplay`] sends a trigger's messages, in recorded order, when the client sends a
//! message that matches the trigger:
//!
//! - a client **request** matches the first unreplayed recorded request of the same method
//!   whose params match; the recorded answers to it go out under the client's actual id, since
//!   ids differ between runs;
//! - a client **notification** matches the first unreplayed recorded notification of the same
//!   method whose params match;
//! - a client **response** matches, by id, the recorded response to a request the replay has
//!   sent (a server request goes out under its recorded id), and its result or error must
//!   match the recorded one.
//!
//! Params match when they are equal, except that a recorded string `"${ANY}"` matches any
//! value at its place (a path, a message text that differs between runs). A client message
//! that matches nothing is an [`RpcMismatch`] naming its method; [`RpcReplay::finish`] names
//! the recorded client messages that never came.
//!
//! [`RpcReplayServer`] serves replays to a real driver: over a Unix socket that the scripted
//! fake CLI relays its stdio to ([`Scenario::relay`](fake_cli::Scenario::relay)), so the driver
//! spawns a process and runs its resident loop for real.

mod server;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

pub use server::RpcReplayServer;

/// The recorded string that matches any value.
pub const ANY: &str = "${ANY}";

/// A two-way JSON-RPC transcript: the messages of one session, in recorded order, each with the
/// side that sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcTranscript {
    /// The server messages before any client message.
    start: Vec<Value>,
    /// Each client message with the server messages it triggered.
    steps: Vec<Step>,
}

/// One recorded client message and the server messages that followed it.
#[derive(Debug, Clone, PartialEq)]
struct Step {
    client: Message,
    server: Vec<Value>,
}

/// A client message, by kind.
#[derive(Debug, Clone, PartialEq)]
enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        outcome: Value,
    },
}

impl Message {
    /// The message's kind, or `None` when it is no JSON-RPC message.
    fn of(value: &Value) -> Option<Self> {
        let object = value.as_object()?;
        let params = || object.get("params").cloned().unwrap_or(Value::Null);
        match (
            object.get("method").and_then(Value::as_str),
            object.get("id"),
        ) {
            (Some(method), Some(id)) => Some(Self::Request {
                id: id.clone(),
                method: method.to_owned(),
                params: params(),
            }),
            (Some(method), None) => Some(Self::Notification {
                method: method.to_owned(),
                params: params(),
            }),
            (None, Some(id)) => Some(Self::Response {
                id: id.clone(),
                outcome: outcome(value)?,
            }),
            (None, None) => None,
        }
    }

    /// The method of a request or a notification.
    fn method(&self) -> Option<&str> {
        match self {
            Self::Request { method, .. } | Self::Notification { method, .. } => Some(method),
            Self::Response { .. } => None,
        }
    }

    /// What must match: a request's or notification's params, a response's outcome.
    fn payload(&self) -> &Value {
        match self {
            Self::Request { params, .. } | Self::Notification { params, .. } => params,
            Self::Response { outcome, .. } => outcome,
        }
    }

    /// Whether `other` is the same kind of message as this recorded one, of the same method
    /// (a response: to the same id), whatever its payload.
    fn same_slot(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Request { method: a, .. }, Self::Request { method: b, .. })
            | (Self::Notification { method: a, .. }, Self::Notification { method: b, .. }) => {
                a == b
            }
            (Self::Response { id: a, .. }, Self::Response { id: b, .. }) => a == b,
            _ => false,
        }
    }

    /// How a message is named in a mismatch.
    fn describe(&self) -> String {
        match self {
            Self::Request { id, method, .. } => format!("`{method}` request (id {id})"),
            Self::Notification { method, .. } => format!("`{method}` notification"),
            Self::Response { id, .. } => format!("response to id {id}"),
        }
    }
}

/// A response's result or error, as one value: `{"result": …}` or `{"error": …}`.
fn outcome(value: &Value) -> Option<Value> {
    ["result", "error"].into_iter().find_map(|key| {
        let inner = value.get(key)?;
        Some(Value::Object(
            [(key.to_owned(), inner.clone())].into_iter().collect(),
        ))
    })
}

/// Why a text is no two-way transcript.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct RpcTranscriptError {
    /// The offending line, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl RpcTranscript {
    /// Parses a transcript: one `{"client": message}` or `{"server": message}` per line, blank
    /// lines skipped.
    ///
    /// # Errors
    /// A line that is not JSON, not wrapped in exactly one side, or whose client message is no
    /// JSON-RPC request, notification or response.
    pub fn parse(text: &str) -> Result<Self, RpcTranscriptError> {
        let mut transcript = Self {
            start: Vec::new(),
            steps: Vec::new(),
        };
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let error = |reason: &str| RpcTranscriptError {
                line: index + 1,
                reason: reason.to_owned(),
            };
            let value: Value = serde_json::from_str(line).map_err(|_| error("not JSON"))?;
            let side = value
                .as_object()
                .filter(|o| o.len() == 1)
                .and_then(|o| o.iter().next())
                .ok_or_else(|| error("not one `client` or `server` message"))?;
            match side {
                (name, message) if name == "client" => {
                    let client = Message::of(message)
                        .ok_or_else(|| error("the client message is not JSON-RPC"))?;
                    transcript.steps.push(Step {
                        client,
                        server: Vec::new(),
                    });
                }
                (name, message) if name == "server" => match transcript.steps.last_mut() {
                    Some(step) => step.server.push(message.clone()),
                    None => transcript.start.push(message.clone()),
                },
                _ => return Err(error("not one `client` or `server` message")),
            }
        }
        Ok(transcript)
    }

    /// Reads and parses the transcript at `path`.
    ///
    /// # Panics
    /// When the file cannot be read or is no transcript: a fixture must be one.
    pub fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Self::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// A client message the transcript has no match for, or recorded client messages that never
/// came: what a failed replay says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RpcMismatch {
    method: Option<String>,
    message: String,
}

impl RpcMismatch {
    /// The method of the client's request or notification, or of the server request a
    /// response answered, when there is one.
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }
}

/// One replay of a [`RpcTranscript`], with this side as the server: feed it what the client
/// sends ([`receive`](Self::receive)), send the client what it returns.
#[derive(Debug)]
pub struct RpcReplay {
    transcript: RpcTranscript,
    replayed: Vec<bool>,
    /// Recorded client request ids, to the ids the client actually used.
    ids: HashMap<String, Value>,
    /// Server requests sent, by id, to their method.
    asked: HashMap<String, String>,
}

impl RpcReplay {
    /// A replay of `transcript` from its start.
    pub fn new(transcript: &RpcTranscript) -> Self {
        Self {
            replayed: vec![false; transcript.steps.len()],
            transcript: transcript.clone(),
            ids: HashMap::new(),
            asked: HashMap::new(),
        }
    }

    /// The server messages recorded before any client message, to send when the client
    /// connects.
    pub fn start(&mut self) -> Vec<Value> {
        let start = self.transcript.start.clone();
        self.send(start)
    }

    /// Takes one message of the client; returns the server messages to send it, in order.
    ///
    /// # Errors
    /// An [`RpcMismatch`] naming the message's method when the transcript has no unreplayed
    /// match for it; nothing is replayed then.
    pub fn receive(&mut self, message: &Value) -> Result<Vec<Value>, RpcMismatch> {
        let Some(sent) = Message::of(message) else {
            return Err(RpcMismatch {
                method: None,
                message: format!("the client sent no JSON-RPC message: {message}"),
            });
        };
        let step = self.matching(&sent)?;
        self.replayed[step] = true;
        if let Message::Response { id, .. } = &sent {
            // Answered: a second answer to the same id matches nothing.
            self.asked.remove(&id.to_string());
        }
        if let (Message::Request { id: recorded, .. }, Message::Request { id: actual, .. }) =
            (&self.transcript.steps[step].client, &sent)
        {
            self.ids.insert(recorded.to_string(), actual.clone());
        }
        let server = self.transcript.steps[step].server.clone();
        Ok(self.send(server))
    }

    /// Whether every recorded client message came.
    ///
    /// # Errors
    /// An [`RpcMismatch`] naming each recorded client message that never came.
    pub fn finish(&self) -> Result<(), RpcMismatch> {
        let missing: Vec<String> = self
            .unreplayed()
            .map(|(_, step)| format!("a {}", step.client.describe()))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let method = self
            .unreplayed()
            .find_map(|(_, step)| step.client.method().map(str::to_owned));
        Err(RpcMismatch {
            method,
            message: format!(
                "the client never sent what the transcript recorded: {}",
                missing.join(", ")
            ),
        })
    }

    fn unreplayed(&self) -> impl Iterator<Item = (usize, &Step)> {
        self.transcript
            .steps
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.replayed[*i])
    }

    /// The first unreplayed step whose client message matches `sent`: a message of the same
    /// kind and method (a response: to the same server request) with matching params (a
    /// response: a matching result or error).
    fn matching(&self, sent: &Message) -> Result<usize, RpcMismatch> {
        let mut name = sent.describe();
        let mut method = sent.method().map(str::to_owned);
        if let Message::Response { id, .. } = sent {
            let Some(asked) = self.asked.get(&id.to_string()) else {
                return Err(RpcMismatch {
                    method: None,
                    message: format!(
                        "the client sent a response to id {id}, which the replayed server did not ask (or was answered already)"
                    ),
                });
            };
            name = format!("answer to the server's `{asked}` request (id {id})");
            method = Some(asked.clone());
        }
        let candidates: Vec<(usize, &Message)> = self
            .unreplayed()
            .map(|(i, step)| (i, &step.client))
            .filter(|(_, recorded)| recorded.same_slot(sent))
            .collect();
        if let Some((step, _)) = candidates
            .iter()
            .find(|(_, recorded)| matches(recorded.payload(), sent.payload()))
        {
            return Ok(*step);
        }
        let message = if candidates.is_empty() {
            format!(
                "the client sent a {name} that the transcript has no match for (sent {})",
                sent.payload()
            )
        } else {
            let recorded: Vec<String> = candidates
                .iter()
                .map(|(_, recorded)| recorded.payload().to_string())
                .collect();
            format!(
                "the client sent a {name} that matches no recorded one: sent {}, recorded {}",
                sent.payload(),
                recorded.join("; ")
            )
        };
        Err(RpcMismatch { method, message })
    }

    /// The server messages to send: a response to a client request under the client's id, a
    /// server request noted so the client's answer can be matched by its id.
    fn send(&mut self, messages: Vec<Value>) -> Vec<Value> {
        messages
            .into_iter()
            .map(|mut message| {
                let id = message.get("id").map(Value::to_string);
                let method = message.get("method").and_then(Value::as_str);
                match (id, method) {
                    (Some(id), Some(method)) => {
                        self.asked.insert(id, method.to_owned());
                    }
                    (Some(id), None) => {
                        if let (Some(actual), Some(object)) =
                            (self.ids.get(&id), message.as_object_mut())
                        {
                            object.insert("id".to_owned(), actual.clone());
                        }
                    }
                    _ => {}
                }
                message
            })
            .collect()
    }
}

/// Whether `actual` matches `recorded`: equal, but that a recorded [`ANY`] matches any value.
fn matches(recorded: &Value, actual: &Value) -> bool {
    match (recorded, actual) {
        (Value::String(s), _) if s == ANY => true,
        (Value::Array(r), Value::Array(a)) => {
            r.len() == a.len() && r.iter().zip(a).all(|(r, a)| matches(r, a))
        }
        (Value::Object(r), Value::Object(a)) => {
            r.len() == a.len()
                && r.iter()
                    .all(|(key, r)| a.get(key).is_some_and(|a| matches(r, a)))
        }
        _ => recorded == actual,
    }
}
