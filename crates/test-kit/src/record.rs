//! What a mock server saw: every HTTP request, with helpers that read model requests.

use serde_json::Value;

/// The wire API a mock server speaks; it decides how [`RecordedRequest`]'s helpers read a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireApi {
    /// The OpenAI Responses API (`POST /v1/responses`, SSE), served by
    /// [`MockResponses`](crate::responses::MockResponses).
    OpenAiResponses,
    /// The Anthropic Messages API (`POST /v1/messages`, SSE), served by
    /// [`MockAnthropic`](crate::anthropic::MockAnthropic).
    AnthropicMessages,
    /// The OpenAI Chat Completions API (`POST …/chat/completions`, SSE), served by
    /// [`MockChat`](crate::chat::MockChat).
    OpenAiChat,
    /// The Gemini API (`POST …/models/<model>:streamGenerateContent`, SSE), served by
    /// [`MockGemini`](crate::gemini::MockGemini).
    GeminiGenerateContent,
}

/// The output a client sent back for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FunctionCallOutput {
    /// The id of the call this output answers.
    pub call_id: String,
    /// The output's text. Text parts of a structured output are joined with `\n`.
    pub output: String,
}

/// One HTTP request received by a mock server, in arrival order.
///
/// Every request is recorded, whatever its method or path, before it is answered. The helpers
/// interpret the JSON body according to the server's [`WireApi`]; they return empty results for
/// a request that is not a model request.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub(crate) wire_api: WireApi,
    pub(crate) index: usize,
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) raw_body: Vec<u8>,
    pub(crate) body: Value,
    pub(crate) model_request: bool,
}

impl RecordedRequest {
    /// The wire API of the server that recorded it.
    pub fn wire_api(&self) -> WireApi {
        self.wire_api
    }

    /// Zero-based arrival index among all requests of the server.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The HTTP method (`GET`, `POST`, …).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The path, with the query string if there was one (`/v1/responses`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// All headers as (lower-case name, value), in arrival order. Values that are not UTF-8 are
    /// converted lossily.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The credential the client sent: the `Authorization` value without its `Bearer ` prefix;
    /// for the Anthropic Messages API, when there is no bearer header, the `x-api-key` value
    /// (Claude Code sends `ANTHROPIC_API_KEY` there, `ANTHROPIC_AUTH_TOKEN` as a bearer); for
    /// the Gemini API the `x-goog-api-key` value (where the Gemini CLI sends `GEMINI_API_KEY`).
    /// `None` when neither is present.
    pub fn bearer(&self) -> Option<&str> {
        let bearer = self.header("authorization").and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        match self.wire_api {
            WireApi::AnthropicMessages => bearer.or_else(|| self.header("x-api-key")),
            WireApi::GeminiGenerateContent => bearer.or_else(|| self.header("x-goog-api-key")),
            _ => bearer,
        }
    }

    fn messages(&self) -> Vec<(String, String)> {
        match self.wire_api {
            WireApi::OpenAiResponses => crate::responses::input_messages(&self.body),
            WireApi::AnthropicMessages => crate::anthropic::input_messages(&self.body),
            WireApi::OpenAiChat => crate::chat::input_messages(&self.body),
            WireApi::GeminiGenerateContent => crate::gemini::input_messages(&self.body),
        }
    }

    /// The body bytes as received.
    pub fn raw_body(&self) -> &[u8] {
        &self.raw_body
    }

    /// The body parsed as JSON; [`Value::Null`] when it was empty or not JSON.
    pub fn body(&self) -> &Value {
        &self.body
    }

    /// True when this request consumed (or would have consumed) a [`Script`](crate::Script)
    /// step, i.e. it asked the model for an answer.
    pub fn is_model_request(&self) -> bool {
        self.model_request
    }

    /// The model name the request asked for (`model` in the body; for the Gemini API, which
    /// names it in the path, `<model>` of `…/models/<model>:<method>`).
    pub fn model(&self) -> Option<&str> {
        match self.wire_api {
            WireApi::GeminiGenerateContent => crate::gemini::path_model(&self.path),
            _ => self.body.get("model").and_then(Value::as_str),
        }
    }

    /// The texts of all user and assistant messages in the conversation sent, in order, one
    /// string per message (text parts concatenated). System and developer messages and tool
    /// outputs are left out; note that runtimes add user messages of their own (Codex sends an
    /// `<environment_context>` user message before the prompt).
    ///
    /// Per wire API: Responses `input` message items; Anthropic `messages[]` with a string
    /// content or `text` blocks (blocks that are a whole `<system-reminder>…</system-reminder>`,
    /// which Claude Code adds, are left out, and a message with no other text is skipped);
    /// Chat Completions `messages[]` (`role: tool` and assistant messages that only call tools
    /// left out; text parts that are a whole `<system-reminder …>` element are dropped too;
    /// CodeBuddy Code wraps the prompt as `<user_query>…</user_query>`, which is kept);
    /// Gemini `contents[]` (role `model` read as `assistant`) with their text parts, thoughts
    /// and the Gemini CLI's whole `<session_context>…</session_context>` parts left out, and
    /// contents made only of function calls or responses skipped.
    pub fn input_texts(&self) -> Vec<String> {
        self.messages()
            .into_iter()
            .filter(|(role, _)| role == "user" || role == "assistant")
            .map(|(_, text)| text)
            .collect()
    }

    /// The text of the last user message sent (normally the prompt of the turn).
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .into_iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, text)| text)
    }

    /// The tool outputs sent back to the model, in order: Responses `function_call_output`
    /// items, Anthropic `tool_result` blocks (`tool_use_id`), Chat Completions `role: tool`
    /// messages (`tool_call_id`), Gemini `functionResponse` parts (`id`, else `name`).
    pub fn function_call_outputs(&self) -> Vec<FunctionCallOutput> {
        match self.wire_api {
            WireApi::OpenAiResponses => crate::responses::function_call_outputs(&self.body),
            WireApi::AnthropicMessages => crate::anthropic::function_call_outputs(&self.body),
            WireApi::OpenAiChat => crate::chat::function_call_outputs(&self.body),
            WireApi::GeminiGenerateContent => crate::gemini::function_call_outputs(&self.body),
        }
    }

    /// True when the last conversation item sent is a tool output (the request continues a
    /// turn after a tool call). Handy as a [`Script::then_when`](crate::Script::then_when)
    /// predicate. For Anthropic: the last message is a user message holding a `tool_result`
    /// block; for Chat Completions: the last message has `role: tool`; for Gemini: the last
    /// content holds a `functionResponse` part.
    pub fn last_input_is_tool_output(&self) -> bool {
        match self.wire_api {
            WireApi::OpenAiResponses => crate::responses::last_input_is_tool_output(&self.body),
            WireApi::AnthropicMessages => crate::anthropic::last_input_is_tool_output(&self.body),
            WireApi::OpenAiChat => crate::chat::last_input_is_tool_output(&self.body),
            WireApi::GeminiGenerateContent => crate::gemini::last_input_is_tool_output(&self.body),
        }
    }

    /// The names of the tools offered to the model, in order. Namespaced tools are reported as
    /// `<namespace>__<name>` (so an MCP tool offered by Codex reads `mcp__<server>__<tool>`,
    /// with Codex's name mangling applied); an entry without a name is reported by its type
    /// (`web_search`). Anthropic: `tools[].name` (Claude Code offers MCP tools as
    /// `mcp__<server>__<tool>`); Chat Completions: `tools[].function.name` (CodeBuddy:
    /// `mcp__<server with - as _>__<tool>`); Gemini: `tools[].functionDeclarations[].name`
    /// (the Gemini CLI: `mcp_<server>_<tool>`).
    pub fn tool_names(&self) -> Vec<String> {
        match self.wire_api {
            WireApi::OpenAiResponses => crate::responses::tool_names(&self.body),
            WireApi::AnthropicMessages => crate::anthropic::tool_names(&self.body),
            WireApi::OpenAiChat => crate::chat::tool_names(&self.body),
            WireApi::GeminiGenerateContent => crate::gemini::tool_names(&self.body),
        }
    }
}
