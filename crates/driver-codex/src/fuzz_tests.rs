//! The shared translator fuzz ([`cli_test_kit::fuzz_translator!`]) over Codex-shaped events:
//! 10,000 cases per property with a fixed seed, so a CI failure reproduces locally.

use std::sync::LazyLock;

use crate::events::EventTranslator;

/// The keys both modes' items and errors spell alike; each mode's fuzz adds its own.
pub(crate) const ITEM_KEYS: &[&str] = &[
    "type",
    "id",
    "item",
    "text",
    "server",
    "tool",
    "arguments",
    "status",
    "error",
    "message",
    "result",
    "content",
    "command",
];

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

/// Exec's keys: the shared ones and its snake_case ones (a static, as the harness takes
/// `'static` slices).
static KEYS: LazyLock<Vec<&str>> = LazyLock::new(|| {
    [
        ITEM_KEYS,
        &[
            "thread_id",
            "usage",
            "input_tokens",
            "output_tokens",
            "cached_input_tokens",
            "structured_content",
            "aggregated_output",
            "exit_code",
        ],
    ]
    .concat()
});

cli_test_kit::fuzz_translator!(EventTranslator::default(), WORDS, KEYS.as_slice());
