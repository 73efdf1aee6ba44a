//! `transcript-recorder`: records what the pinned agent CLIs print on stdout, fully offline,
//! as the transcript fixtures `tests/fixtures/<cli>-<version>/<scenario>.jsonl` that the
//! drivers' event translators are replayed against.
//!
//! Run it through `cargo xtask transcripts record [--cli NAME]`, which checks the `*_BIN`
//! variables and passes each binary here as `--cli NAME=PATH`:
//!
//! ```text
//! transcript-recorder --out tests/fixtures --cli codex=/path/to/codex [--cli ...]
//! ```
//!
//! For each CLI it probes `--version`, plays the scenarios of [`scenarios`] against the CLI's
//! test-kit mock model server through the driver's existing public API (a generated wrapper
//! from [`capture`] tees the raw stdout), then normalises each transcript ([`normalize`]:
//! loopback ports and temporary directories only), refuses to write one that holds a canary
//! (the model key, an MCP bearer token), and writes the CLI's four fixtures together.
//!
//! Why a crate of its own: recording needs all four driver crates, the mocks and the hosted
//! tool server. Linking them into the xtask would make every `cargo xtask` command (tidy,
//! public-api, ci) build them first; as a separate binary they are built only when someone
//! records. The xtask stays a thin, dependency-light runner.
//!
//! Invariants:
//! - Offline: every model request goes to a loopback mock, every tool call to a loopback MCP
//!   server; the CLI runs in an isolated credential namespace under a temporary directory with
//!   `PATH` as its only host variable.
//! - No secret is written: a transcript holding a canary in any encoding fails the CLI's
//!   recording, and none of its fixtures is written.
//! - A fixture is written only for a scenario whose outcome was checked (answer, session
//!   outcome, tool call, failure).
#![forbid(unsafe_code)]

mod capture;
mod clis;
mod normalize;
mod scenarios;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clis::Cli;
use normalize::{Normalizer, event_kinds, leaked, non_json_lines};
use scenarios::Recording;

const USAGE: &str = "\
usage: transcript-recorder --out DIR --cli NAME=BINARY [--cli NAME=BINARY ...]

  --out DIR            the fixtures root (tests/fixtures); each CLI writes DIR/<cli>-<version>/
  --cli NAME=BINARY    record the CLI NAME (codex, claude-code, codebuddy, gemini) by running
                       BINARY; repeatable

Normally run through `cargo xtask transcripts record [--cli NAME]`.";

/// The parsed command line.
#[derive(Debug)]
struct Options {
    out: PathBuf,
    clis: Vec<(Cli, PathBuf)>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut out = None;
    let mut clis = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(args.next().ok_or("--out needs a directory")?)),
            "--cli" => {
                let value = args.next().ok_or("--cli needs NAME=BINARY")?;
                let (name, binary) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--cli {value}: expected NAME=BINARY"))?;
                let cli = Cli::parse(name).ok_or_else(|| format!("unknown CLI `{name}`"))?;
                clis.push((cli, PathBuf::from(binary)));
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let out = out.ok_or("--out is required")?;
    if clis.is_empty() {
        return Err("at least one --cli is required".to_owned());
    }
    Ok(Options { out, clis })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse(&args) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("error: {err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The only host variable the CLIs get: where node and the CLIs' helpers are.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: a Tokio runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = Vec::new();
    for (cli, binary) in &options.clis {
        let outcome = runtime
            .block_on(scenarios::record(*cli, binary, &path))
            .and_then(|recording| write_fixtures(*cli, &recording, &options.out));
        if let Err(err) = outcome {
            eprintln!("error: {}: {err}", cli.name());
            failed.push(cli.name());
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: not recorded: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

/// Normalises, scans and writes one CLI's transcripts to `out/<cli>-<version>/`: all of them,
/// or none when any is empty or holds a canary.
fn write_fixtures(cli: Cli, recording: &Recording, out: &Path) -> Result<(), String> {
    let dir = out.join(format!("{}-{}", cli.name(), recording.version));
    let normalizer = Normalizer::new(recording.temp_dirs.iter().cloned());
    let mut fixtures = Vec::new();
    for (scenario, raw) in &recording.transcripts {
        let file = dir.join(format!("{scenario}.jsonl"));
        let text = normalizer.apply(raw);
        let leaks = leaked(&text, &recording.canaries);
        if !leaks.is_empty() {
            return Err(format!(
                "{} would contain {}; nothing was written",
                file.display(),
                leaks.join(", ")
            ));
        }
        if text.trim().is_empty() {
            return Err(format!("{scenario}: the CLI printed nothing on stdout"));
        }
        fixtures.push((file, text));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for (file, text) in &fixtures {
        std::fs::write(file, text).map_err(|e| format!("writing {}: {e}", file.display()))?;
        let kinds: Vec<String> = event_kinds(text).into_iter().collect();
        println!(
            "  wrote {} ({} lines): {}",
            file.display(),
            text.lines().count(),
            kinds.join(" ")
        );
        let odd = non_json_lines(text);
        if !odd.is_empty() {
            println!("    note: lines that are not JSON: {odd:?}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_command_line_names_each_cli_and_its_binary() {
        let options = parse(&args(&[
            "--out",
            "tests/fixtures",
            "--cli",
            "codex=/bin/codex",
            "--cli",
            "claude-code=/x/claude",
        ]))
        .expect("valid arguments");
        assert_eq!(options.out, PathBuf::from("tests/fixtures"));
        assert_eq!(
            options.clis,
            [
                (Cli::Codex, PathBuf::from("/bin/codex")),
                (Cli::ClaudeCode, PathBuf::from("/x/claude"))
            ]
        );
        assert!(parse(&args(&["--out", "x"])).is_err(), "no CLI");
        assert!(parse(&args(&["--cli", "codex=/c"])).is_err(), "no --out");
        assert!(parse(&args(&["--out", "x", "--cli", "cursor=/c"])).is_err());
        assert!(parse(&args(&["--out", "x", "--cli", "codex"])).is_err());
    }

    /// A recording whose `new-session` transcript is `new_session`; the others name their
    /// scenario and a workspace under `tmp`.
    fn recording(tmp: &str, new_session: &str) -> Recording {
        let transcript = |scenario: &'static str| match scenario {
            "new-session" => new_session.to_owned(),
            _ => format!("{{\"type\":\"{scenario}\",\"cwd\":\"{tmp}/workspace\"}}\n"),
        };
        Recording {
            version: driver_process::version::Version::new(1, 2, 3),
            transcripts: scenarios::SCENARIOS
                .into_iter()
                .map(|s| (s, transcript(s)))
                .collect(),
            canaries: vec![normalize::Canary::new(
                "the model key canary",
                "key-canary-9",
            )],
            temp_dirs: vec![tmp.to_owned()],
        }
    }

    #[test]
    fn a_canary_in_any_transcript_means_no_fixture_is_written() {
        let out = tempfile::tempdir().expect("a temporary directory");
        let leaky = recording(
            "/tmp/.tmpQ",
            "{\"url\":\"http://127.0.0.1:4001/?key=key-canary-9\"}\n",
        );
        let err = write_fixtures(Cli::Gemini, &leaky, out.path()).expect_err("a canary");
        assert!(err.contains("the model key canary"), "{err}");
        assert!(
            !err.contains("key-canary-9"),
            "the value is never printed: {err}"
        );
        assert!(!out.path().join("gemini-1.2.3").exists(), "nothing written");

        let clean = recording("/tmp/.tmpQ", "{\"url\":\"http://127.0.0.1:4001/\"}\n");
        write_fixtures(Cli::Gemini, &clean, out.path()).expect("written");
        let dir = out.path().join("gemini-1.2.3");
        let read = |s: &str| std::fs::read_to_string(dir.join(s)).expect("a fixture");
        assert_eq!(
            read("new-session.jsonl"),
            "{\"url\":\"http://127.0.0.1:PORT/\"}\n"
        );
        assert_eq!(
            read("failure.jsonl"),
            "{\"type\":\"failure\",\"cwd\":\"/TMP/workspace\"}\n"
        );
    }
}
