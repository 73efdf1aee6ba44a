//! Codex's app-server protocol (JSON-RPC over stdio): the methods and notifications the
//! resident dialect of issue 25 speaks, in one place, and the check that the pinned binary's
//! own schema (`codex app-server generate-json-schema`) has not changed for any of them.
//!
//! What the pinned binary does with these messages is recorded in `docs/codex-app-server.md`.
//! Crate-private, and used only by the schema check until the dialect is built.
#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "the resident Codex dialect of issue 25 speaks these"
    )
)]

/// Client requests the dialect sends.
pub(crate) const REQUESTS: &[&str] = &[
    "initialize",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "turn/start",
    "turn/interrupt",
];

/// Server notifications the dialect maps to driver events.
pub(crate) const NOTIFICATIONS: &[&str] = &[
    "thread/started",
    "turn/started",
    "turn/completed",
    "item/started",
    "item/completed",
    "item/agentMessage/delta",
    "thread/tokenUsage/updated",
];

/// Server requests the dialect answers (approvals and MCP elicitations).
pub(crate) const SERVER_REQUESTS: &[&str] = &[
    "mcpServer/elicitation/request",
    "item/commandExecution/requestApproval",
    "item/fileChange/requestApproval",
];

mod events;
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod schema_check;
