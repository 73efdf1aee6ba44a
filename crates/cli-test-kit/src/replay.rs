//! One-way transcript replay: what a pinned CLI printed (JSONL, one event per line,
//! `tests/fixtures/<cli>-<version>/`) through a dialect's translator, rendered and compared with
//! its blessed `.events` golden.

use std::fmt::Write as _;
use std::path::Path;

use compat_fingerprint::{Fingerprint, Kind};
use driver_cli::{Tracked, Translator};
use driver_spi::{DriverEvent, ProfilePayload, Request};
use run_service::{McpServer, RunId};
use serde_json::Value;

/// Replays one recorded transcript (JSONL, one CLI event per line) through `translator` and
/// renders what a host would learn: every event, then the translator's judgement.
///
/// # Panics
/// When a line is not JSON: a fixture must be a real transcript.
pub fn replay(translator: impl Translator, transcript: &str) -> String {
    let mut translator = Tracked::new(translator);
    let mut out = String::new();
    for (index, line) in transcript.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not JSON: {e}", index + 1));
        match translator.translate(&value) {
            Ok(events) => {
                for event in events {
                    let _ = writeln!(out, "{}", render(&event));
                }
            }
            Err(_) => {
                let _ = writeln!(out, "malformed line {}", index + 1);
            }
        }
    }
    for event in translator.close_open_calls() {
        let _ = writeln!(out, "{} (closed at the end)", render(&event));
    }
    let _ = writeln!(out, "---");
    let _ = writeln!(out, "started: {}", translator.started());
    let _ = writeln!(out, "session: {}", translator.session_id().is_some());
    let _ = writeln!(out, "succeeded: {}", translator.succeeded());
    if let Some(failure) = translator.reported_failure() {
        let _ = writeln!(out, "failure: {:?}: {}", failure.kind, failure.message);
    }
    if let Some(usage) = translator.usage() {
        let _ = writeln!(out, "usage: {usage:?}");
    }
    if let Some(servers) = translator.mcp_servers() {
        for server in servers {
            let _ = writeln!(out, "mcp server {}: {}", server.name, server.status);
        }
    }
    let _ = writeln!(out, "output: {:?}", translator.output());
    out
}

fn render(event: &DriverEvent) -> String {
    serde_json::to_string(event).unwrap_or_else(|_| format!("{event:?}"))
}

/// Replays every `*.jsonl` transcript in `dir` with a fresh translator that `translator`
/// builds for the request the transcripts were recorded with (the `agent-tools` MCP server
/// attached, as `tests/fixtures/README.md` describes), and compares each rendering with its
/// `*.events` golden beside it. With `BLESS=1` in the environment the goldens are written
/// instead.
///
/// # Panics
/// When `dir` holds no transcript, or a rendering differs from its golden (the message shows
/// both and the command that re-blesses).
pub fn replay_dir<T: Translator>(dir: &Path, mut translator: impl FnMut(&Request) -> T) {
    const REPLAY: Kind = Kind::new("driver-cli transcript replay 2026-12-02 v1");
    let fingerprint = Fingerprint::of(REPLAY, |e| e.str("replay"));
    let profile = ProfilePayload::new(fingerprint, fingerprint);
    let request = Request::new(RunId::new("replay"), "replay", profile).with_mcp([
        McpServer::streamable_http("agent-tools", "http://127.0.0.1:9/mcp"),
    ]);
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no transcript in {}", dir.display());
    let mut failures = Vec::new();
    for path in entries {
        let transcript = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let rendered = replay(translator(&request), &transcript);
        let golden = path.with_extension("events");
        if bless {
            std::fs::write(&golden, &rendered)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", golden.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected.replace("\r\n", "\n") != rendered {
            failures.push(format!(
                "{}:\n--- expected\n{expected}\n+++ replayed\n{rendered}",
                golden.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "replayed transcripts differ from their goldens (after review, re-bless with `cargo xtask transcripts bless`):\n{}",
        failures.join("\n")
    );
}
