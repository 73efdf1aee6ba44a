//! A `codex` stand-in: the workspace's scripted fake CLI, answering with Codex's own
//! `exec --json` event shapes (copied from transcripts of the pinned `codex` 0.169.0).

use cli_test_kit::FakeCli;
use driver_codex::CodexOptions;
use fake_cli::{Rule, Scenario};

/// `--version` of the pinned release.
pub(crate) const VERSION: &str = "codex-cli 0.169.0";

/// The events of a clean text turn on thread `thread_id` (a template).
pub(crate) fn text_turn(rule: Rule, thread_id: &str, text: &str) -> Rule {
    rule.stdout(format!(
        r#"{{"type":"thread.started","thread_id":"{thread_id}"}}"#
    ))
    .stdout(r#"{"type":"turn.started"}"#)
    .stdout(format!(
        r#"{{"type":"item.completed","item":{{"id":"item_0","type":"agent_message","text":"{text}"}}}}"#
    ))
    .stdout(
        r#"{"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":3,"cache_write_input_tokens":0,"output_tokens":7,"reasoning_output_tokens":0}}"#,
    )
}

/// The default script: start, resume and fork answer like Codex.
pub(crate) fn codex_like() -> Scenario {
    Scenario::new()
        .rule(text_turn(
            Rule::when(["resume"]),
            "${ARG_AFTER:resume}",
            "resumed: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::when(["fork"]),
            "${NEW_UUID}",
            "forked: ${STDIN}",
        ))
        .rule(text_turn(Rule::any(), "${NEW_UUID}", "started: ${STDIN}"))
}

/// The fake CLI of these tests: [`FakeCli`] over [`CodexOptions`].
pub(crate) type FakeCodex = FakeCli<CodexOptions>;

/// A fake that follows `scenario`, recording the values of `record_env`; the host
/// environment carries this CLI's credential variables.
pub(crate) fn fake_codex(scenario: Scenario, record_env: &[&str]) -> FakeCodex {
    FakeCli::new(
        scenario,
        VERSION,
        record_env,
        &["OPENAI_API_KEY", "CODEX_API_KEY"],
    )
}

/// The `-c` overrides of an argv, parsed as TOML values.
pub(crate) fn overrides(argv: &[String]) -> std::collections::BTreeMap<String, toml::Value> {
    argv.windows(2)
        .filter(|w| w[0] == "-c")
        .map(|w| {
            let (k, v) = w[1].split_once('=').expect("key=value");
            let doc: toml::Table = toml::from_str(&format!("v = {v}")).expect("a TOML value");
            (k.to_owned(), doc["v"].clone())
        })
        .collect()
}
