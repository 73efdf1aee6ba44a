//! Fuzz-style properties: the stream-json translator (through the shared driver test kit's
//! rules), the tool-name mapping and the MCP config writer, fed adversarial input, never
//! panic; translated streams are well formed and names map back only to declared servers.
//!
//! Fixed seed and case count (`test_support::fuzz_config`), so a CI failure reproduces.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use cli_test_kit::nasty_text as nasty;
use driver_cli::Tracked;
use driver_spi::{FailureKind, Redactor};
use proptest::prelude::*;
use run_service::McpServer;

use crate::events::{StreamJson, TurnResult};
use crate::mcp_config::{McpDialect, mcp_config};
use driver_cli::ToolNames;

fn translator(names: &[&str]) -> StreamJson {
    fn classify(_: &TurnResult) -> FailureKind {
        FailureKind::ModelProvider
    }
    StreamJson::with(
        Redactor::default(),
        ToolNames::new(names.iter().copied()),
        classify,
    )
}

const WORDS: &[&str] = &[
    "system",
    "init",
    "assistant",
    "user",
    "result",
    "error",
    "text",
    "tool_use",
    "tool_result",
    "success",
    "connected",
    "failed",
    "t1",
    "t2",
    "",
    "mcp__files__read",
    "[{\"type\":\"text\",\"text\":\"x\"}]",
    "[{",
];

const KEYS: &[&str] = &[
    "type",
    "subtype",
    "session_id",
    "mcp_servers",
    "name",
    "status",
    "message",
    "content",
    "text",
    "id",
    "input",
    "tool_use_id",
    "is_error",
    "result",
    "usage",
    "api_error_status",
    "errors",
    "error",
];

fn server() -> impl Strategy<Value = McpServer> {
    let name = prop_oneof![3 => "[a-z_-]{1,8}", 1 => nasty()];
    (
        name,
        0..3u8,
        nasty(),
        prop::collection::vec(nasty(), 0..3),
        prop::collection::vec((prop_oneof!["[A-Z_]{1,6}", nasty()], nasty()), 0..3),
        proptest::option::of(prop_oneof!["[A-Z_]{1,6}", nasty()]),
    )
        .prop_map(|(name, kind, target, args, pairs, bearer)| {
            let mut s = match kind {
                0 => McpServer::stdio(name, target).with_args(args),
                1 => McpServer::streamable_http(name, target),
                _ => McpServer::sse(name, target),
            };
            for (k, v) in pairs {
                s = if kind == 0 {
                    s.with_env(k, v)
                } else {
                    s.with_header(k, v)
                };
            }
            match bearer {
                Some(b) if kind != 0 => s.with_bearer_token_env(b),
                _ => s,
            }
        })
}

cli_test_kit::fuzz_translator!(translator(&["files"]), WORDS, KEYS);

proptest! {
    #![proptest_config(test_support::fuzz_config())]

    /// The MCP config writer refuses or writes one entry per server, and never writes a
    /// value that the CLI would expand except the `${VAR}` references it made itself.
    #[test]
    fn mcp_config_never_panics(
        servers in prop::collection::vec(server(), 0..3),
        secret in prop_oneof!["[A-Z_]{1,6}", nasty()],
        defer in proptest::option::of(any::<bool>()),
    ) {
        let mut dialect = McpDialect::new();
        if let Some(d) = defer {
            dialect = dialect.with_defer_loading(d);
        }
        let secrets: BTreeMap<&str, Vec<&str>> = servers
            .iter()
            .map(|s| (s.name.as_str(), vec![secret.as_str()]))
            .collect();
        if let Ok(config) = mcp_config(&servers, &secrets, dialect) {
            let entries = config["mcpServers"].as_object().unwrap();
            prop_assert_eq!(entries.len(), servers.len());
            let text = config.to_string();
            let made = text.matches("${").count();
            let refs = text.matches(&format!("${{{secret}}}")).count();
            let bearer = servers.iter().filter_map(|s| match &s.transport {
                run_service::McpTransport::StreamableHttp { bearer_token_env_var: Some(b), .. }
                | run_service::McpTransport::Sse { bearer_token_env_var: Some(b), .. } => Some(b),
                _ => None,
            }).count();
            prop_assert!(made <= refs + bearer, "{text}");
        }
    }
}

/// An `assistant` event whose `message.content` is neither blocks nor text, or whose
/// `tool_use` block lacks a string `id`/`name`: `translate` pushes `RunStarted` into its
/// local batch and sets `started`, then returns `MalformedEvent` and the batch is dropped
/// (`events.rs`, the `assistant` arm: `self.start` runs before `content(event)?`), so
/// `run_turn` later reports `RunFailed` after no `RunStarted`.
#[test]
fn malformed_first_assistant_event_does_not_start_the_run_silently() {
    let mut t = Tracked::new(translator(&[]));
    let result = t.translate(&serde_json::json!({"type": "assistant", "message": {"content": 5}}));
    assert!(result.is_err());
    assert!(
        !t.started(),
        "started() is true but no RunStarted was returned"
    );
}
