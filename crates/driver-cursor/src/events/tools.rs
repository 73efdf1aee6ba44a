//! Cursor's `tool_call` payloads: which tool ran, with which arguments, and what came back.
//!
//! The documented shapes (<https://cursor.com/docs/cli/reference/output-format.md>) are one
//! `"<kind>ToolCall": {"args": …, "result": …}` key (`readToolCall`, `writeToolCall`, …) or
//! a generic `"function": {"name", "arguments"}`. Results are one-key outcomes such as
//! `{"success": …}` or `{"rejected": …}` (third-party parsers of real transcripts list the
//! others). MCP calls appear as `mcpToolCall` whose args name the server
//! (`providerIdentifier`) and the tool (`toolName`); that detail is not in Cursor's docs and is
//! unverified here.

use driver_cli::{MalformedEvent, ToolNames, json_text, str_field};
use serde_json::Value;

/// Outcome keys that are not failures. Anything else (`rejected`, `error`, `failure`,
/// `permissionDenied`, `timeout`, …) is reported as an error result.
const OK_OUTCOMES: &[&str] = &["success", "complete", "registered", "approved", "async"];

/// One tool call as the driver reports it.
#[derive(Debug)]
pub(crate) struct ToolCall<'v> {
    /// The tool's name: `mcp__<declared server>__<tool>` for MCP tools, the kind for Cursor's
    /// own (`read`, `shell`, `glob`, …), or the function name.
    pub(crate) name: String,
    /// The arguments as JSON text (empty when there are none).
    pub(crate) arguments: String,
    /// The raw outcome, on `completed` events.
    pub(crate) result: Option<&'v Value>,
}

/// Parses a `tool_call` payload.
///
/// # Errors
/// [`MalformedEvent`] when it is not a non-empty object, or a `function` has no name.
pub(crate) fn parse<'v>(
    payload: &'v Value,
    names: &ToolNames,
) -> Result<ToolCall<'v>, MalformedEvent> {
    let map = payload.as_object().ok_or(MalformedEvent)?;
    if let Some(function) = map.get("function") {
        let name = str_field(function, "name")?;
        return Ok(ToolCall {
            name: names.report(name),
            arguments: json_text(function.get("arguments")),
            result: map.get("result"),
        });
    }
    let (key, body) = map
        .iter()
        .find(|(k, v)| k.ends_with("ToolCall") && v.is_object())
        .or_else(|| map.iter().next())
        .ok_or(MalformedEvent)?;
    let kind = key.strip_suffix("ToolCall").unwrap_or(key);
    let kind = if kind.is_empty() { "tool" } else { kind };
    let args = body.get("args");
    let result = body.get("result");
    if kind != "mcp" {
        return Ok(ToolCall {
            name: kind.to_owned(),
            arguments: json_text(args),
            result,
        });
    }
    let field = |k: &str| args.and_then(|a| a.get(k)).and_then(Value::as_str);
    let name = match (
        field("providerIdentifier"),
        field("toolName"),
        field("name"),
    ) {
        (Some(server), Some(tool), _) => names.report(&format!("mcp__{server}__{tool}")),
        (_, _, Some(name)) => names.report(name),
        _ => "mcp".to_owned(),
    };
    // The tool's own arguments sit under `args.args`; the rest names the call.
    let arguments = match args.and_then(|a| a.get("args")) {
        Some(inner) => json_text(Some(inner)),
        None => json_text(args),
    };
    Ok(ToolCall {
        name,
        arguments,
        result,
    })
}

/// The output text of a tool result and whether it is an error.
pub(crate) fn outcome(result: Option<&Value>) -> (String, bool) {
    let Some(result) = result.filter(|r| !r.is_null()) else {
        return (String::new(), false);
    };
    let Some((key, value)) = result.as_object().and_then(|m| m.iter().next()) else {
        return (json_text(Some(result)), false);
    };
    let ok = OK_OUTCOMES.contains(&key.as_str()) || key.ends_with("Success");
    let failed_inside = value.get("isError").and_then(Value::as_bool) == Some(true)
        || value
            .get("exitCode")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0);
    (outcome_text(value), !ok || failed_inside)
}

/// Readable text of an outcome's value: MCP content texts, a shell's output, a reason, else
/// the JSON.
fn outcome_text(value: &Value) -> String {
    if let Value::String(s) = value {
        return s.clone();
    }
    if let Some(blocks) = value.get("content").and_then(Value::as_array) {
        let texts: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b.get("text") {
                Some(Value::String(s)) => Some(s.as_str()),
                Some(inner) => inner.get("text").and_then(Value::as_str),
                None => None,
            })
            .collect();
        if !texts.is_empty() {
            return texts.join("\n");
        }
    }
    if let Some(stdout) = value.get("stdout").and_then(Value::as_str) {
        let stderr = value.get("stderr").and_then(Value::as_str).unwrap_or("");
        return if stderr.is_empty() {
            stdout.to_owned()
        } else {
            format!("{stdout}\n{stderr}")
        };
    }
    for key in ["reason", "error", "message"] {
        if let Some(text) = value
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            return text.to_owned();
        }
    }
    value.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> ToolNames {
        ToolNames::new(["agent-ui"])
    }

    #[test]
    fn builtin_function_and_mcp_names() {
        let read = json!({"readToolCall": {"args": {"path": "a.txt"}}});
        let call = parse(&read, &names()).unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("read", r#"{"path":"a.txt"}"#)
        );
        assert!(call.result.is_none());

        let function =
            json!({"function": {"name": "mcp__agent_ui__ping", "arguments": "{\"n\":1}"}});
        let call = parse(&function, &names()).unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("mcp__agent-ui__ping", "{\"n\":1}")
        );

        let mcp = json!({"mcpToolCall": {"args": {"name": "agent-ui-ping", "args": {"text": "hi"},
            "providerIdentifier": "agent-ui", "toolName": "ping"}}});
        let call = parse(&mcp, &names()).unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("mcp__agent-ui__ping", r#"{"text":"hi"}"#)
        );

        let unknown = json!({"somethingNew": {"args": {"x": 1}}});
        assert_eq!(parse(&unknown, &names()).unwrap().name, "somethingNew");
        for bad in [
            json!({}),
            json!([1]),
            json!({"function": {"arguments": "{}"}}),
        ] {
            assert_eq!(parse(&bad, &names()).unwrap_err(), MalformedEvent, "{bad}");
        }
    }

    #[test]
    fn outcomes() {
        let cases = [
            (
                json!({"success": {"content": [{"text": {"text": "pong"}}], "isError": false}}),
                "pong",
                false,
            ),
            (
                json!({"success": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}),
                "a\nb",
                false,
            ),
            (
                json!({"success": {"content": [{"text": {"text": "boom"}}], "isError": true}}),
                "boom",
                true,
            ),
            (
                json!({"success": {"exitCode": 0, "stdout": "hi\n", "stderr": ""}}),
                "hi\n",
                false,
            ),
            (
                json!({"success": {"exitCode": 7, "stdout": "", "stderr": "bad"}}),
                "\nbad",
                true,
            ),
            (
                json!({"rejected": {"command": "rm -rf /", "reason": "not allowed"}}),
                "not allowed",
                true,
            ),
            (
                json!({"error": {"error": "read failed"}}),
                "read failed",
                true,
            ),
            (
                json!({"saveSuccess": {"path": "/tmp/x"}}),
                r#"{"path":"/tmp/x"}"#,
                false,
            ),
            (json!("plain"), "plain", false),
        ];
        for (result, text, is_error) in cases {
            assert_eq!(
                outcome(Some(&result)),
                (text.to_owned(), is_error),
                "{result}"
            );
        }
        assert_eq!(outcome(None), (String::new(), false));
        assert_eq!(outcome(Some(&Value::Null)), (String::new(), false));
    }
}
