//! One resume path: the compatibility code of the core (the `agent` crate, `run-service` and
//! `compat-fingerprint`) never recognises the hosted-tools provider, by type, name, service id,
//! env-var prefix or compatibility id. Hosted tools resume only through the generic
//! `RunServiceCompatibility` contract, like every ecosystem provider.
//!
//! The one file allowed to know the provider is `crates/agent/src/tools.rs`, which registers
//! tools on the builder and hands the provider over as an ordinary `Arc<dyn
//! RunServiceProvider>`. The needles come from the `hosted-tools` crate itself, so renaming
//! something there cannot silently blind this check.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::fs;
use std::path::{Path, PathBuf};

use workspace_tests::tidy::rust_files;

/// The registration module: the only core file that may name the provider.
const REGISTRATION: &str = "crates/agent/src/tools.rs";

/// Source trees that make up the core's compatibility paths.
const SCANNED: &[&str] = &[
    "crates/agent/src",
    "crates/run-service/src",
    "crates/compat-fingerprint/src",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits directly under the workspace root")
        .to_path_buf()
}

/// What identifies the hosted-tools provider, lower-cased.
fn needles() -> Vec<String> {
    let type_name = std::any::type_name::<hosted_tools::HostedToolsProvider>();
    let short = type_name.rsplit("::").next().unwrap();
    let mut needles = vec![
        "hosted".to_owned(),
        "hostedtool".to_owned(),
        short.to_owned(),
        hosted_tools::COMPATIBILITY_ID.to_owned(),
        hosted_tools::SERVICE_ID.to_owned(),
        hosted_tools::SERVICE_ID.replace('-', "_"),
        hosted_tools::TOKEN_ENV_PREFIX.to_owned(),
    ];
    for n in &mut needles {
        *n = n.to_lowercase();
    }
    needles
}

/// The needles found in `text`, with their 1-based line numbers.
fn mentions(text: &str, needles: &[String]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        for needle in needles {
            if lower.contains(needle.as_str()) {
                found.push((i + 1, needle.clone()));
            }
        }
    }
    found
}

#[test]
fn compatibility_code_never_names_the_hosted_tools_provider() {
    let root = workspace_root();
    let needles = needles();
    let mut scanned = 0;
    let mut violations = Vec::new();
    for path in rust_files(&root).unwrap() {
        let relative = path.strip_prefix(&root).unwrap().to_path_buf();
        if !SCANNED.iter().any(|dir| relative.starts_with(dir))
            || relative == Path::new(REGISTRATION)
        {
            continue;
        }
        scanned += 1;
        let text = fs::read_to_string(&path).unwrap();
        for (line, needle) in mentions(&text, &needles) {
            violations.push(format!(
                "{}:{line}: mentions {needle:?}",
                relative.display()
            ));
        }
    }
    // Guard against a walk that silently finds nothing, and name the files that must be seen.
    assert!(scanned >= 15, "only {scanned} files scanned");
    for must in [
        "crates/agent/src/pipeline/mod.rs",
        "crates/agent/src/pipeline/decide.rs",
        "crates/agent/src/compat.rs",
        "crates/agent/src/agent.rs",
        "crates/run-service/src/views.rs",
    ] {
        assert!(root.join(must).is_file(), "{must} moved: update this check");
    }
    assert!(
        violations.is_empty(),
        "the core's compatibility code recognises the hosted-tools provider \
         (only {REGISTRATION} may):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_registration_module_is_the_one_exemption_and_is_still_needed() {
    let text = fs::read_to_string(workspace_root().join(REGISTRATION)).unwrap();
    assert!(
        !mentions(&text, &needles()).is_empty(),
        "{REGISTRATION} no longer names the provider: remove the exemption"
    );
    assert!(
        text.contains("Arc<dyn RunServiceProvider>"),
        "{REGISTRATION} must hand the provider over as an ordinary trait object"
    );
}

#[test]
fn the_check_catches_every_kind_of_mention() {
    let needles = needles();
    for bad in [
        "if provider.type_id() == TypeId::of::<HostedToolsProvider>() {}",
        "// special case for hosted tools",
        "if compat.id == \"dev.agent-sdk.hosted-tools\" {}",
        "if service.id == \"agent-tools\" {}",
        "let name = \"AGENT_TOOLS_TOKEN_\";",
        "use hosted_tools::ToolSet;",
    ] {
        assert!(!mentions(bad, &needles).is_empty(), "missed {bad:?}");
    }
    assert!(mentions("let host = \"hostname\";", &needles).is_empty());
}
