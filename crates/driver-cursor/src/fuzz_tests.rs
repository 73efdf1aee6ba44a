//! The shared translator fuzz ([`cli_test_kit::fuzz_translator!`]) over Cursor-shaped events:
//! 10,000 cases per property with a fixed seed, so a CI failure reproduces locally.

use crate::events::EventTranslator;

const WORDS: &[&str] = &[
    "system",
    "init",
    "user",
    "assistant",
    "tool_call",
    "started",
    "completed",
    "result",
    "success",
    "error",
    "thinking",
    "text",
    "c1",
    "c2",
    "",
    "mcp__agent_ui__ping",
    "agent-ui",
    "ping",
];

const KEYS: &[&str] = &[
    "type",
    "subtype",
    "session_id",
    "message",
    "content",
    "text",
    "call_id",
    "tool_call",
    "readToolCall",
    "shellToolCall",
    "mcpToolCall",
    "function",
    "name",
    "arguments",
    "args",
    "providerIdentifier",
    "toolName",
    "result",
    "success",
    "rejected",
    "isError",
    "exitCode",
    "stdout",
    "is_error",
    "duration_ms",
];

fn translator() -> EventTranslator {
    EventTranslator::new(driver_spi::Redactor::default(), ["agent-ui", ""])
}

cli_test_kit::fuzz_translator!(translator(), WORDS, KEYS);
