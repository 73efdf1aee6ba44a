//! The shared translator fuzz ([`driver_cli::fuzz_translator!`]) over Codex-shaped events:
//! 10,000 cases per property with a fixed seed, so a CI failure reproduces locally.

use crate::events::EventTranslator;

const WORDS: &[&str] = &[
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "error",
    "item.started",
    "item.updated",
    "item.completed",
    "agent_message",
    "mcp_tool_call",
    "command_execution",
    "failed",
    "completed",
    "in_progress",
    "text",
    "item_0",
    "item_1",
    "",
];

const KEYS: &[&str] = &[
    "type",
    "thread_id",
    "usage",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "error",
    "message",
    "item",
    "id",
    "text",
    "server",
    "tool",
    "arguments",
    "status",
    "result",
    "content",
    "structured_content",
    "command",
    "aggregated_output",
    "exit_code",
];

driver_cli::fuzz_translator!(EventTranslator::default(), WORDS, KEYS);
