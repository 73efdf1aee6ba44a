//! A driver crate missing from the registry fails here: the workspace's packages come from
//! `cargo metadata`, as `cargo xtask conformance` reads them.

use std::process::Command;

use serde_json::{Value, json};

/// The runtime names the workspace's CLI driver crates must be registered under: each
/// `driver-<name>` package that depends on `driver-cli` and runs the driver kit
/// (`[package.metadata.conformance]`) is runtime `<name>` with `-` as `_`. The shared
/// stream-json layer and hosts depend on `driver-cli` too, but declare no suite; a layer over
/// the registry (the worker) runs the kit too, but depends on `runtimes`, which no runtime's
/// crate can (the registry depends on each). A package of that kind named otherwise is an
/// error, so the rule cannot skip it silently.
fn driver_runtimes(metadata: &Value) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let uses = |name: &str| {
            package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|d| d["name"] == name && d["kind"].is_null())
        };
        let over_the_registry = uses("runtimes");
        if !uses("driver-cli") || over_the_registry || package["metadata"]["conformance"].is_null()
        {
            continue;
        }
        // A crate that serves several entries (the ACP driver) names them.
        if let Some(entries) = package["metadata"]["conformance"]["entries"].as_array() {
            names.extend(entries.iter().filter_map(Value::as_str).map(str::to_owned));
            continue;
        }
        let package = package["name"].as_str().unwrap_or_default();
        let Some(runtime) = package.strip_prefix("driver-") else {
            return Err(format!(
                "`{package}` runs the driver kit on driver-cli but is not named driver-<runtime>"
            ));
        };
        names.push(runtime.replace('-', "_"));
    }
    names.sort();
    Ok(names)
}

/// The registered names missing from `driver_runtimes`' list.
fn missing(expected: &[String]) -> Vec<String> {
    expected
        .iter()
        .filter(|name| runtimes::find(name).is_none())
        .cloned()
        .collect()
}

fn cargo_metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn every_driver_crate_of_the_workspace_is_registered() {
    let expected = driver_runtimes(&cargo_metadata()).unwrap();
    assert!(
        expected.len() >= 5,
        "the five CLI driver crates are found: {expected:?}"
    );
    assert_eq!(
        missing(&expected),
        Vec::<String>::new(),
        "a driver crate is missing from crates/runtimes/src/lib.rs: add its `RUNTIME` there"
    );
}

fn package(name: &str, deps: &[&str], conformance: bool) -> Value {
    let dependencies: Vec<Value> = deps
        .iter()
        .map(|d| json!({"name": d, "kind": null}))
        .collect();
    let metadata = if conformance {
        json!({"conformance": {"target": "t"}})
    } else {
        Value::Null
    };
    json!({"name": name, "dependencies": dependencies, "metadata": metadata})
}

#[test]
fn the_rule_can_fail() {
    let metadata = json!({"packages": [
        package("driver-codex", &["driver-cli"], true),
        package("driver-open-code", &["driver-cli", "driver-spi"], true),
        // Not a runtime: the shared layer, a host, the reference driver's suite.
        package("driver-stream-json", &["driver-cli"], false),
        package("agentctl", &["driver-cli"], false),
        package("driver-spi", &[], true),
        // A layer over the registry runs the kit on it, but is no runtime.
        package("worker", &["driver-cli", "runtimes"], true),
    ]});
    let expected = driver_runtimes(&metadata).unwrap();
    assert_eq!(expected, ["codex", "open_code"]);
    assert_eq!(missing(&expected), ["open_code"]);

    let misnamed = json!({"packages": [package("opencode", &["driver-cli"], true)]});
    assert!(driver_runtimes(&misnamed).is_err());
}
