//! `--worker`: the runtime of `agentctl run` and `threads explain` run by an `agent-worker`
//! process of the namespace (the `worker` crate's [`worker::WorkerDriver`]), and where that
//! binary is found.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::env::{EnvOptions, builder as env_builder};
use crate::{Failure, exit};

/// The reference runtime's driver run by an `agent-worker` of the namespace, launched
/// directly: the environment declares [`IsolationMode::Subprocess`], the mode in force.
///
/// [`IsolationMode::Subprocess`]: runtime_env::IsolationMode::Subprocess
pub(crate) fn reference_driver(
    env: &EnvOptions,
    worker_bin: Option<&Path>,
    workspace: &Path,
) -> Result<Arc<dyn driver_spi::Driver>, Failure> {
    let program = worker_program(worker_bin)?;
    let env = env_builder(env, workspace.to_path_buf())?
        .mode(runtime_env::IsolationMode::Subprocess)
        .build()
        .map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot build the runtime environment: {e}"),
            )
        })?;
    let config = json!({
        "kind": "reference",
        "env": {
            "base_dir": env.base_dir(),
            "namespace": env.namespace().as_str(),
            "cwd": workspace,
        },
        "prompt_tools": true,
    });
    let config = serde_json::from_value(config).map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot describe the worker's configuration: {e}"),
        )
    })?;
    let workers = worker::Workers::with_launcher(
        program,
        driver_process::pool::PoolLimits::default(),
        worker::Launcher::Direct,
    );
    let driver = worker::WorkerDriver::new(workers, Arc::new(env), config).map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot build the worker driver: {}", crate::with_causes(&e)),
        )
    })?;
    Ok(Arc::new(driver))
}

/// The `agent-worker` program: `--worker-bin`, else `agent-worker` beside agentctl's own
/// executable. A program that is not a file fails with [`exit::WORKER_MISSING`].
fn worker_program(given: Option<&Path>) -> Result<PathBuf, Failure> {
    let program = match given {
        Some(path) => path.to_path_buf(),
        None => {
            let exe = std::env::current_exe().map_err(|e| {
                Failure::new(
                    exit::WORKER_MISSING,
                    format!("cannot locate agentctl's executable to find agent-worker: {e}"),
                )
            })?;
            let name = format!("agent-worker{}", std::env::consts::EXE_SUFFIX);
            exe.parent().map(|dir| dir.join(name)).ok_or_else(|| {
                Failure::new(
                    exit::WORKER_MISSING,
                    "agentctl's executable has no directory to find agent-worker in",
                )
            })?
        }
    };
    if program.is_file() {
        Ok(program)
    } else {
        Err(Failure::new(
            exit::WORKER_MISSING,
            format!(
                "no agent-worker binary at {}: install it beside agentctl or pass --worker-bin PATH",
                program.display()
            ),
        ))
    }
}
