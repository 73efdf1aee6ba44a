//! One namespace's `mcp.json` against the scripted fake CLI: what was there before is put
//! back after a turn, concurrent turns each see their own servers (one turn at a time), and
//! the turn lock holds across processes with a bounded wait.

use std::time::{Duration, Instant};

use driver_cursor::CommonOptions;
use driver_process::command::Limits;
use driver_spi::FailureKind;
use fake_cli::{Rule, Scenario};

use crate::fixtures;
use crate::support::{CursorFake, cursor_like, failed_kind, fake_cursor, request, run};

#[tokio::test]
async fn the_namespaces_own_mcp_json_is_put_back_after_the_turn() {
    let fake = fake_cursor(cursor_like(), &[]);
    let own = br#"{"mcpServers":{"mine":{"url":"http://127.0.0.1:9/mcp"}}}"#;
    fake.env
        .write_runtime_file(&driver_cursor::RUNTIME.descriptor, "mcp.json", own)
        .unwrap();
    let driver = fake.driver(fake.options());
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    let seen = fake.seen_mcp_json(&fake.last());
    assert!(
        seen["mcpServers"].get("mine").is_none(),
        "only the request's servers"
    );
    assert_eq!(std::fs::read(fake.mcp_json()).unwrap(), own);
}

/// Two turns of one namespace at once: each CLI sees its own servers for its whole run,
/// because the second waits for the first (the fake holds each turn for 400 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_turns_of_one_namespace_each_see_their_own_servers() {
    let scenario = Scenario::new()
        .capture_dir_from_env("CURSOR_CONFIG_DIR")
        .rule(crate::support::text_turn(
            Rule::any().sleep_ms(400),
            fixtures::NEW_CHAT,
            "done: ${STDIN}",
        ));
    let fake = fake_cursor(scenario, &[]);
    let a = fake.driver(fake.options());
    let b = fake.driver(fake.options());
    let t0 = Instant::now();
    let (ra, rb) = tokio::join!(
        run(
            &a,
            request("one", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        ),
        run(
            &b,
            request("two", "http://127.0.0.1:4202/mcp", "UI_TOKEN_B", &fake)
        ),
    );
    let elapsed = t0.elapsed();
    assert_eq!(ra.0.unwrap().output, "done: one");
    assert_eq!(rb.0.unwrap().output, "done: two");
    assert!(
        elapsed >= Duration::from_millis(800),
        "the turns overlapped ({elapsed:?})"
    );
    let calls = fake.invocations();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let seen = fake.seen_mcp_json(call).to_string();
        let (mine, theirs) = if call.stdin == "one" {
            ("4101", "4202")
        } else {
            ("4202", "4101")
        };
        assert!(
            seen.contains(mine) && !seen.contains(theirs),
            "{}: {seen}",
            call.stdin
        );
    }
    assert!(!fake.mcp_json().exists());
}

/// The turn lock is a file lock: a holder in another process (here, another open of the
/// file) keeps a turn waiting, and the total timeout bounds the wait.
#[tokio::test]
async fn a_turn_waits_for_the_namespace_lock_at_most_the_total_timeout() {
    let fake = fake_cursor(cursor_like(), &[]);
    let driver = fake.driver(
        fake.options()
            .with_limits(Limits::default().with_total_timeout(Duration::from_millis(300))),
    );
    // A first turn creates the lock file.
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
    let holder = std::fs::File::open(fake.state_dir().join("sdk-turn.lock")).unwrap();
    holder.lock().unwrap();
    let calls = fake.invocations().len();
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert!(events.is_empty());
    assert_eq!(fake.invocations().len(), calls, "nothing ran");
    holder.unlock().unwrap();
    run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await
    .0
    .unwrap();
}
