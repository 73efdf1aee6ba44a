//! The two roles of the peer, as the read loop sees them: a client delivers whatever the other
//! side starts and drops what it cannot read; a server delivers only requests and notifications
//! of its own methods and answers what it cannot take with the fixed JSON-RPC errors.

use std::collections::HashSet;

use serde_json::Value;

use super::Incoming;

/// Which side of the conversation the peer is.
pub(super) enum Role {
    /// The driver's side of a resident process: everything the process starts is delivered.
    Client,
    /// A process serving these methods on its stdin.
    Server(HashSet<String>),
}

/// Why a server refuses a line: a JSON-RPC error whose message is the specification's fixed
/// text, never anything of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The line is not JSON.
    Parse,
    /// JSON, but no valid message (a batch, a missing method, an id or params of a wrong
    /// type), or a line too long to read.
    InvalidRequest,
    /// A request of a method the server does not serve.
    MethodNotFound,
}

impl Refusal {
    /// The JSON-RPC error code.
    pub(super) fn code(self) -> i64 {
        match self {
            Self::Parse => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
        }
    }

    /// The JSON-RPC error message.
    pub(super) fn text(self) -> &'static str {
        match self {
            Self::Parse => "Parse error",
            Self::InvalidRequest => "Invalid Request",
            Self::MethodNotFound => "Method not found",
        }
    }
}

/// What becomes of one line the other side wrote.
pub(super) enum Routed {
    /// An answer, handed to its waiting request.
    Answered,
    /// A message the other side started, for the inbox.
    Started(Incoming),
    /// Refused: a server answers `id` with the error; nothing reaches the inbox.
    Refused {
        /// The id the error answer names (`null` when none could be read).
        id: Value,
        /// Why.
        refusal: Refusal,
    },
    /// Neither: dropped and counted.
    Dropped,
}

impl Role {
    /// What becomes of a message the other side started.
    pub(super) fn admit(&self, message: Incoming) -> Routed {
        let Self::Server(methods) = self else {
            return Routed::Started(message);
        };
        match message {
            Incoming::Request { ref method, .. } | Incoming::Notification { ref method, .. }
                if methods.contains(method) =>
            {
                Routed::Started(message)
            }
            Incoming::Request { id, .. } => Routed::Refused {
                id,
                refusal: Refusal::MethodNotFound,
            },
            // JSON-RPC forbids answering a notification: an unknown one is only counted.
            Incoming::Notification { .. } => Routed::Dropped,
        }
    }

    /// What becomes of a line that is no message: a server answers it with `refusal`, a client
    /// drops it.
    pub(super) fn refuse(&self, id: Value, refusal: Refusal) -> Routed {
        match self {
            Self::Client => Routed::Dropped,
            Self::Server(_) => Routed::Refused { id, refusal },
        }
    }
}
