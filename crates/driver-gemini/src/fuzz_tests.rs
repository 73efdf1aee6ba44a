//! Fuzz-style properties of the event translator, through the shared translator harness
//! ([`cli_test_kit`]): fed adversarial input it never panics, every translated stream
//! is well formed, and a malformed event leaves no trace. (The session codec is
//! the one of `driver_cli::Identity`, fuzzed once in driver-cli.)
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use driver_spi::Redactor;

use crate::events::{EventTranslator, tool_names};

const WORDS: &[&str] = &[
    "init",
    "message",
    "tool_use",
    "tool_result",
    "error",
    "result",
    "user",
    "assistant",
    "success",
    "warning",
    "mcp_agent-tools_ping",
    "mcp_agent-tools_",
    "read_file",
    "t1",
    "t2",
    "",
];

const KEYS: &[&str] = &[
    "type",
    "session_id",
    "model",
    "role",
    "content",
    "delta",
    "tool_name",
    "tool_id",
    "parameters",
    "status",
    "output",
    "error",
    "message",
    "severity",
    "stats",
    "input_tokens",
    "output_tokens",
    "cached",
];

fn translator() -> EventTranslator {
    EventTranslator::new(Redactor::default(), tool_names(["agent-tools", "agent"]))
}

cli_test_kit::fuzz_translator!(translator(), WORDS, KEYS);
