//! The pinned binary's schema for the methods above, against the blessed subset in
//! `tests/fixtures/codex-0.169.0/app-server-schema.json` (re-bless a reviewed change with
//! `BLESS=1`). Needs `CODEX_BIN`: `SKIPPED` locally without it, a failure under CI.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{NOTIFICATIONS, REQUESTS, SERVER_REQUESTS};

/// Every `#/definitions/NAME` reference inside `value`.
fn references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref")
                && let Some(name) = r.strip_prefix("#/definitions/")
            {
                found.push(name.to_owned());
            }
            map.values().for_each(|v| references(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

/// The same value with every object's keys in order, so the fixture diffs cleanly.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, sorted(v)))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The params schema of each of `methods` in the bundle file `file`, and every definition
/// they reach; a method the binary no longer has is a `null` entry.
fn subset(dir: &Path, file: &str, methods: &[&str], definitions: &mut Map<String, Value>) -> Value {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let variants = doc["oneOf"].as_array().cloned().unwrap_or_default();
    let mut out = Map::new();
    for method in methods {
        let params = variants
            .iter()
            .find(|v| v["properties"]["method"]["enum"][0] == *method)
            .map(|v| v["properties"]["params"].clone())
            .unwrap_or(Value::Null);
        let mut todo = Vec::new();
        references(&params, &mut todo);
        while let Some(name) = todo.pop() {
            if definitions.contains_key(&name) {
                continue;
            }
            let definition = doc["definitions"][&name].clone();
            references(&definition, &mut todo);
            definitions.insert(name, definition);
        }
        out.insert((*method).to_owned(), params);
    }
    Value::Object(out)
}

#[test]
fn the_pinned_binarys_schema_is_unchanged_for_every_method_the_dialect_uses() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "codex app-server schema check") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("schema");
    let status = std::process::Command::new(&bin)
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(&out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .current_dir(home.path())
        .status()
        .unwrap();
    assert!(status.success(), "generate-json-schema: {status}");

    let mut definitions = Map::new();
    let mut current = Map::new();
    for (key, file, methods) in [
        ("requests", "ClientRequest.json", REQUESTS),
        ("notifications", "ServerNotification.json", NOTIFICATIONS),
        ("server_requests", "ServerRequest.json", SERVER_REQUESTS),
    ] {
        current.insert(
            key.to_owned(),
            subset(&out, file, methods, &mut definitions),
        );
    }
    current.insert("definitions".to_owned(), Value::Object(definitions));
    let current = sorted(Value::Object(current));
    for (key, methods) in [
        ("requests", REQUESTS),
        ("notifications", NOTIFICATIONS),
        ("server_requests", SERVER_REQUESTS),
    ] {
        for method in methods {
            assert!(
                !current[key][method].is_null(),
                "the binary has no `{method}`"
            );
        }
    }

    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/codex-0.169.0/app-server-schema.json");
    let text = serde_json::to_string_pretty(&current).unwrap() + "\n";
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&fixture, &text).unwrap();
        return;
    }
    let blessed = std::fs::read_to_string(&fixture).unwrap_or_default();
    assert!(
        blessed == text,
        "the pinned codex app-server schema changed for a method the dialect uses: review \
         the diff of {} after re-blessing with BLESS=1",
        fixture.display()
    );
}
