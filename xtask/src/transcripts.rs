//! `cargo xtask transcripts record [--cli NAME]...`: record what the pinned agent CLIs print
//! on stdout, offline, as the fixtures `tests/fixtures/<cli>-<version>/<scenario>.jsonl`
//! (see `tests/fixtures/README.md`). `cargo xtask transcripts check` replays every fixture
//! through its driver's translator against the blessed `*.events` goldens beside it (the
//! drivers' `transcripts` unit tests, which `cargo xtask ci` runs too); `cargo xtask
//! transcripts bless` rewrites those goldens, for a reviewed diff.
//!
//! The recording itself is the `transcript-recorder` binary (`crates/transcript-recorder`),
//! which drives each CLI through its driver crate against the test-kit mocks. This command
//! only checks that the `*_BIN` variable of every requested CLI names an existing binary
//! (failing before anything is built, naming each missing variable) and runs
//! `cargo run -p transcript-recorder` with the binaries as arguments.
//!
//! Why not link the recorder into the xtask: it needs the four driver crates, the mock servers
//! and the hosted MCP tool server. As xtask dependencies they would be built by every
//! `cargo xtask` command (tidy, public-api, ci); as a separate binary they are built only when
//! someone records, and the xtask keeps its few dependencies.

use std::path::PathBuf;

use anyhow::bail;

use crate::util::{cargo, project_root, run_inherited};

/// The exact command that re-records every CLI.
pub(crate) const RECORD_COMMAND: &str = "cargo xtask transcripts record";

/// Each recordable CLI and the variable naming its pinned binary.
const CLIS: [(&str, &str); 4] = [
    ("codex", "CODEX_BIN"),
    ("claude-code", "CLAUDE_BIN"),
    ("codebuddy", "CODEBUDDY_BIN"),
    ("gemini", "GEMINI_BIN"),
];

/// What a `transcripts` command does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// Record the CLIs of these options.
    Record(Options),
    /// Replay every fixture against its golden; `bless` rewrites the goldens instead.
    Replay {
        /// Whether the goldens are rewritten.
        bless: bool,
    },
}

impl Command {
    /// Parse the arguments after `transcripts`: `record [--cli NAME]...`, `check` or `bless`.
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Self> {
        match args.first().map(String::as_str) {
            Some("check") if args.len() == 1 => Ok(Self::Replay { bless: false }),
            Some("bless") if args.len() == 1 => Ok(Self::Replay { bless: true }),
            _ => Options::parse(args).map(Self::Record),
        }
    }

    /// Carry the command out.
    pub(crate) fn run(&self) -> anyhow::Result<()> {
        match self {
            Self::Record(options) => record(options),
            Self::Replay { bless } => replay(*bless),
        }
    }
}

/// Replays every recorded transcript through its driver's translator: the `transcripts`
/// unit tests of the driver crates, with `BLESS=1` when `bless`.
fn replay(bless: bool) -> anyhow::Result<()> {
    let mut cmd = cargo([
        "test",
        "--quiet",
        "--locked",
        "--workspace",
        "--lib",
        "--all-features",
        "--",
        "transcripts::",
    ]);
    if bless {
        cmd.env("BLESS", "1");
    }
    run_inherited(&mut cmd)?;
    if bless {
        println!(
            "
blessed; review the diff (`git diff tests/fixtures`) before committing"
        );
    }
    Ok(())
}

/// The CLIs a `record` command asks for, in [`CLIS`] order, without repeats.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Options {
    clis: Vec<&'static str>,
}

impl Options {
    /// Parse the arguments after `transcripts`: `record [--cli NAME]...` (all CLIs when no
    /// `--cli` is given).
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Self> {
        let Some((command, rest)) = args.split_first() else {
            bail!("transcripts: expected `record`, `check` or `bless`");
        };
        if command != "record" {
            bail!(
                "transcripts: unknown subcommand `{command}` (expected `record`, `check` or `bless`)"
            );
        }
        let mut wanted = Vec::new();
        let mut rest = rest.iter();
        while let Some(arg) = rest.next() {
            let name = match arg.as_str() {
                "--cli" => match rest.next() {
                    Some(name) => name.as_str(),
                    None => bail!("transcripts record: --cli needs a name"),
                },
                other => match other.strip_prefix("--cli=") {
                    Some(name) => name,
                    None => bail!("transcripts record: unknown argument `{other}`"),
                },
            };
            if !CLIS.iter().any(|(cli, _)| *cli == name) {
                bail!(
                    "transcripts record: unknown CLI `{name}` (one of: {})",
                    CLIS.map(|(cli, _)| cli).join(", ")
                );
            }
            wanted.push(name);
        }
        let clis = CLIS
            .iter()
            .map(|(cli, _)| *cli)
            .filter(|cli| wanted.is_empty() || wanted.contains(cli))
            .collect();
        Ok(Options { clis })
    }
}

/// Record the requested CLIs.
pub(crate) fn record(options: &Options) -> anyhow::Result<()> {
    let binaries = binaries(&options.clis, |var| {
        std::env::var_os(var).map(PathBuf::from)
    })?;
    let out = project_root().join("tests").join("fixtures");
    let mut cmd = cargo([
        "run",
        "--quiet",
        "--locked",
        "--package",
        "transcript-recorder",
        "--",
    ]);
    cmd.arg("--out").arg(&out);
    for (cli, binary) in binaries {
        let mut arg = std::ffi::OsString::from(format!("{cli}="));
        arg.push(binary);
        cmd.arg("--cli").arg(arg);
    }
    run_inherited(&mut cmd)?;
    println!(
        "\nrecorded into {}; review the diff (`git diff --stat tests/fixtures`) before committing",
        out.display()
    );
    Ok(())
}

/// The binary of each CLI in `clis`, from its variable as `lookup` reads it; an error naming
/// every variable that is unset, empty or names no file.
fn binaries(
    clis: &[&'static str],
    lookup: impl Fn(&str) -> Option<PathBuf>,
) -> anyhow::Result<Vec<(&'static str, PathBuf)>> {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for cli in clis {
        let Some((_, var)) = CLIS.iter().find(|(name, _)| name == cli) else {
            bail!("unknown CLI `{cli}`");
        };
        match lookup(var).filter(|p| !p.as_os_str().is_empty()) {
            None => problems.push(format!("{var} is not set (the pinned `{cli}` binary)")),
            Some(path) if !path.is_file() => problems.push(format!(
                "{var}={} does not name a file (the pinned `{cli}` binary)",
                path.display()
            )),
            Some(path) => found.push((*cli, path)),
        }
    }
    if !problems.is_empty() {
        bail!(
            "cannot record transcripts:\n  {}\nexport the variable(s) and run `{RECORD_COMMAND}` again \
             (add `--cli NAME` to record one CLI)",
            problems.join("\n  ")
        );
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn record_takes_every_cli_or_the_named_ones() {
        let all = Options::parse(&args(&["record"])).expect("valid");
        assert_eq!(all.clis, ["codex", "claude-code", "codebuddy", "gemini"]);
        let some =
            Options::parse(&args(&["record", "--cli", "gemini", "--cli=codex"])).expect("valid");
        assert_eq!(some.clis, ["codex", "gemini"]);
        for bad in [
            &["record", "--cli", "cursor"][..],
            &["record", "--cli"],
            &["record", "--bless"],
            &["replay"],
            &[],
        ] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn check_and_bless_take_no_arguments() {
        assert_eq!(
            Command::parse(&args(&["check"])).expect("valid"),
            Command::Replay { bless: false }
        );
        assert_eq!(
            Command::parse(&args(&["bless"])).expect("valid"),
            Command::Replay { bless: true }
        );
        assert!(matches!(
            Command::parse(&args(&["record"])),
            Ok(Command::Record(_))
        ));
        for bad in [
            &["bless", "--cli", "codex"][..],
            &["check", "x"],
            &["blessed"],
        ] {
            assert!(Command::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_missing_variable_is_named() {
        let err = binaries(&["codex", "gemini"], |_| None)
            .expect_err("nothing is set")
            .to_string();
        assert!(err.contains("CODEX_BIN is not set"), "{err}");
        assert!(err.contains("GEMINI_BIN is not set"), "{err}");
        let err = binaries(&["claude-code"], |_| Some(PathBuf::from("/no/such/claude")))
            .expect_err("no such file")
            .to_string();
        assert!(
            err.contains("CLAUDE_BIN=/no/such/claude does not name a file"),
            "{err}"
        );
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let found = binaries(&["codebuddy"], |_| Some(manifest.clone())).expect("a file");
        assert_eq!(found, [("codebuddy", manifest)]);
    }
}
