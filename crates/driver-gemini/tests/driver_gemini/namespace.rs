//! The namespace the Gemini driver shares with everything else: its own `settings.json` and
//! instructions are kept under the turn's and put back afterwards (also after a cancelled
//! run), concurrent turns take turns, and a turn lock held elsewhere bounds the wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{
    GeminiFake, RESULT, failed_kind, fake_gemini, gemini_like, init, request, run,
};
use driver_gemini::CommonOptions;
use driver_process::command::Limits;
use driver_spi::{CollectingSink, Driver, FailureKind};
use fake_cli::{Rule, Scenario};
use serde_json::json;

fn started() -> Rule {
    Rule::any().stdout(init("${ARG_AFTER:--session-id}"))
}

#[tokio::test]
async fn the_namespaces_own_settings_are_kept_and_put_back() {
    let fake = fake_gemini(gemini_like(), &[]);
    let dot = fake.state_dir().join(".gemini");
    let own = json!({
        "ui": {"theme": "Dracula"},
        "security": {"auth": {"selectedType": "oauth-personal"}},
        "mcpServers": {"old": {"httpUrl": "http://127.0.0.1:1/old"}},
    })
    .to_string();
    fake.env
        .write_runtime_file(
            &driver_gemini::RUNTIME.descriptor,
            ".gemini/settings.json",
            own.as_bytes(),
        )
        .unwrap();
    let driver = fake.driver(fake.keyed_options());
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_instructions("Be brief.");
    assert!(run(&driver, req).await.0.unwrap().is_clean());
    // During the turn: the namespace's settings under the driver's, only the request's server.
    let seen = fake.settings_json(&fake.last());
    assert_eq!(seen["ui"]["theme"], "Dracula");
    assert_eq!(seen["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(
        seen["mcpServers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["agent-tools"]
    );
    // After it: the file as it was, and no instructions file.
    assert_eq!(
        std::fs::read_to_string(dot.join("settings.json")).unwrap(),
        own
    );
    assert!(!dot.join("sdk-instructions.md").exists());

    // A file Gemini reads but serde does not (comments) is hidden for the turn, then back.
    let commented = "// the namespace's own\n{\"ui\": {}}\n";
    std::fs::write(dot.join("settings.json"), commented).unwrap();
    let req = request("again", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake);
    assert!(run(&driver, req).await.0.unwrap().is_clean());
    assert!(fake.settings_json(&fake.last()).get("ui").is_none());
    assert_eq!(
        std::fs::read_to_string(dot.join("settings.json")).unwrap(),
        commented
    );
}

#[tokio::test]
async fn a_cancelled_turn_puts_the_files_back() {
    let fake = fake_gemini(
        Scenario::new()
            .capture_dir_from_env("GEMINI_CLI_HOME")
            .rule(started().hang()),
        &[],
    );
    let driver = fake.driver(fake.options());
    let req = request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        .with_instructions("Be brief.");
    let settings = fake.state_dir().join(".gemini/settings.json");
    let mut running = Box::pin(driver.run(req, Arc::new(CollectingSink::new())));
    tokio::time::timeout(Duration::from_secs(30), async {
        while fake.invocations().is_empty() {
            tokio::select! {
                _ = &mut running => panic!("the run must hang"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    })
    .await
    .expect("the CLI started");
    assert!(settings.exists());
    drop(running);
    assert!(
        !settings.exists(),
        "no settings of the cancelled turn remain"
    );
    assert!(!settings.with_file_name("sdk-instructions.md").exists());
}

#[tokio::test]
async fn a_turn_lock_held_elsewhere_bounds_the_wait() {
    let fake = fake_gemini(gemini_like(), &[]);
    let path = fake.state_dir().join(driver_cli::TURN_LOCK_FILE);
    // Another holder (another host process, say) keeps the lock.
    let holder = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap();
    holder.lock().unwrap();
    let driver = fake.driver(
        fake.options()
            .with_limits(Limits::default().with_total_timeout(Duration::from_millis(300))),
    );
    let (result, events) = run(
        &driver,
        request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake),
    )
    .await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert!(events.is_empty());
    assert!(fake.invocations().is_empty(), "nothing ran");
    drop(holder);
    assert!(
        run(
            &driver,
            request("hi", "http://127.0.0.1:4101/mcp", "UI_TOKEN_A", &fake)
        )
        .await
        .0
        .unwrap()
        .is_clean()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_turns_of_one_namespace_take_turns() {
    // Each turn sleeps while "running"; each must have seen its own settings.
    let fake = fake_gemini(
        Scenario::new()
            .capture_dir_from_env("GEMINI_CLI_HOME")
            .rule(
                started()
                    .sleep_ms(400)
                    .stdout(r#"{"type":"message","role":"assistant","content":"ok","delta":true}"#)
                    .stdout(RESULT),
            ),
        &[],
    );
    let a = fake.driver(fake.options());
    let b = fake.driver(fake.options());
    let began = Instant::now();
    let (ra, rb) = tokio::join!(
        run(
            &a,
            request("a", "http://127.0.0.1:4101/mcp", "TOKEN_A", &fake)
        ),
        run(
            &b,
            request("b", "http://127.0.0.1:4202/mcp", "TOKEN_B", &fake)
        ),
    );
    assert!(ra.0.unwrap().is_clean() && rb.0.unwrap().is_clean());
    assert_eq!(fake.invocations().len(), 2);
    assert!(
        began.elapsed() >= Duration::from_millis(800),
        "the turns overlapped"
    );
    // The shared driver's turn lock: a private regular file in `GEMINI_CLI_HOME`.
    let lock =
        std::fs::symlink_metadata(fake.state_dir().join(driver_cli::TURN_LOCK_FILE)).unwrap();
    assert!(lock.is_file());
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&lock.permissions()) & 0o777,
        0o600
    );
    for call in fake.invocations() {
        let text = &fake.settings(&call).contents;
        let (own, other) = if call.stdin == "a" {
            ("4101", "4202")
        } else {
            ("4202", "4101")
        };
        assert!(text.contains(own) && !text.contains(other), "{text}");
    }
}
