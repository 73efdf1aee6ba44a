//! Two namespaces get two workers on one pool, each in its own environment: neither's HOME or
//! directories appear in the other's environment. (Same OS user, direct launch; that a
//! sandboxed worker sees neither the other's process nor its directories is in
//! `launchers.rs`.)

use std::sync::Arc;

use driver_spi::{Driver, Request};
use run_service::RunId;
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use serde_json::json;
use worker::WorkerDriver;
use worker_protocol::DriverConfig;

use crate::support::{NAMESPACE, Watch, namespace, profile, workers};

fn driver_of(
    base: &std::path::Path,
    namespace: &str,
    workers: &Arc<worker::Workers>,
) -> WorkerDriver {
    let ns: CredentialNamespace = namespace.parse().expect("a namespace");
    let config: DriverConfig = serde_json::from_value(json!({
        "kind": "reference",
        "env": {"base_dir": base.join("env"), "namespace": namespace, "cwd": base},
    }))
    .expect("a configuration");
    let env = RuntimeEnv::builder(base.join("env"), ns, base)
        .host_env(HostEnv::empty())
        .build()
        .expect("an environment");
    WorkerDriver::new(Arc::clone(workers), Arc::new(env), config).expect("a driver")
}

fn environ(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).expect("readable");
    String::from_utf8_lossy(&bytes).replace('\0', "\n")
}

fn home(environ: &str) -> String {
    environ
        .lines()
        .find_map(|l| l.strip_prefix("HOME="))
        .expect("a HOME")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_namespaces_get_two_workers_in_their_own_environments() {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = workers();
    let alice = driver_of(base.path(), "user:alice", &workers);
    let bob = driver_of(base.path(), "user:bob", &workers);
    for (driver, run) in [(&alice, "a1"), (&bob, "b1")] {
        let request = Request::new(RunId::new(run), "hello", profile());
        driver
            .run(request, Arc::new(Watch::default()))
            .await
            .expect("a turn");
    }
    let pid = |ns: &str| {
        workers
            .worker_pid(&ns.parse().expect("a namespace"))
            .expect("a worker")
    };
    let (a, b) = (pid("user:alice"), pid("user:bob"));
    assert_ne!(a, b, "one worker per namespace");
    assert_eq!(workers.live(), 2);
    let (env_a, env_b) = (environ(a), environ(b));
    let (home_a, home_b) = (home(&env_a), home(&env_b));
    assert_ne!(home_a, home_b);
    assert!(
        !env_a.contains(&home_b),
        "alice's worker sees nothing of bob's"
    );
    assert!(
        !env_b.contains(&home_a),
        "bob's worker sees nothing of alice's"
    );
    // A second turn of alice's reuses her worker.
    let again = Request::new(RunId::new("a2"), "again", profile());
    alice
        .run(again, Arc::new(Watch::default()))
        .await
        .expect("a turn");
    assert_eq!(pid("user:alice"), a);
    // Closing alice's driver ends her worker only; her next run starts a new one.
    let lifecycle = alice.process_lifecycle().expect("a lifecycle");
    lifecycle.close_processes().await.expect("closed");
    assert_eq!(workers.live(), 1);
    assert!(
        !std::path::Path::new(&format!("/proc/{a}")).exists(),
        "alice's worker ended"
    );
    let after = Request::new(RunId::new("a3"), "after", profile());
    alice
        .run(after, Arc::new(Watch::default()))
        .await
        .expect("a turn");
    assert_ne!(pid("user:alice"), a);
    assert_eq!(workers.live(), 2);
}

#[test]
fn a_plain_variable_the_configuration_does_not_name_is_refused() {
    let base = tempfile::tempdir().expect("tempdir");
    let env = RuntimeEnv::builder(base.path().join("env"), namespace(), base.path())
        .host_env(HostEnv::empty())
        .var("DEPLOY_REGION", "eu-west-9")
        .build()
        .expect("an environment");
    let env = Arc::new(env);
    let config = |vars: serde_json::Value| -> DriverConfig {
        serde_json::from_value(json!({
            "kind": "reference",
            "env": {"base_dir": base.path().join("env"), "namespace": NAMESPACE, "cwd": base.path(), "vars": vars},
        }))
        .expect("a configuration")
    };
    // In process the variable reaches the runtime; through a worker it would not, silently.
    let refused = WorkerDriver::new(workers(), Arc::clone(&env), config(json!({})));
    match refused {
        Err(worker::BuildError::UnlistedVar { name }) => {
            assert_eq!(name, "DEPLOY_REGION");
            let shown = worker::BuildError::UnlistedVar { name }.to_string();
            assert!(!shown.contains("eu-west-9"), "no value shown: {shown}");
        }
        other => panic!("refused as unlisted, not {other:?}"),
    }
    let named = WorkerDriver::new(
        workers(),
        env,
        config(json!({"DEPLOY_REGION": "eu-west-9"})),
    );
    assert!(named.is_ok(), "{named:?}");
}
