//! The four recorded CLIs: how each one is pointed at its test-kit mock, with which canary
//! key, through its driver's existing public API (the same options as its real-binary test in
//! `crates/driver-*/tests/real_*.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions};
use driver_cli::CommonOptions as _;
use driver_codebuddy::{CodeBuddyDriver, CodeBuddyOptions};
use driver_codex::{CodexDriver, CodexOptions, ModelProvider};
use driver_gemini::{GeminiDriver, GeminiOptions};
use driver_process::command::Limits;
use driver_spi::Driver;
use run_service::SecretString;
use runtime_env::{HostEnv, RuntimeEnv};
use test_kit::anthropic::MockAnthropic;
use test_kit::chat::MockChat;
use test_kit::gemini::MockGemini;
use test_kit::responses::MockResponses;
use test_kit::{RecordedRequest, Reply, Script};

use crate::normalize::Canary;

/// The variable Codex reads its model key from (a `ModelProvider`'s `env_key`).
const CODEX_KEY_VAR: &str = "MOCK_MODEL_KEY";

/// One recorded CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cli {
    /// `codex exec --json`, against the OpenAI Responses mock.
    Codex,
    /// `claude -p --output-format stream-json`, against the Anthropic Messages mock.
    ClaudeCode,
    /// `codebuddy -p --output-format stream-json`, against the Chat Completions mock.
    CodeBuddy,
    /// `gemini -p --output-format stream-json`, against the Gemini API mock.
    Gemini,
}

impl Cli {
    /// Every recorded CLI, in recording order.
    pub(crate) const ALL: [Cli; 4] = [Cli::Codex, Cli::ClaudeCode, Cli::CodeBuddy, Cli::Gemini];

    /// The name on the command line and the prefix of the fixture directory.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cli::Codex => "codex",
            Cli::ClaudeCode => "claude-code",
            Cli::CodeBuddy => "codebuddy",
            Cli::Gemini => "gemini",
        }
    }

    /// The CLI called `name`.
    pub(crate) fn parse(name: &str) -> Option<Cli> {
        Cli::ALL.into_iter().find(|cli| cli.name() == name)
    }

    /// The model API key: a canary value, never a real key.
    fn model_key(self) -> &'static str {
        match self {
            Cli::Codex => "model-key-canary-5b0c9e2f7a1d",
            Cli::ClaudeCode => "sk-ant-model-key-canary-8d2e41",
            Cli::CodeBuddy => "cb-model-key-canary-3f9a2c71",
            Cli::Gemini => "AIza-model-key-canary-3f8a61d2",
        }
    }

    /// The canaries of the model key. CodeBuddy derives a user id from the key's tail unless
    /// told otherwise, so the tail is a canary too (as in its real-binary test).
    pub(crate) fn canaries(self) -> Vec<Canary> {
        let key = self.model_key();
        let mut canaries = vec![Canary::new("the model key canary", key)];
        if self == Cli::CodeBuddy {
            canaries.push(Canary::new(
                "the model key canary's tail",
                &key[key.len() - 8..],
            ));
        }
        canaries
    }

    /// What the mock answers every model request of the failure scenario. Every answer fails,
    /// so a CLI that retries despite its driver's options still fails, only later.
    ///
    /// A server error (500) where the driver turns retries off or the CLI gives up at once;
    /// the Gemini CLI has no such option and retries a 5xx with backoff for minutes (0.61.0:
    /// five attempts in 90 seconds), so it gets a 401, which it does not retry.
    pub(crate) fn failure_reply(self) -> Reply {
        let status = match self {
            Cli::Codex | Cli::ClaudeCode | Cli::CodeBuddy => 500,
            Cli::Gemini => 401,
        };
        Reply::error_with_message(status, "transcript-recorder: the mock model server failed")
    }

    /// Starts this CLI's mock model server with `script`.
    pub(crate) fn start_mock(self, script: Script) -> Result<Mock, String> {
        let started = match self {
            Cli::Codex => MockResponses::start(script).map(Mock::Responses),
            Cli::ClaudeCode => MockAnthropic::start(script).map(Mock::Anthropic),
            Cli::CodeBuddy => MockChat::start(script).map(Mock::Chat),
            Cli::Gemini => MockGemini::start(script).map(Mock::Gemini),
        };
        started.map_err(|e| format!("starting the {} mock: {e}", self.name()))
    }

    /// The credential namespace under `dir` (`dir/rt`, workspace `dir/workspace`), with only
    /// `PATH` from the host and, for the CLIs that read it from their environment, the key.
    pub(crate) fn env(self, dir: &Path, path: &std::ffi::OsStr) -> Result<RuntimeEnv, String> {
        let namespace = "user:transcripts"
            .parse()
            .map_err(|e| format!("the namespace name: {e}"))?;
        let runtime = match self {
            Cli::Codex => &driver_codex::RUNTIME,
            Cli::ClaudeCode => &driver_claude_code::RUNTIME,
            Cli::CodeBuddy => &driver_codebuddy::RUNTIME,
            Cli::Gemini => &driver_gemini::RUNTIME,
        };
        let builder = RuntimeEnv::builder(dir.join("rt"), namespace, dir.join("workspace"))
            .host_env(HostEnv::from_vars([("PATH", path)]))
            .runtimes([&runtime.descriptor]);
        let key = SecretString::from(self.model_key());
        let builder = match self {
            Cli::Codex => builder.secret(CODEX_KEY_VAR, key),
            Cli::ClaudeCode => builder.secret("ANTHROPIC_API_KEY", key),
            Cli::CodeBuddy | Cli::Gemini => builder,
        };
        builder
            .build()
            .map_err(|e| format!("the {} runtime env: {e}", self.name()))
    }

    /// This CLI's driver over `env`, running `binary` (the capture wrapper) against `mock`.
    pub(crate) fn driver(
        self,
        env: Arc<RuntimeEnv>,
        binary: &Path,
        mock: &Mock,
    ) -> Arc<dyn Driver> {
        let limits = Limits::default()
            .with_idle_timeout(Duration::from_secs(90))
            .with_total_timeout(Duration::from_secs(240));
        let key = SecretString::from(self.model_key());
        match self {
            Cli::Codex => Arc::new(CodexDriver::new(
                env,
                CodexOptions::new()
                    .with_binary(binary)
                    .with_model("mock-model")
                    .with_model_provider(
                        ModelProvider::new("mock", mock.base_url())
                            .with_env_key(CODEX_KEY_VAR)
                            .with_request_max_retries(0)
                            .with_stream_max_retries(0),
                    )
                    .with_limits(limits),
            )),
            Cli::ClaudeCode => Arc::new(ClaudeCodeDriver::new(
                env,
                ClaudeCodeOptions::new()
                    .with_binary(binary)
                    .with_model("claude-mock")
                    .with_base_url(mock.base_url())
                    .with_max_retries(0)
                    .with_limits(limits),
            )),
            Cli::CodeBuddy => Arc::new(CodeBuddyDriver::new(
                env,
                CodeBuddyOptions::new()
                    .with_binary(binary)
                    .with_base_url(mock.base_url())
                    .with_api_key(key)
                    .with_offline(true)
                    .with_limits(limits),
            )),
            Cli::Gemini => Arc::new(GeminiDriver::new(
                env,
                GeminiOptions::new()
                    .with_binary(binary)
                    .with_model("gemini-mock")
                    .with_base_url(mock.base_url())
                    .with_api_key(key)
                    .with_limits(limits),
            )),
        }
    }
}

/// One of the test-kit mock model servers.
#[derive(Debug)]
pub(crate) enum Mock {
    /// The OpenAI Responses API (Codex).
    Responses(MockResponses),
    /// The Anthropic Messages API (Claude Code).
    Anthropic(MockAnthropic),
    /// The OpenAI Chat Completions API (CodeBuddy).
    Chat(MockChat),
    /// The Gemini API (Gemini CLI).
    Gemini(MockGemini),
}

impl Mock {
    /// The URL the CLI is pointed at.
    pub(crate) fn base_url(&self) -> String {
        match self {
            Mock::Responses(m) => m.base_url(),
            Mock::Anthropic(m) => m.base_url(),
            Mock::Chat(m) => m.base_url(),
            Mock::Gemini(m) => m.base_url(),
        }
    }

    /// Appends a scripted answer.
    pub(crate) fn push_reply(&self, reply: Reply) {
        match self {
            Mock::Responses(m) => m.push_reply(reply),
            Mock::Anthropic(m) => m.push_reply(reply),
            Mock::Chat(m) => m.push_reply(reply),
            Mock::Gemini(m) => m.push_reply(reply),
        }
    }

    /// How many scripted answers are still waiting.
    pub(crate) fn pending_replies(&self) -> usize {
        match self {
            Mock::Responses(m) => m.pending_replies(),
            Mock::Anthropic(m) => m.pending_replies(),
            Mock::Chat(m) => m.pending_replies(),
            Mock::Gemini(m) => m.pending_replies(),
        }
    }

    /// The model requests so far.
    pub(crate) fn model_requests(&self) -> Vec<RecordedRequest> {
        match self {
            Mock::Responses(m) => m.model_requests(),
            Mock::Anthropic(m) => m.model_requests(),
            Mock::Chat(m) => m.model_requests(),
            Mock::Gemini(m) => m.model_requests(),
        }
    }
}
