//! `--worker`: the runtime of `agentctl run` and `threads explain` run by an `agent-worker`
//! process of the namespace (the `worker` crate's [`worker::WorkerDriver`]), launched
//! directly or in a bubblewrap sandbox, and where those binaries are found.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_cli::{CommonArgs, ProcessMode};
use serde_json::json;
use worker::{Bubblewrap, Launcher};
use worker_protocol::{DriverConfig, WireBinding, WireEnv};

use crate::env::{EnvOptions, WorkerLaunch, builder as env_builder};
use crate::{Failure, exit};

/// The driver of a runtime run by an `agent-worker` of the namespace: the reference runtime
/// (`runtime` is `None`) or a registered runtime with its common arguments. The environment
/// declares the mode the launch puts in force ([`WorkerLaunch::mode`]).
pub(crate) fn driver(
    options: &EnvOptions,
    runtime: Option<(&'static driver_cli::Runtime, CommonArgs)>,
    workspace: &Path,
) -> Result<Arc<dyn driver_spi::Driver>, Failure> {
    let launch = options.worker.unwrap_or(WorkerLaunch::Direct);
    let program = worker_program(options.worker_bin.as_deref())?;
    let mut builder = env_builder(options, workspace.to_path_buf())?;
    if let Some((runtime, _)) = &runtime {
        builder = builder.runtimes([&runtime.descriptor]);
    }
    let env = builder.build().map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot build the runtime environment: {e}"),
        )
    })?;
    let wire_env = WireEnv {
        base_dir: env.base_dir().to_path_buf(),
        namespace: env.namespace().as_str().to_owned(),
        cwd: workspace.to_path_buf(),
        vars: Default::default(),
    };
    // What a sandbox must show read-only besides the system: the runtime's installation.
    let mut read_only = Vec::new();
    let config = match runtime {
        None => serde_json::from_value(
            json!({"kind": "reference", "env": wire_env, "prompt_tools": true}),
        )
        .map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot describe the worker's configuration: {e}"),
            )
        })?,
        Some((runtime, args)) => {
            let binary = args
                .binary
                .clone()
                .or_else(|| on_path(runtime.descriptor.program));
            if launch == WorkerLaunch::Sandbox {
                let Some(binary) = &binary else {
                    return Err(Failure::new(
                        exit::WORKER_MISSING,
                        format!(
                            "--worker=sandbox: cannot find the {} binary to show in the sandbox; \
                             pass --runtime-bin PATH or set {}",
                            runtime.name, runtime.bin_var
                        ),
                    ));
                };
                read_only.push(installation(binary));
            }
            // The key crosses on the worker's stdin only, inside the configuration message.
            DriverConfig::Registry {
                env: wire_env,
                runtime: runtime.name.to_owned(),
                binary,
                model: args.model.clone(),
                base_url: args.base_url.clone(),
                key: args.key.as_ref().map(WireBinding::from),
                resident: matches!(args.process_mode, ProcessMode::Resident(_)),
            }
        }
    };
    let launcher = match launch {
        WorkerLaunch::Direct => Launcher::Direct,
        WorkerLaunch::Sandbox => {
            let bwrap = match &options.bwrap {
                Some(path) => path.clone(),
                None => on_path("bwrap").ok_or_else(|| {
                    Failure::new(
                        exit::WORKER_MISSING,
                        "--worker=sandbox: no bwrap on PATH (install bubblewrap or pass --bwrap PATH)",
                    )
                })?,
            };
            if !bwrap.is_file() {
                return Err(Failure::new(
                    exit::WORKER_MISSING,
                    format!("--worker=sandbox: no bwrap at {}", bwrap.display()),
                ));
            }
            let sandbox = read_only
                .into_iter()
                .fold(Bubblewrap::new(bwrap), Bubblewrap::read_only);
            Launcher::Bubblewrap(sandbox)
        }
    };
    let workers = worker::Workers::with_launcher(
        program,
        driver_process::pool::PoolLimits::default(),
        launcher,
    );
    let driver = worker::WorkerDriver::new(workers, Arc::new(env), config).map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot build the worker driver: {}", crate::with_causes(&e)),
        )
    })?;
    Ok(Arc::new(driver))
}

/// `name` found in a directory of agentctl's `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The directory a sandbox must show for `binary` to run: the `node_modules` it sits in (an
/// npm installation: the launcher links into the package beside it), else its own directory.
fn installation(binary: &Path) -> PathBuf {
    let binary = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    binary
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "node_modules"))
        .or_else(|| binary.parent())
        .unwrap_or(&binary)
        .to_path_buf()
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
