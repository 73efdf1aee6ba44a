//! [`ControlProtocol`]: the framing of Claude Code's and CodeBuddy's `--input-format
//! stream-json` stdio, as the resident peer (`driver_process::peer`) writes and reads it.
//! Requests both ways are `{"type":"control_request","request_id","request":{"subtype",…}}`
//! (the subtype is the method, the rest of `request` its params), answers
//! `{"type":"control_response","response":{"subtype":"success"|"error","request_id",…}}`;
//! every other line is an event whose kind (the notification's method) is its `type`, and a
//! notification is written as its params alone (a `user` message). It sits beside the only
//! dialect that speaks it; the peer knows only JSON-RPC itself.

use driver_process::peer::{Frame, Framing, Incoming, RemoteText};
use serde_json::{Map, Value, json};

/// The stream-json control protocol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ControlProtocol;

impl Framing for ControlProtocol {
    /// The params' members beside the subtype; params that are no object are left out.
    fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let mut request = match params {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        request.insert("subtype".into(), Value::from(method));
        json!({"type": "control_request", "request_id": id.to_string(), "request": request})
    }

    fn notification(&self, _method: &str, params: Value) -> Value {
        params
    }

    fn answer(&self, id: Value, result: Value) -> Value {
        json!({"type": "control_response", "response": {
            "subtype": "success", "request_id": id, "response": result}})
    }

    /// The protocol's error answer has no code: only the message is written.
    fn error_answer(&self, id: Value, _code: i64, message: &str) -> Value {
        json!({"type": "control_response", "response": {
            "subtype": "error", "request_id": id, "error": message}})
    }

    fn classify(&self, message: Value) -> Frame {
        let Value::Object(mut message) = message else {
            return Frame::Invalid { id: None };
        };
        let kind = match message.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Frame::Invalid { id: None },
        };
        match kind.as_str() {
            "control_request" => {
                let id = message.remove("request_id").unwrap_or(Value::Null);
                let params = message.remove("request").unwrap_or(Value::Null);
                let Some(method) = params.get("subtype").and_then(Value::as_str) else {
                    return Frame::Invalid { id: Some(id) };
                };
                let method = method.to_owned();
                Frame::Incoming(Incoming::Request { id, method, params })
            }
            "control_response" => answer(message.remove("response")),
            _ => Frame::Incoming(Incoming::Notification {
                method: kind,
                params: Value::Object(message),
            }),
        }
    }
}

/// A `control_response`'s `response`: its `request_id` is the string of an id this side wrote;
/// one without a readable id answers nothing.
fn answer(response: Option<Value>) -> Frame {
    let Some(Value::Object(mut response)) = response else {
        return Frame::Answer {
            id: None,
            result: Value::Null,
        };
    };
    let id = response
        .get("request_id")
        .and_then(Value::as_str)
        .and_then(|id| id.parse::<u64>().ok());
    match response.get("subtype").and_then(Value::as_str) {
        Some("success") => Frame::Answer {
            id,
            result: response.remove("response").unwrap_or(Value::Null),
        },
        _ => Frame::ErrorAnswer {
            id,
            code: 0,
            message: RemoteText(
                response
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
        },
    }
}

#[cfg(test)]
mod tests;
