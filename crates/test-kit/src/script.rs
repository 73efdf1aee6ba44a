//! Wire-independent scripting: what the mock model answers, one [`Reply`] per model request.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::record::RecordedRequest;

/// The text answered when a [`Script`] has no step left that accepts a model request (and no
/// other default was set with [`Script::with_default`]).
pub const DEFAULT_TEXT: &str = "test-kit: script exhausted, default answer";

/// Token usage reported with a successful reply.
///
/// Every reply reports [`Usage::DEFAULT`] unless [`Reply::with_usage`] says otherwise. Each wire
/// API maps the fields onto its own usage object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Usage {
    /// Input (prompt) tokens, including cached ones.
    pub input_tokens: u64,
    /// The part of `input_tokens` served from a prompt cache.
    pub cached_input_tokens: u64,
    /// Output (completion) tokens, including reasoning tokens.
    pub output_tokens: u64,
    /// The part of `output_tokens` spent on reasoning.
    pub reasoning_output_tokens: u64,
}

impl Usage {
    /// The usage of every reply unless overridden: 10 input (2 cached), 5 output (0 reasoning).
    pub const DEFAULT: Usage = Usage {
        input_tokens: 10,
        cached_input_tokens: 2,
        output_tokens: 5,
        reasoning_output_tokens: 0,
    };

    /// A usage with no cached input and no reasoning tokens.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            cached_input_tokens: 0,
            output_tokens,
            reasoning_output_tokens: 0,
        }
    }
}

impl Default for Usage {
    fn default() -> Self {
        Usage::DEFAULT
    }
}

/// What a reply does, independent of the wire format that renders it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReplyKind {
    /// A final assistant text.
    Text(String),
    /// A call of tool `tool` of MCP server `server` (the server's configuration key), or of
    /// the runtime's own built-in tool `tool` when `server` is `None`.
    ToolCall {
        server: Option<String>,
        tool: String,
        arguments: serde_json::Value,
    },
    /// An HTTP error status with a JSON error body carrying `message`.
    Error { status: u16, message: String },
    /// A verbatim HTTP answer.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
}

/// One scripted answer to one model request.
///
/// Constructors say *what* the model does; each mock server renders it in its wire format
/// (see [`crate::responses`], [`crate::anthropic`], [`crate::chat`]). Builders add a delay, a
/// usage or a fixed tool-call id.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) kind: ReplyKind,
    pub(crate) delay: Option<Duration>,
    pub(crate) usage: Usage,
    pub(crate) call_id: Option<String>,
}

impl Reply {
    fn of(kind: ReplyKind) -> Self {
        Reply {
            kind,
            delay: None,
            usage: Usage::DEFAULT,
            call_id: None,
        }
    }

    /// The model answers with this final text (ending its turn).
    pub fn text(text: impl Into<String>) -> Self {
        Reply::of(ReplyKind::Text(text.into()))
    }

    /// The model calls `tool` of the MCP server configured under the key `server`, with these
    /// arguments (a JSON object).
    ///
    /// Names are the ones the host configured (`agent-tools`, `my-tool`); the mock applies the
    /// runtime's own name mangling when it renders the call. The call id is `call_<n>`, `n` being
    /// the zero-based index of the model request it answers, unless [`Reply::with_call_id`] fixes
    /// it.
    pub fn tool_call(
        server: impl Into<String>,
        tool: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Reply::of(ReplyKind::ToolCall {
            server: Some(server.into()),
            tool: tool.into(),
            arguments,
        })
    }

    /// The model calls the runtime's own built-in tool `name` (Codex's `shell`, Claude Code's
    /// `Write`, …) with these arguments (a JSON object), unmangled. The call id follows the
    /// rule of [`Reply::tool_call`].
    pub fn builtin_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Reply::of(ReplyKind::ToolCall {
            server: None,
            tool: name.into(),
            arguments,
        })
    }

    /// The model runs the shell command `cmd` with Codex's own command tool: `exec_command`
    /// with `{"cmd": cmd}` (the pinned `codex` 0.169.0; serve it with
    /// [`MockResponses`](crate::responses::MockResponses)). Codex runs it in its working
    /// directory when the policy allows commands, or asks the host (`commandExecution`).
    pub fn codex_command(cmd: impl Into<String>) -> Self {
        Reply::builtin_call("exec_command", serde_json::json!({ "cmd": cmd.into() }))
    }

    /// The model writes `content` to the file `path` with Codex's own file tool: a patch that
    /// adds the file, sent as `apply_patch <<'EOF' … EOF` through `exec_command`, which the
    /// pinned `codex` 0.169.0 intercepts and applies as a file change (so a policy that asks
    /// about writes gets a `fileChange` approval, not a command one). `path` is relative to
    /// Codex's working directory, or absolute. Each line of `content` is written with a
    /// trailing newline.
    ///
    /// # Panics
    /// When a line of `content` is exactly `EOF` (it would end the here-document).
    pub fn codex_write(path: impl AsRef<Path>, content: impl AsRef<str>) -> Self {
        let mut patch = format!(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {}\n",
            path.as_ref().display()
        );
        for line in content.as_ref().lines() {
            assert!(
                line != "EOF",
                "a line `EOF` would end codex_write's here-document"
            );
            patch.push('+');
            patch.push_str(line);
            patch.push('\n');
        }
        patch.push_str("*** End Patch\nEOF\n");
        Reply::codex_command(patch)
    }

    /// The model runs the shell command `cmd` with Claude Code's own command tool: `Bash` with
    /// `{"command": cmd}` (the pinned `claude` 2.1.197; serve it with
    /// [`MockAnthropic`](crate::anthropic::MockAnthropic)).
    pub fn claude_command(cmd: impl Into<String>) -> Self {
        Reply::builtin_call("Bash", serde_json::json!({ "command": cmd.into() }))
    }

    /// The model writes `content` to the file `path` with Claude Code's own file tool: `Write`
    /// with `{"file_path": path, "content": content}`. Claude Code wants an absolute path.
    pub fn claude_write(path: impl AsRef<Path>, content: impl Into<String>) -> Self {
        Reply::builtin_call(
            "Write",
            serde_json::json!({ "file_path": path.as_ref(), "content": content.into() }),
        )
    }

    /// The model runs the shell command `cmd` with CodeBuddy's own command tool, which has
    /// Claude Code's shape: `Bash` with `{"command": cmd}` (the pinned `codebuddy` 2.117.0;
    /// serve it with [`MockChat`](crate::chat::MockChat)).
    pub fn codebuddy_command(cmd: impl Into<String>) -> Self {
        Reply::claude_command(cmd)
    }

    /// The model writes `content` to the file `path` with CodeBuddy's own file tool, which has
    /// Claude Code's shape: `Write` with `{"file_path": path, "content": content}` (an
    /// absolute path).
    pub fn codebuddy_write(path: impl AsRef<Path>, content: impl Into<String>) -> Self {
        Reply::claude_write(path, content)
    }

    /// The model runs the shell command `cmd` with Gemini CLI's own command tool: the function
    /// call `run_shell_command` with `{"command": cmd}` (the pinned `gemini` 0.61.0; serve it
    /// with [`MockGemini`](crate::gemini::MockGemini)).
    pub fn gemini_command(cmd: impl Into<String>) -> Self {
        Reply::builtin_call(
            "run_shell_command",
            serde_json::json!({ "command": cmd.into() }),
        )
    }

    /// The model writes `content` to the file `path` with Gemini CLI's own file tool: the
    /// function call `write_file` with `{"file_path": path, "content": content}`.
    pub fn gemini_write(path: impl AsRef<Path>, content: impl Into<String>) -> Self {
        Reply::builtin_call(
            "write_file",
            serde_json::json!({ "file_path": path.as_ref(), "content": content.into() }),
        )
    }

    /// The request fails with this HTTP status and a JSON error body
    /// (`{"error":{"message":…,"type":"test_kit_error","code":null}}`).
    pub fn error(status: u16) -> Self {
        Reply::error_with_message(status, format!("test-kit scripted error (HTTP {status})"))
    }

    /// Like [`Reply::error`], with this error message.
    pub fn error_with_message(status: u16, message: impl Into<String>) -> Self {
        Reply::of(ReplyKind::Error {
            status,
            message: message.into(),
        })
    }

    /// A verbatim answer: status, `content-type` and body as given (for malformed or truncated
    /// streams and anything the typed constructors do not cover).
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> Self {
        Reply::of(ReplyKind::Raw {
            status,
            content_type: content_type.into(),
            body: body.into(),
        })
    }

    /// Waits this long before answering (the request is recorded at once).
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Reports this usage instead of [`Usage::DEFAULT`] (ignored by errors and raw answers).
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Uses this tool-call id instead of `call_<n>` (only meaningful for [`Reply::tool_call`]).
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }
}

type Guard = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

#[derive(Clone)]
struct Step {
    guard: Option<Guard>,
    reply: Reply,
}

/// An ordered queue of [`Reply`]s, one consumed per model request.
///
/// For each model request the queue is scanned from the front and the **first step that
/// accepts the request** is removed and answered. A step added with [`Script::then`] accepts
/// every request, so a script of plain steps is a FIFO. A step added with [`Script::then_when`]
/// accepts only requests its predicate approves; it waits in the queue, and later plain steps
/// may be consumed before it. When no step accepts, the default reply is answered (the text
/// [`DEFAULT_TEXT`] unless [`Script::with_default`] sets another) and the queue is unchanged.
///
/// Only model requests (`POST …/responses`, `POST …/v1/messages`, `POST …/chat/completions`)
/// consume steps; other requests (such as `GET …/models`, or Claude Code's session-title
/// request) are answered by the server without touching the script.
#[derive(Clone)]
pub struct Script {
    steps: VecDeque<Step>,
    default: Reply,
}

impl Script {
    /// An empty script: every model request gets the default reply.
    pub fn new() -> Self {
        Script {
            steps: VecDeque::new(),
            default: Reply::text(DEFAULT_TEXT),
        }
    }

    /// Appends a step that answers the next model request that reaches it.
    pub fn then(mut self, reply: Reply) -> Self {
        self.push(reply);
        self
    }

    /// Appends a step that answers only a model request for which `predicate` returns true.
    pub fn then_when(
        mut self,
        predicate: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        reply: Reply,
    ) -> Self {
        self.steps.push_back(Step {
            guard: Some(Arc::new(predicate)),
            reply,
        });
        self
    }

    /// Replaces the reply given when no step accepts a request.
    pub fn with_default(mut self, reply: Reply) -> Self {
        self.default = reply;
        self
    }

    /// Appends a step that accepts every request (the in-place form of [`Script::then`]).
    pub fn push(&mut self, reply: Reply) {
        self.steps.push_back(Step { guard: None, reply });
    }

    /// The number of steps not consumed yet.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// True when every step was consumed.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Removes and returns the reply for `request` (see the type's documentation).
    pub(crate) fn next_for(&mut self, request: &RecordedRequest) -> Reply {
        let position = self.steps.iter().position(|step| match &step.guard {
            None => true,
            Some(guard) => guard(request),
        });
        match position.and_then(|index| self.steps.remove(index)) {
            Some(step) => step.reply,
            None => self.default.clone(),
        }
    }
}

impl Default for Script {
    fn default() -> Self {
        Script::new()
    }
}

impl FromIterator<Reply> for Script {
    fn from_iter<I: IntoIterator<Item = Reply>>(replies: I) -> Self {
        let mut script = Script::new();
        for reply in replies {
            script.push(reply);
        }
        script
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct StepView<'a>(&'a Step);
        impl fmt::Debug for StepView<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("Step")
                    .field("guarded", &self.0.guard.is_some())
                    .field("reply", &self.0.reply)
                    .finish()
            }
        }
        f.debug_struct("Script")
            .field(
                "steps",
                &self.steps.iter().map(StepView).collect::<Vec<_>>(),
            )
            .field("default", &self.default)
            .finish()
    }
}
