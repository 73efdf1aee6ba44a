//! A configuration's secret reaches the worker on its stdin only: never its argv or its
//! environment, nor anything `Debug` shows on the host.

use driver_spi::{Driver, DriverError, FailureKind};
use serde_json::json;
use worker_protocol::DriverConfig;

use crate::support::{namespace, wire_env, worker_driver};

const CANARY: &str = "sk-worker-canary-5b1e9d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_key_is_in_no_argv_environment_or_debug_of_the_worker() {
    let base = tempfile::tempdir().expect("tempdir");
    let config: DriverConfig = serde_json::from_value(json!({
        "kind": "registry",
        "env": wire_env(base.path()),
        "runtime": "codex",
        "key": {"name": "OPENAI_API_KEY", "value": CANARY},
    }))
    .expect("a registry configuration");
    assert!(!format!("{config:?}").contains(CANARY));
    let (driver, workers) = worker_driver(base.path(), config);
    assert!(!format!("{driver:?}").contains(CANARY));
    // The worker is a process kept between runs, whatever the CLI's own mode.
    assert!(driver.descriptor().capabilities.persistent_processes);
    assert!(driver.process_lifecycle().is_some());
    // Starts the worker and configures the driver there (the key crosses); a registry driver
    // is then refused as not scriptable, a protocol answer, not a configuration error.
    let refused = driver.script(Vec::new()).await;
    assert!(
        matches!(&refused, Err(DriverError::Failed(f)) if f.kind == FailureKind::Protocol),
        "{refused:?}"
    );
    let pid = workers.worker_pid(&namespace()).expect("a worker");
    for file in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{file}")).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(CANARY), "the key is in the worker's {file}");
    }
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("readable");
    let home = base.path().join("env");
    assert!(
        String::from_utf8_lossy(&environ).contains(&*home.to_string_lossy()),
        "the worker runs in the namespace's environment"
    );
}
