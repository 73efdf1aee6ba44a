//! Fuzz-style properties (issue 13): the stream-json translator, the tool-name mapping and
//! the MCP config writer, fed adversarial input, never panic; translated streams are well
//! formed and names map back only to declared servers.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use std::collections::BTreeMap;

use driver_spi::{DriverEvent, FailureKind, Redactor, check_sequence};
use driver_stream_json::{McpDialect, StreamTranslator, ToolNames, mcp_config, sanitize};
use proptest::prelude::*;
use proptest::test_runner::Config;
use run_service::McpServer;
use serde_json::Value;

fn config() -> Config {
    test_support::fuzz_config()
}

fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,16}",
        1 => "[\\x00-\\x1f\\x7f ]{0,6}",
        3 => "[a-zA-Z0-9_$.{}-]{0,12}",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,32}",
        1 => "[é€\u{1d11e}\u{200b}\u{0}]{0,8}",
        1 => (any::<char>(), 60usize..300).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
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

fn eventish() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        2 => nasty().prop_map(Value::from),
        5 => prop::sample::select(WORDS).prop_map(Value::from),
    ];
    let key = prop_oneof![5 => prop::sample::select(KEYS).prop_map(str::to_owned), 1 => nasty()];
    let value = leaf.prop_recursive(4, 24, 6, move |inner| {
        prop_oneof![
            2 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            3 => prop::collection::btree_map(key.clone(), inner, 0..7)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (prop::sample::select(WORDS), value).prop_map(|(kind, v)| match v {
        Value::Object(mut m) => {
            m.entry("type").or_insert_with(|| Value::from(kind));
            Value::Object(m)
        }
        other => other,
    })
}

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
    #![proptest_config(config())]

    /// Any sequence of event-shaped values, driven as `run_turn` does (stop at the first
    /// malformed event, close open calls, end the run): no panic, no empty delta, and the
    /// stream passes the sequence checker.
    #[test]
    fn translator_streams_are_well_formed(events in prop::collection::vec(eventish(), 0..6)) {
        let mut t = StreamTranslator::new(Redactor::default(), ToolNames::new(["files"]));
        let mut out = Vec::new();
        let mut malformed = false;
        for e in &events {
            match t.translate(e) {
                Ok(batch) => out.extend(batch),
                Err(_) => { malformed = true; break; }
            }
        }
        let empty = out.iter().any(|e| matches!(e,
            DriverEvent::TextDelta { delta } | DriverEvent::ToolCallArguments { delta, .. } if delta.is_empty()));
        prop_assert!(!empty, "{out:?}");
        if t.started() && !malformed {
            out.extend(t.close_open_calls());
            prop_assert!(t.close_open_calls().is_empty());
            out.push(DriverEvent::RunFinished);
            prop_assert_eq!(check_sequence(&out), Ok(()), "{:?} from {:?}", out, events);
        } else if !t.started() {
            prop_assert!(out.is_empty());
        } else {
            out.push(DriverEvent::RunFailed { kind: FailureKind::Protocol });
        }
    }

    /// Arbitrary text parsed as a JSONL line, then translated.
    #[test]
    fn translator_takes_any_line(line in prop_oneof![nasty(), eventish().prop_map(|v| v.to_string())]) {
        let mut t = StreamTranslator::new(Redactor::default(), ToolNames::default());
        if let Ok(v) = driver_cli::parse_json_line(&line, 1) {
            let _ = t.translate(&v);
            let _ = t.close_open_calls();
            let _ = t.output();
        }
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
    let mut t = StreamTranslator::new(Redactor::default(), ToolNames::default());
    let result = t.translate(&serde_json::json!({"type": "assistant", "message": {"content": 5}}));
    assert!(result.is_err());
    assert!(
        !t.started(),
        "started() is true but no RunStarted was returned"
    );
}
