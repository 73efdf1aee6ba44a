//! The real `gemini` under the permission policy, offline against the test kit's Gemini mock:
//! Gemini cannot ask the host, so the driver accepts only the default policy, and headless
//! Gemini holds it: the mock model calls Gemini's own `write_file`, and no file is written;
//! a policy that asks or allows writes is refused before Gemini runs.
//!
//! Needs `GEMINI_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::sync::Arc;

use cli_test_kit::run;
use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{
    Action, Driver as _, DriverError, PermissionPolicy, ProfilePayload, Request, SessionContext,
    Unsupported,
};
use run_service::RunId;
use test_kit::gemini::MockGemini;
use test_kit::{Reply, Script};

const K: Kind = Kind::new("driver-gemini 2026-12-03 permissions test v1");

#[test]
fn gemini_writes_nothing_under_the_default_policy_and_refuses_any_other() {
    let Some(bin) = test_kit::real_cli::binary(
        "GEMINI_BIN",
        "driver-gemini permissions against the real gemini",
    ) else {
        return;
    };
    let (dir, workspace) = test_kit::approvals::workspace();
    let file = workspace.join("forbidden.txt");
    let model = MockGemini::start(
        Script::new()
            .then(Reply::builtin_call(
                "write_file",
                serde_json::json!({"file_path": file, "content": "written by the model\n"}),
            ))
            .then(Reply::text("done")),
    )
    .unwrap();
    let driver = Arc::new(crate::real_binary::driver(dir.path(), &bin, &model));
    let fp = Fingerprint::of(K, |e| e.str("p"));
    let request = |policy: PermissionPolicy| {
        Request::new(
            RunId::new("r"),
            "write the file",
            ProfilePayload::new(fp, fp),
        )
        .with_session(SessionContext::stateless())
        .with_workspace(workspace.to_string_lossy())
        .with_permissions(policy)
    };
    test_kit::real_cli::block_on(async {
        // Refused before Gemini runs: asking (no approvals), and allowing writes.
        let asks = run(
            &*driver,
            request(PermissionPolicy::default().ask(Action::Write)),
        )
        .await;
        assert!(
            matches!(
                asks.0,
                Err(DriverError::Unsupported(Unsupported::Approvals))
            ),
            "{:?}",
            asks.0
        );
        let writes = run(
            &*driver,
            request(PermissionPolicy::default().allow(Action::Write)),
        )
        .await;
        assert!(
            matches!(
                writes.0,
                Err(DriverError::Unsupported(Unsupported::Permission { .. }))
            ),
            "{:?}",
            writes.0
        );
        assert!(model.model_requests().is_empty(), "nothing reached Gemini");

        // The default policy: the model asks to write, Gemini does not.
        let (result, _) = run(&*driver, request(PermissionPolicy::default())).await;
        let response = result.unwrap();
        assert!(response.is_clean(), "{:?}", response.failure);
        assert!(!file.exists(), "headless Gemini wrote the file");
        let declared = model.model_requests()[0].tool_names();
        assert!(
            !declared.iter().any(|t| t == "write_file"),
            "headless Gemini offers no write tool: {declared:?}"
        );
    });
    assert!(!driver.descriptor().capabilities.approvals);
}
