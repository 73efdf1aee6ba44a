//! Every line the fake `cursor-agent` prints, in one place, so that a real transcript can
//! replace them later.
//!
//! The Cursor CLI is not installable from any registry this project reaches, so these are
//! not recorded: they follow Cursor's documented stream-json format,
//! <https://cursor.com/docs/cli/reference/output-format.md> (event types `system`/`init`,
//! `user`, `assistant`, `tool_call` `started`/`completed`, `result`), field for field. Where
//! the docs are silent the fixture says so and names its source. The strings are fake-cli
//! templates: `${NEW_UUID}`, `${ARG_AFTER:<flag>}` and `${STDIN}` are filled in per
//! invocation.

/// `--version` of the build third-party parsers captured (agent `2026.08.11-e8db854`).
pub(crate) const VERSION: &str = "2026.08.11-e8db854";

/// The chat id of a new chat.
pub(crate) const NEW_CHAT: &str = "${NEW_UUID}";

/// The chat id of a resumed chat (Cursor keeps it across `--resume`).
pub(crate) const RESUMED_CHAT: &str = "${ARG_AFTER:--resume}";

/// `system`/`init` (documented: `apiKeySource`, `cwd`, `session_id`, `model`,
/// `permissionMode`).
pub(crate) fn init(chat: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"init","apiKeySource":"env","cwd":"${{ARG_AFTER:--workspace}}","session_id":"{chat}","model":"Claude 4 Sonnet","permissionMode":"default"}}"#
    )
}

/// `user`: the prompt echoed back (documented).
pub(crate) fn user(chat: &str) -> String {
    format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"text","text":"${{STDIN}}"}}]}},"session_id":"{chat}"}}"#
    )
}

/// `assistant`: one complete assistant message (documented; without
/// `--stream-partial-output` there is one line per message between tool calls).
pub(crate) fn assistant(chat: &str, text: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"session_id":"{chat}"}}"#
    )
}

/// `tool_call`/`started` of the documented `readToolCall`.
pub(crate) fn read_started(chat: &str, call_id: &str) -> String {
    format!(
        r#"{{"type":"tool_call","subtype":"started","call_id":"{call_id}","tool_call":{{"readToolCall":{{"args":{{"path":"sales.csv"}}}}}},"session_id":"{chat}"}}"#
    )
}

/// `tool_call`/`completed` of the documented `readToolCall` (the success payload as the docs
/// show it).
pub(crate) fn read_completed(chat: &str, call_id: &str) -> String {
    format!(
        r#"{{"type":"tool_call","subtype":"completed","call_id":"{call_id}","tool_call":{{"readToolCall":{{"args":{{"path":"sales.csv"}},"result":{{"success":{{"content":"product,qty\nwidget,3\n","isEmpty":false,"exceededLimit":false,"totalLines":2,"totalChars":24}}}}}}}},"session_id":"{chat}"}}"#
    )
}

/// The args of an MCP tool call. Not in Cursor's docs: the `mcpToolCall` key and the
/// `providerIdentifier`/`toolName` fields follow third-party parsers of real transcripts
/// (for example `ZhengyiLuo/AgentsServer`, `tests/test_cursor_agent_client.py`). Unverified.
fn mcp_args(server: &str, tool: &str) -> String {
    format!(
        r#"{{"name":"{server}-{tool}","args":{{"text":"one"}},"toolCallId":"call-mcp-1","providerIdentifier":"{server}","toolName":"{tool}"}}"#
    )
}

/// `tool_call`/`started` of an MCP tool (see [`mcp_args`]).
pub(crate) fn mcp_started(chat: &str, call_id: &str, server: &str, tool: &str) -> String {
    let args = mcp_args(server, tool);
    format!(
        r#"{{"type":"tool_call","subtype":"started","call_id":"{call_id}","tool_call":{{"mcpToolCall":{{"args":{args}}}}},"session_id":"{chat}"}}"#
    )
}

/// `tool_call`/`completed` of an MCP tool: the MCP result's content blocks under `success`
/// (unverified, see [`mcp_args`]).
pub(crate) fn mcp_completed(chat: &str, call_id: &str, server: &str, tool: &str) -> String {
    let args = mcp_args(server, tool);
    format!(
        r#"{{"type":"tool_call","subtype":"completed","call_id":"{call_id}","tool_call":{{"mcpToolCall":{{"args":{args},"result":{{"success":{{"content":[{{"text":{{"text":"pong"}}}}],"isError":false}}}}}}}},"session_id":"{chat}"}}"#
    )
}

/// The terminal `result` (documented: `subtype`, `is_error`, `duration_ms`,
/// `duration_api_ms`, `result`, `session_id`, `request_id`).
pub(crate) fn result(chat: &str, text: &str) -> String {
    format!(
        r#"{{"type":"result","subtype":"success","duration_ms":1234,"duration_api_ms":1234,"is_error":false,"result":"{text}","session_id":"{chat}","request_id":"10e11780-df2f-45dc-a1ff-4540af32e9c0"}}"#
    )
}

/// A failed terminal `result`. Not documented (the docs say a failed run exits non-zero
/// with a message on stderr); the `error` subtype with `is_error: true` is what third-party
/// parsers accept.
pub(crate) fn error_result(chat: &str, text: &str) -> String {
    format!(
        r#"{{"type":"result","subtype":"error","duration_ms":10,"duration_api_ms":10,"is_error":true,"result":"{text}","session_id":"{chat}"}}"#
    )
}

/// What the fake prints on stderr (then exits 1) for `--resume` with a chat it does not
/// know. An assumption: Cursor documents no message for this case, only that failures exit
/// non-zero with a message on stderr. The driver matches "chat not found" and kin.
pub(crate) fn unknown_chat_stderr() -> &'static str {
    "Error: Chat not found: ${ARG_AFTER:--resume}"
}

/// What the fake prints for `create-chat`: the new chat's id on its own line (Cursor's docs
/// say the command prints a new chat id; the exact format is unverified).
pub(crate) fn created_chat() -> &'static str {
    "${NEW_UUID}"
}
