//! Repository automation, run as `cargo xtask <command>`.
//!
//! Commands:
//!
//! - `public-api [--bless] [CRATE...]`: check (or rewrite) the public-API golden files
//!   `crates/<crate>/public-api.txt`.
//! - `conformance`: run every registered conformance suite implementation by exact test name;
//!   `--registry` only checks that each registered implementation exists (what `ci` does).
//! - `tidy`: run the repository hygiene checks (the `tidy` test of `workspace-tests`).
//! - `transcripts record [--cli NAME]...`: record the pinned CLIs' stdout as the fixtures
//!   under `tests/fixtures/` (needs the `*_BIN` variables; see [`transcripts`]);
//!   `transcripts check` / `transcripts bless`: replay them against (or rewrite) the blessed
//!   `*.events` goldens.
//! - `ci`: everything CI runs, in order, stopping at the first failing step.
//!
//! The xtask only uses `std::process::Command` to drive cargo; it keeps its own dependencies
//! few (see `xtask/Cargo.toml`).

mod ci;
mod conformance;
mod public_api;
mod transcripts;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  public-api [--bless] [CRATE...]  check the public-API golden files (--bless rewrites them)
  conformance                      run every registered conformance suite implementation
  conformance --registry           check that each registered implementation is one test
  tidy                             run the repository hygiene checks
  transcripts record [--cli NAME]  record the pinned CLIs' stdout as tests/fixtures/<cli>-<version>/
  transcripts check                replay the fixtures against their blessed .events goldens
  transcripts bless                rewrite those goldens (review the diff)
                                   (NAME: codex, claude-code, codebuddy, gemini; needs *_BIN)
  ci                               run everything CI runs, in order
  help                             print this message";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let outcome = match command.as_str() {
        "public-api" => match public_api::Options::parse(rest) {
            Ok(options) => public_api::run(&options),
            Err(err) => {
                eprintln!("error: {err}\n\n{USAGE}");
                return ExitCode::from(2);
            }
        },
        "conformance" if rest.is_empty() => conformance::run(),
        "conformance" if rest == ["--registry"] => conformance::verify_registered(),
        "tidy" if rest.is_empty() => util::tidy(),
        "transcripts" => match transcripts::Command::parse(rest) {
            Ok(command) => command.run(),
            Err(err) => {
                eprintln!("error: {err}\n\n{USAGE}");
                return ExitCode::from(2);
            }
        },
        "ci" if rest.is_empty() => ci::run(),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!(
                "error: unknown command or arguments: {}\n\n{USAGE}",
                args.join(" ")
            );
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
