//! A `codex` stand-in: the workspace's scripted fake CLI, answering with Codex's own
//! `exec --json` event shapes (copied from transcripts of the pinned `codex` 0.169.0).

use std::ops::Deref;
use std::path::PathBuf;

use driver_codex::{CodexDriver, CodexOptions, CommonOptions};
use fake_cli::{Harness, Rule, Scenario};

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

/// A namespace, a fake CLI and the record of its invocations ([`Harness`]).
pub(crate) struct FakeCodex(Harness);

impl Deref for FakeCodex {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl FakeCodex {
    /// A fake that follows `scenario`, recording the values of `record_env`; the host
    /// environment carries this CLI's credential variables.
    pub(crate) fn new(scenario: Scenario, record_env: &[&str]) -> Self {
        Self(Harness::new(
            &driver_codex::RUNTIME.descriptor,
            scenario,
            VERSION,
            record_env,
            &["OPENAI_API_KEY", "CODEX_API_KEY"],
        ))
    }

    /// Options pointing at the fake binary.
    pub(crate) fn options(&self) -> CodexOptions {
        CodexOptions::new().with_binary(fake_cli::binary_path())
    }

    /// A driver with `options` (whose binary is replaced by the fake's).
    pub(crate) fn driver(&self, options: CodexOptions) -> CodexDriver {
        CodexDriver::new(
            self.env.clone(),
            options.with_binary(fake_cli::binary_path()),
        )
    }

    /// The harness, for the shared conformance factory.
    pub(crate) fn into_harness(self) -> Harness {
        self.0
    }

    /// A driver with `options` whose binary does not exist.
    pub(crate) fn driver_without_binary(&self, options: CodexOptions) -> CodexDriver {
        CodexDriver::new(
            self.env.clone(),
            options.with_binary(self.path().join("no-such-codex")),
        )
    }

    /// The namespace's `CODEX_HOME`.
    pub(crate) fn codex_home(&self) -> PathBuf {
        self.env
            .state_dir(&driver_codex::RUNTIME.descriptor)
            .unwrap()
            .to_owned()
    }
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
