//! `agentctl support-bundle`: one JSON file an operator can attach to a support request. It
//! holds identifiers, versions, statuses and hashes only (never a value of a variable, the
//! content of a file, or a credential), all taken from `runtime-env`'s secret-free reports.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use driver_process::error::ProcessError;
use driver_process::probe::probe_version;
use driver_process::version::Version;
use serde_json::{Value, json};

use crate::env::{EnvOptions, build};
use crate::{Failure, exit};

/// Format version of the bundle.
const BUNDLE_FORMAT: u32 = 1;

/// How long one `--version` probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// Writes the bundle to `path` (0600, never over an existing file) and names it on stderr.
pub(crate) async fn write(options: &EnvOptions, path: Option<&Path>) -> Result<(), Failure> {
    let env = build(options)?;
    let summary = env.summary();
    let mut runtimes = Vec::new();
    let progress = crate::output::Progress::new();
    // Every registered CLI: its binary from its variable, else its program on PATH.
    for entry in runtimes::all() {
        let runtime = entry.name;
        progress.note(&format!("probing {runtime}…"));
        let program = std::env::var_os(entry.bin_var)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(entry.descriptor.program));
        let probed = probe_version(&env, &program, Version::new(0, 0, 0), PROBE_TIMEOUT).await;
        let (version, probe) = match probed {
            Ok(version) => (Value::String(version.to_string()), "ok"),
            Err(ProcessError::NotFound { .. }) => (Value::Null, "not_found"),
            Err(ProcessError::TotalTimeout { .. }) => (Value::Null, "timed_out"),
            Err(ProcessError::VersionUnparseable) => (Value::Null, "unparseable"),
            Err(_) => (Value::Null, "failed"),
        };
        runtimes.push(json!({"runtime": runtime, "version": version, "probe": probe}));
    }
    drop(progress);
    let bundle = json!({
        "format": BUNDLE_FORMAT,
        "sdk_version": env!("CARGO_PKG_VERSION"),
        "runtime_env": {
            "namespace": summary.namespace.to_string(),
            "level": summary.level,
            "mode": summary.mode.to_string(),
            "separates_principals": summary.separates_principals,
            "tenancy": summary.tenancy.to_string(),
            "policy_warnings": summary.policy_warnings,
        },
        "runtimes": runtimes,
        "auth": summary.auth,
        "snapshot": summary.snapshot,
    });
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            PathBuf::from(format!("agentctl-support-{secs}.json"))
        }
    };
    let text = serde_json::to_string_pretty(&bundle)
        .map_err(|e| Failure::new(exit::FAILURE, format!("cannot encode the bundle: {e}")))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot create {}: {e}", path.display()),
            )
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
