//! Properties over generated allocations: the session view of an opted-in attachment ignores
//! every allocation-only detail, and the concrete view never does.

use proptest::prelude::*;
use proptest::test_runner::Config;
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef, build_views,
};

#[derive(Debug, Clone)]
struct Allocation {
    port: u16,
    env_name: String,
    token: String,
    run: u32,
}

fn allocation() -> impl Strategy<Value = Allocation> {
    (
        1024u16..,
        "[A-Z][A-Z0-9_]{0,10}",
        "[a-zA-Z0-9]{8,24}",
        any::<u32>(),
    )
        .prop_map(|(port, env_name, token, run)| Allocation {
            port,
            env_name,
            token,
            run,
        })
}

fn attachment(a: &Allocation, opted_in: bool) -> RunAttachment {
    let url = format!("http://127.0.0.1:{}/mcp", a.port);
    let att = RunAttachment::new([ServiceRef::new("ui", "UI")
        .with_url(&url)
        .with_port(a.port)
        .with_reuse_key(format!("run/{}", a.run))
        .with_mcp(McpServer::streamable_http("ui", &url).with_bearer_token_env(&a.env_name))
        .with_secret_env(EnvBinding::new(&a.env_name, a.token.as_str()))]);
    if opted_in {
        att.with_resume_compatibility(RunServiceCompatibility::new("com.example.ui", "b3:fixed"))
    } else {
        att
    }
}

fn config() -> Config {
    test_support::proptest_config(128, 0x0a11_0c47)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn session_view_ignores_allocation_for_opted_in(x in allocation(), y in allocation()) {
        let vx = build_views(&[attachment(&x, true)], &[]).unwrap();
        let vy = build_views(&[attachment(&y, true)], &[]).unwrap();
        prop_assert_eq!(vx.session.digest(), vy.session.digest());
        let concrete_differs = x.port != y.port || x.env_name != y.env_name || x.run != y.run;
        prop_assert_eq!(vx.concrete.digest() != vy.concrete.digest(), concrete_differs);
    }

    #[test]
    fn exact_attachments_track_every_concrete_change(x in allocation(), y in allocation()) {
        let vx = build_views(&[attachment(&x, false)], &[]).unwrap();
        let vy = build_views(&[attachment(&y, false)], &[]).unwrap();
        let concrete_differs = x.port != y.port || x.env_name != y.env_name || x.run != y.run;
        prop_assert_eq!(vx.session.digest() != vy.session.digest(), concrete_differs);
        prop_assert_eq!(vx.concrete.digest() != vy.concrete.digest(), concrete_differs);
    }
}
