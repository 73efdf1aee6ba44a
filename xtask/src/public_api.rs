//! `cargo xtask public-api [--bless] [CRATE...]`: public-API golden files.
//!
//! For each library crate under `crates/`, this generates rustdoc JSON on the stable toolchain
//! (with `RUSTC_BOOTSTRAP=1` set on that one child process only, and a separate target dir so
//! the developer's build cache is untouched), renders it with the pinned `public-api` crate and
//! compares it with `crates/<crate>/public-api.txt`. In check mode a mismatch prints a diff and
//! the command that re-blesses; with `--bless` the file is rewritten.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::util::{cargo, display, project_root};

/// The command a developer runs to accept a changed public API.
const BLESS_COMMAND: &str = "cargo xtask public-api --bless";

/// The rustdoc JSON format the pinned `public-api` parses (its `rustdoc-types` dependency is
/// unified with ours, so this constant is the parser's own).
const SUPPORTED_FORMAT_VERSION: u32 = rustdoc_types::FORMAT_VERSION;

/// Parsed command-line options.
#[derive(Debug)]
pub(crate) struct Options {
    bless: bool,
    crates: Vec<String>,
}

impl Options {
    /// Parse `[--bless] [CRATE...]`.
    pub(crate) fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Options {
            bless: false,
            crates: Vec::new(),
        };
        for arg in args {
            match arg.as_str() {
                "--bless" => options.bless = true,
                flag if flag.starts_with('-') => bail!("public-api: unknown flag `{flag}`"),
                name => options.crates.push(name.to_owned()),
            }
        }
        Ok(options)
    }
}

/// A library crate under `crates/`.
#[derive(Debug)]
struct LibCrate {
    /// The package name, e.g. `thread-store`.
    package: String,
    /// The library target's crate name, e.g. `thread_store`.
    lib_name: String,
    /// The package directory, e.g. `<root>/crates/thread-store`.
    dir: PathBuf,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<MetadataPackage>,
}

#[derive(Debug, Deserialize)]
struct MetadataPackage {
    name: String,
    manifest_path: PathBuf,
    targets: Vec<MetadataTarget>,
}

#[derive(Debug, Deserialize)]
struct MetadataTarget {
    name: String,
    kind: Vec<String>,
}

/// Only the field we check before handing the file to `public-api`.
#[derive(Debug, Deserialize)]
struct FormatVersionOnly {
    format_version: u32,
}

/// Run the command: check every selected crate, or bless it.
pub(crate) fn run(options: &Options) -> anyhow::Result<()> {
    let mut crates = library_crates()?;
    if !options.crates.is_empty() {
        for wanted in &options.crates {
            if !crates.iter().any(|c| &c.package == wanted) {
                bail!("public-api: `{wanted}` is not a library crate under crates/");
            }
        }
        crates.retain(|c| options.crates.contains(&c.package));
    }
    if crates.is_empty() {
        println!("public-api: no library crates under crates/");
        return Ok(());
    }

    let mut mismatched = Vec::new();
    for krate in &crates {
        let rendered = render(krate)?;
        let golden = krate.dir.join("public-api.txt");
        let relative = golden
            .strip_prefix(project_root())
            .unwrap_or(&golden)
            .display()
            .to_string();
        if options.bless {
            let changed = fs::read_to_string(&golden)
                .map(|old| normalize_newlines(&old) != rendered)
                .unwrap_or(true);
            if changed {
                fs::write(&golden, &rendered)
                    .with_context(|| format!("could not write {relative}"))?;
                println!(
                    "public-api  {:<20} blessed ({relative} updated)",
                    krate.package
                );
            } else {
                println!("public-api  {:<20} unchanged", krate.package);
            }
            continue;
        }
        match compare(&golden, &relative, &rendered)? {
            None => println!("public-api  {:<20} ok", krate.package),
            Some(diff) => {
                println!("public-api  {:<20} MISMATCH ({relative})", krate.package);
                println!("{diff}");
                mismatched.push(krate.package.clone());
            }
        }
    }
    if !mismatched.is_empty() {
        bail!(
            "public API differs from the golden file for: {}\n\
             If the change is intended, re-bless with:\n    {BLESS_COMMAND}",
            mismatched.join(", ")
        );
    }
    Ok(())
}

/// The golden file contents for a rendered API: a header line, then one item per line.
fn golden_text(package: &str, api: &str) -> String {
    let mut text = format!("# public API of {package}; regenerate with: {BLESS_COMMAND}\n");
    text.push_str(&normalize_newlines(api));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Compare the golden file with the expected text. `None` when equal, else a printable diff.
fn compare(golden: &Path, shown: &str, expected: &str) -> anyhow::Result<Option<String>> {
    let actual = match fs::read_to_string(golden) {
        Ok(text) => normalize_newlines(&text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Some(format!(
                "golden file {shown} does not exist; create it with:\n    {BLESS_COMMAND}"
            )));
        }
        Err(err) => {
            return Err(err).with_context(|| format!("could not read {shown}"));
        }
    };
    if actual == expected {
        return Ok(None);
    }
    Ok(Some(unified_diff(&actual, expected)))
}

/// A unified diff from the committed text to the freshly generated one.
fn unified_diff(committed: &str, generated: &str) -> String {
    similar::TextDiff::from_lines(committed, generated)
        .unified_diff()
        .context_radius(2)
        .header("committed public-api.txt", "generated from current source")
        .to_string()
}

/// Library crates under `crates/`, from `cargo metadata --no-deps`.
fn library_crates() -> anyhow::Result<Vec<LibCrate>> {
    let mut cmd = cargo(["metadata", "--no-deps", "--format-version", "1"]);
    let output = cmd
        .output()
        .with_context(|| format!("could not start `{}`", display(&cmd)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed:\n{}",
            display(&cmd),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Metadata = serde_json::from_slice(&output.stdout)
        .context("could not parse `cargo metadata` output")?;
    let crates_dir = project_root().join("crates");
    let mut crates: Vec<LibCrate> = metadata
        .packages
        .into_iter()
        .filter_map(|package| {
            let dir = package.manifest_path.parent()?.to_path_buf();
            if !dir.starts_with(&crates_dir) {
                return None;
            }
            let lib = package
                .targets
                .iter()
                .find(|t| t.kind.iter().any(|k| k == "lib"))?;
            Some(LibCrate {
                lib_name: lib.name.replace('-', "_"),
                package: package.name,
                dir,
            })
        })
        .collect();
    crates.sort_by(|a, b| a.package.cmp(&b.package));
    Ok(crates)
}

/// Generate rustdoc JSON for one crate and render its golden text.
fn render(krate: &LibCrate) -> anyhow::Result<String> {
    let target_dir = project_root().join("target").join("public-api");
    let mut cmd = cargo([
        "rustdoc",
        "--package",
        &krate.package,
        "--lib",
        "--locked",
        "--all-features",
        "--quiet",
        "--",
        "-Z",
        "unstable-options",
        "--output-format",
        "json",
    ]);
    // Only this child sees these: RUSTC_BOOTSTRAP lets stable rustdoc emit JSON, and the
    // separate target dir keeps the flag out of the developer's normal build cache.
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target_dir);
    let shown = format!(
        "RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR={} {}",
        target_dir.display(),
        display(&cmd)
    );
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }

    let json_path = target_dir
        .join("doc")
        .join(format!("{}.json", krate.lib_name));
    let json = fs::read_to_string(&json_path)
        .with_context(|| format!("could not read rustdoc JSON at {}", json_path.display()))?;
    check_format_version(&json, &json_path)?;
    let api = public_api::Builder::from_rustdoc_json(&json_path)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .with_context(|| format!("public-api could not read {}", json_path.display()))?;
    Ok(golden_text(&krate.package, &api.to_string()))
}

/// Fail with an actionable message when rustdoc emits a format the pinned parser does not know.
fn check_format_version(json: &str, path: &Path) -> anyhow::Result<()> {
    let FormatVersionOnly { format_version } = serde_json::from_str(json)
        .with_context(|| format!("{} has no readable `format_version`", path.display()))?;
    if format_version != SUPPORTED_FORMAT_VERSION {
        bail!(
            "this toolchain emits rustdoc JSON format {format_version}, but the pinned `public-api` \
             understands format {SUPPORTED_FORMAT_VERSION} only.\n\
             Fix: in the root Cargo.toml, bump `public-api` to a release whose `rustdoc-types` \
             dependency is 0.{format_version}.x and set `rustdoc-types = \"0.{format_version}\"`, \
             then run `{BLESS_COMMAND}` and review the golden-file diffs."
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn golden_text_has_header_and_trailing_newline() {
        let text = golden_text("demo", "pub fn demo::f()\r\npub mod demo");
        assert_eq!(
            text,
            "# public API of demo; regenerate with: cargo xtask public-api --bless\n\
             pub fn demo::f()\npub mod demo\n"
        );
    }

    #[test]
    fn format_version_guard_rejects_other_versions() {
        let path = Path::new("x.json");
        let ok = format!(r#"{{"root": 0, "format_version": {SUPPORTED_FORMAT_VERSION}}}"#);
        assert!(check_format_version(&ok, path).is_ok());
        let newer = format!(r#"{{"format_version": {}}}"#, SUPPORTED_FORMAT_VERSION + 1);
        let err = check_format_version(&newer, path).unwrap_err().to_string();
        assert!(err.contains("bump `public-api`"), "{err}");
        assert!(check_format_version("{}", path).is_err());
    }

    #[test]
    fn diff_shows_removed_and_added_lines() {
        let diff = unified_diff("# h\npub fn a()\n", "# h\npub fn b()\n");
        assert!(diff.contains("-pub fn a()"), "{diff}");
        assert!(diff.contains("+pub fn b()"), "{diff}");
    }

    #[test]
    fn options_parse() {
        let args = ["--bless".to_owned(), "agent".to_owned()];
        let options = Options::parse(&args).unwrap();
        assert!(options.bless);
        assert_eq!(options.crates, ["agent"]);
        assert!(Options::parse(&["--nope".to_owned()]).is_err());
    }
}
