//! Fuzz-style properties: the stream-json translator (through the shared driver test kit's
//! rules), the tool-name mapping and the MCP config writer, fed adversarial input, never
//! panic; translated streams are well formed and names map back only to declared servers.
//!
//! Fixed seed and case count (`test_support::fuzz_config`), so a CI failure reproduces.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use driver_cli::Translator;
use driver_cli::testing::{check_stream, event, events, nasty_text as nasty, take_line};
use driver_spi::{FailureKind, Redactor};
use proptest::prelude::*;
use run_service::McpServer;

use crate::events::{StreamJson, TurnResult};
use crate::mcp_config::{McpDialect, mcp_config};
use crate::names::{ToolNames, sanitize};

fn translator(names: &[&str]) -> StreamJson {
    fn classify(_: &TurnResult) -> FailureKind {
        FailureKind::Provider
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

proptest! {
    #![proptest_config(test_support::fuzz_config())]

    /// Any sequence of event-shaped values, driven as the driver does: the shared rules hold.
    #[test]
    fn translator_streams_are_well_formed(events in events(WORDS, KEYS)) {
        check_stream(translator(&["files"]), &events)?;
    }

    /// Arbitrary text parsed as a JSONL line, then translated.
    #[test]
    fn translator_takes_any_line(line in prop_oneof![nasty(), event(WORDS, KEYS).prop_map(|v| v.to_string())]) {
        take_line(translator(&[]), &line);
    }

    /// A reported name is the wire name, or the wire name with a declared server's
    /// sanitized form replaced by the declared name.
    #[test]
    fn tool_names_map_only_to_declared_servers(
        declared in prop::collection::vec(prop_oneof!["[a-z_.-]{1,6}", nasty()], 0..4),
        wire in prop_oneof!["mcp__[a-z_.-]{0,8}__[a-z_]{0,6}", nasty()],
    ) {
        let names = ToolNames::new(declared.iter().map(String::as_str));
        let out = names.report(&wire);
        if out != wire {
            let ok = declared.iter().any(|d| {
                let s = sanitize(d);
                wire.strip_prefix("mcp__")
                    .and_then(|r| r.strip_prefix(s.as_str()))
                    .and_then(|r| r.strip_prefix("__"))
                    .is_some_and(|tool| out == format!("mcp__{d}__{tool}"))
            });
            prop_assert!(ok, "{wire:?} -> {out:?}");
        }
        for d in &declared {
            prop_assert!(names.declares(d));
        }
    }

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
    let mut t = translator(&[]);
    let result = t.translate(&serde_json::json!({"type": "assistant", "message": {"content": 5}}));
    assert!(result.is_err());
    assert!(
        !t.started(),
        "started() is true but no RunStarted was returned"
    );
}
