//! `agentctl run --output-schema FILE`: the validated JSON is all stdout holds; an answer that
//! breaks the schema fails the run (exit 1) naming the path and keyword, with nothing
//! persisted; `--schema-in-prompt` puts the schema in the prompt. The reference runtime's
//! `/answer <text>` prompt answers exactly the text.

use crate::support::agentctl;

#[test]
fn the_validated_json_is_stdout_and_a_breaking_answer_fails() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let schema = root.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#,
    )
    .unwrap();
    let ws = root.to_str().unwrap();
    let schema = schema.to_str().unwrap();
    let run = |thread: &str, extra: &[&str], prompt: &str| {
        let args = [
            &[
                "run",
                "--thread",
                thread,
                "--workspace",
                ws,
                "--output-schema",
                schema,
            ][..],
            extra,
            &[prompt],
        ]
        .concat();
        agentctl(root, &args)
    };

    let good = run("good", &[], r#"/answer {"ok": true}"#);
    assert!(good.status.success(), "{good:?}");
    assert_eq!(String::from_utf8_lossy(&good.stdout), "{\"ok\":true}\n");
    assert!(String::from_utf8_lossy(&good.stderr).contains("session started"));

    let bad = run("bad", &[], r#"/answer {"ok": "secret-canary"}"#);
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
    let err = String::from_utf8_lossy(&bad.stderr);
    // The rule's place in the schema, never the answer's own keys (issue 37, fault 6).
    assert!(
        err.contains("`/properties/ok/type`") && err.contains("`type`"),
        "{err}"
    );
    assert!(!err.contains("secret-canary"), "{err}");
    assert!(bad.stdout.is_empty(), "nothing on stdout");
    let shown = agentctl(root, &["threads", "show", "bad"]);
    assert!(!shown.status.success(), "nothing persisted: {shown:?}");

    let prose = run("prose", &["--schema-in-prompt"], "/answer it is fine");
    assert_eq!(prose.status.code(), Some(1), "{prose:?}");
    assert!(String::from_utf8_lossy(&prose.stderr).contains("not JSON"));

    let missing = agentctl(
        root,
        &[
            "run",
            "--thread",
            "x",
            "--output-schema",
            "/nonexistent",
            "hi",
        ],
    );
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
}
