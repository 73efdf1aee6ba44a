//! Launchers: a worker started through a command prefix and in a bubblewrap sandbox; the
//! cross-tenant test (tenant A's real Codex, allowed to run commands, cannot read tenant B's
//! namespace in the sandbox, can read its own, and can read B's without the sandbox: the
//! hole this closes); and a SIGKILLed sandboxed worker takes its CLI children with it.
//!
//! A test that needs `bwrap` and finds none prints `SKIPPED` and returns, but fails under CI
//! (`.ci/run` installs Debian's `bubblewrap`), as the real-binary rule of `test_kit::real_cli`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use driver_process::pool::PoolLimits;
use driver_spi::{Action, Driver, PermissionPolicy, Request};
use run_service::RunId;
use runtime_env::{CredentialNamespace, HostEnv, RuntimeEnv};
use serde_json::json;
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};
use worker::{Bubblewrap, Launcher, Prefix, WorkerDriver, Workers};
use worker_protocol::{DriverConfig, WireEnv};

use crate::support::{Watch, kill, namespace, profile, reference};

const MODEL_KEY: &str = "sk-worker-launcher-canary-41ac";
const A_CONTENT: &str = "tenant-a-own-note-5d1e";
const B_SECRET: &str = "tenant-b-secret-93f0";

/// The `bwrap` binary, or `None` after a visible `SKIPPED` line (a failure under CI).
fn bwrap(what: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("bwrap"))
            .find(|p| p.is_file())
    });
    if found.is_some() {
        return found;
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{what}: bwrap not found; CI must run the sandbox tests (see .ci/run)");
    }
    // Straight to the file descriptor: libtest captures `eprintln!` only.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what} (bwrap not found)");
    None
}

/// One reference turn through a worker started by `launcher`; then checks that the
/// `agent-worker` process (the spawned process or one under it) holds no variable outside the
/// namespace's allow-list: a launcher adds nothing of the host's. (`bwrap` sets `PWD`, the
/// workspace it changed into, which is no host variable.)
async fn reference_turn(launcher: Launcher) {
    let base = tempfile::tempdir().expect("tempdir");
    let workers = Workers::with_launcher(
        env!("CARGO_BIN_EXE_agent-worker"),
        PoolLimits::default(),
        launcher,
    );
    let env = RuntimeEnv::builder(base.path().join("env"), namespace(), base.path())
        .host_env(HostEnv::empty())
        .build()
        .expect("the namespace's environment");
    let allowed = env.child_env().names();
    let driver = WorkerDriver::new(
        Arc::clone(&workers),
        Arc::new(env),
        reference(base.path(), &[]),
    )
    .expect("a worker driver");
    let request = Request::new(RunId::new("r1"), "hello", profile());
    let response = driver
        .run(request, Arc::new(Watch::default()))
        .await
        .expect("a turn through the launched worker");
    assert!(response.is_clean(), "{response:?}");
    let spawned = workers.worker_pid(&namespace()).expect("a worker");
    let worker = std::iter::once((spawned, String::new()))
        .chain(descendants(spawned))
        .find(|(pid, _)| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("agent-worker"))
                && stat(*pid).is_some_and(|(_, comm)| comm == "agent-worker")
        })
        .expect("the agent-worker process");
    let environ = std::fs::read(format!("/proc/{}/environ", worker.0)).expect("its environment");
    for var in environ.split(|b| *b == 0).filter(|v| !v.is_empty()) {
        let var = String::from_utf8_lossy(var);
        let name = var.split_once('=').map_or(&*var, |(name, _)| name);
        assert!(
            name == "PWD" || allowed.iter().any(|a| a == name),
            "{name} reached the worker outside the allow-list"
        );
    }
    workers.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_behind_a_command_prefix() {
    // `setsid --wait env --` stands for `ssh HOST` or `docker exec -i …`: commands that run
    // the worker with their stdio passed through and last as long as it does.
    reference_turn(Launcher::Prefix(Prefix::new(
        "setsid",
        ["--wait", "env", "--"],
    )))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_in_a_bubblewrap_sandbox() {
    let Some(bwrap) = bwrap("a worker in bubblewrap") else {
        return;
    };
    reference_turn(Launcher::Bubblewrap(Bubblewrap::new(bwrap))).await;
}

#[test]
fn bubblewrap_refuses_an_environment_at_the_shared_level() {
    let base = tempfile::tempdir().expect("tempdir");
    let env = RuntimeEnv::builder(base.path().join("env"), namespace(), base.path())
        .level(runtime_env::IsolationLevel::Shared)
        .host_env(HostEnv::from_vars([("HOME", base.path())]))
        .build()
        .expect("a shared environment");
    let workers = Workers::with_launcher(
        env!("CARGO_BIN_EXE_agent-worker"),
        PoolLimits::default(),
        Launcher::Bubblewrap(Bubblewrap::new("/usr/bin/bwrap")),
    );
    let refused = WorkerDriver::new(workers, Arc::new(env), reference(base.path(), &[]));
    assert!(
        matches!(refused, Err(worker::BuildError::SharedLevel)),
        "{refused:?}"
    );
}

#[test]
fn a_declared_worker_mode_needs_a_launcher_with_a_boundary() {
    let base = tempfile::tempdir().expect("tempdir");
    let declared = |mode| {
        RuntimeEnv::builder(base.path().join("env"), namespace(), base.path())
            .mode(mode)
            .host_env(HostEnv::empty())
            .build()
            .expect("an environment")
    };
    let direct = || {
        Workers::with_launcher(
            env!("CARGO_BIN_EXE_agent-worker"),
            PoolLimits::default(),
            Launcher::Direct,
        )
    };
    // Claiming a principal boundary the direct launch does not have is refused.
    let overstated = WorkerDriver::new(
        direct(),
        Arc::new(declared(runtime_env::IsolationMode::Worker)),
        reference(base.path(), &[]),
    );
    assert!(
        matches!(overstated, Err(worker::BuildError::OverstatedMode)),
        "{overstated:?}"
    );
    // What the direct launch is, and an understatement of the sandbox, are accepted.
    let honest = WorkerDriver::new(
        direct(),
        Arc::new(declared(runtime_env::IsolationMode::Subprocess)),
        reference(base.path(), &[]),
    );
    assert!(honest.is_ok(), "{honest:?}");
    let sandboxed = Workers::with_launcher(
        env!("CARGO_BIN_EXE_agent-worker"),
        PoolLimits::default(),
        Launcher::Bubblewrap(Bubblewrap::new("/usr/bin/bwrap")),
    );
    let understated = WorkerDriver::new(
        sandboxed,
        Arc::new(declared(runtime_env::IsolationMode::Subprocess)),
        reference(base.path(), &[]),
    );
    assert!(understated.is_ok(), "{understated:?}");
}

/// One tenant's Codex on `base`, its workspace of its own, run by `workers`.
struct Tenant {
    env: Arc<RuntimeEnv>,
    config: DriverConfig,
}

fn tenant(base: &Path, name: &str, codex: &Path, model: &MockResponses) -> Tenant {
    let namespace: CredentialNamespace = format!("user:{name}").parse().expect("a namespace");
    let workspace = base.join(format!("work-{name}"));
    std::fs::create_dir_all(&workspace).expect("a workspace");
    // PATH for the CLI's Node wrapper.
    let env = RuntimeEnv::builder(base.join("env"), namespace.clone(), &workspace)
        .host_env(HostEnv::capture())
        .build()
        .expect("the namespace's environment");
    let wire = WireEnv {
        base_dir: base.join("env"),
        namespace: namespace.as_str().to_owned(),
        cwd: workspace,
        vars: Default::default(),
    };
    let config = serde_json::from_value(json!({
        "kind": "registry",
        "env": wire,
        "runtime": "codex",
        "binary": codex,
        "base_url": model.base_url(),
        "key": {"name": "OPENAI_API_KEY", "value": MODEL_KEY},
    }))
    .expect("a codex configuration");
    Tenant {
        env: Arc::new(env),
        config,
    }
}

/// Where the Codex package lives (`…/node_modules`), which a sandbox must show read-only.
fn codex_modules(codex: &Path) -> PathBuf {
    codex
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "node_modules"))
        .unwrap_or_else(|| codex.parent().expect("a directory"))
        .to_path_buf()
}

/// Commands allowed (Codex's read-only sandbox, approval `never`): the command runs.
fn commands_allowed() -> PermissionPolicy {
    PermissionPolicy::default().allow(Action::Commands)
}

/// Tenant A's agent runs `cat path` through a worker started by `launcher`: what the
/// command's output told the model.
async fn cat_as_a(base: &Path, codex: &Path, launcher: Launcher, path: &Path) -> String {
    let workers = Workers::with_launcher(
        env!("CARGO_BIN_EXE_agent-worker"),
        PoolLimits::default(),
        launcher,
    );
    let output = command_as_a(base, codex, &workers, &format!("cat '{}'", path.display())).await;
    workers.close().await;
    output
}

/// Tenant A's agent runs the shell command `cmd` through its worker on `workers`: what the
/// command's output told the model.
async fn command_as_a(base: &Path, codex: &Path, workers: &Arc<Workers>, cmd: &str) -> String {
    let script = Script::new()
        .then(Reply::builtin_call("exec_command", json!({ "cmd": cmd })))
        .then(Reply::text("done"));
    let model = MockResponses::start(script).expect("a mock model");
    let a = tenant(base, "alice", codex, &model);
    let driver = WorkerDriver::new(Arc::clone(workers), a.env, a.config).expect("a driver");
    let request = Request::new(RunId::new("cmd"), "run the command", profile())
        .with_permissions(commands_allowed());
    let sink = Arc::new(Watch::default());
    let response = driver.run(request, sink).await.expect("a turn");
    let outputs: Vec<String> = model
        .model_requests()
        .iter()
        .flat_map(|r| r.function_call_outputs())
        .map(|o| o.output)
        .collect();
    assert!(!outputs.is_empty(), "the command ran: {response:?}");
    outputs.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_tenant_cannot_read_another_tenants_namespace() {
    let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "cross-tenant through the worker")
    else {
        return;
    };
    let Some(bwrap) = bwrap("cross-tenant through the worker") else {
        return;
    };
    let base = tempfile::tempdir().expect("tempdir");
    let model = MockResponses::start(Script::new()).expect("a mock model");
    let a = tenant(base.path(), "alice", &codex, &model);
    let b = tenant(base.path(), "bob", &codex, &model);
    let mine = a.env.home().join("note.txt");
    let theirs = b.env.home().join("credentials.txt");
    std::fs::write(&mine, A_CONTENT).expect("A's file");
    std::fs::write(&theirs, B_SECRET).expect("B's file");
    let sandbox = Launcher::Bubblewrap(Bubblewrap::new(bwrap).read_only(codex_modules(&codex)));

    let b_in_sandbox = cat_as_a(base.path(), &codex, sandbox.clone(), &theirs).await;
    assert!(
        !b_in_sandbox.contains(B_SECRET),
        "B's secret reached A's model in the sandbox: {b_in_sandbox}"
    );
    assert!(
        b_in_sandbox.contains("No such file or directory"),
        "B's namespace is not visible at all: {b_in_sandbox}"
    );
    let a_in_sandbox = cat_as_a(base.path(), &codex, sandbox, &mine).await;
    assert!(
        a_in_sandbox.contains(A_CONTENT),
        "A reads its own file in the sandbox: {a_in_sandbox}"
    );
    // The control: without the sandbox the same command reads B's file (the hole), so the
    // first check cannot pass because the command never ran.
    let b_direct = cat_as_a(base.path(), &codex, Launcher::Direct, &theirs).await;
    assert!(
        b_direct.contains(B_SECRET),
        "the direct launcher shows the same-user hole: {b_direct}"
    );
}

/// Two tenants' workers live side by side. Tenant A's worker starts through a probe (a
/// script that looks for tenant B's worker, its `/proc/<pid>/environ`, which names B's HOME,
/// and B's namespace directory, writes what it saw into A's HOME, and then becomes the
/// worker): whatever A's worker or an agent under it runs has the same view. In the sandbox
/// neither is visible (a PID namespace of its own, only its own directories); with the
/// direct launch both are, the control that shows the check is not vacuous. (Both launchers
/// run as the host's uid: the sandbox separates by what it shows, not by uid. A probe is used
/// rather than a CLI's command tool because Codex runs commands in its own bubblewrap, whose
/// PID namespace would hide B's process even without ours.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_worker_sees_neither_the_other_tenants_worker_nor_its_directories() {
    let Some(bwrap) = bwrap("two sandboxed tenants") else {
        return;
    };
    let worker_bin = Path::new(env!("CARGO_BIN_EXE_agent-worker"));
    let worker_dir = worker_bin.parent().expect("the worker's directory");
    let sandbox = Launcher::Bubblewrap(Bubblewrap::new(bwrap).read_only(worker_dir));
    for (launcher, separated) in [(sandbox, true), (Launcher::Direct, false)] {
        let base = tempfile::tempdir().expect("tempdir");
        let probes = tempfile::tempdir().expect("tempdir");
        let tenant_env = |name: &str| {
            let ns: CredentialNamespace = format!("user:{name}").parse().expect("a namespace");
            // Each tenant's workspace is its own (a sandbox shows its workspace writable).
            let work = base.path().join(format!("work-{name}"));
            std::fs::create_dir_all(&work).expect("a workspace");
            let env = RuntimeEnv::builder(base.path().join("env"), ns.clone(), &work)
                .host_env(HostEnv::empty())
                .build()
                .expect("an environment");
            let config = serde_json::from_value(json!({
                "kind": "reference",
                "env": {"base_dir": base.path().join("env"), "namespace": ns.as_str(), "cwd": work},
            }))
            .expect("a configuration");
            (Arc::new(env), config)
        };
        // B's worker runs a turn and stays live.
        let b_workers = Workers::with_launcher(worker_bin, PoolLimits::default(), launcher.clone());
        let (b_env, b_config) = tenant_env("bob");
        let b_home = format!("HOME={}", b_env.home().display());
        let b_root = b_env.root().expect("a namespace root").to_path_buf();
        let b_namespace = b_env.namespace().clone();
        let b = WorkerDriver::new(Arc::clone(&b_workers), b_env, b_config).expect("a driver");
        let request = Request::new(RunId::new("b"), "hello", profile());
        b.run(request, Arc::new(Watch::default()))
            .await
            .expect("B's turn");
        let b_pid = b_workers.worker_pid(&b_namespace).expect("B's worker");

        // A's worker starts through the probe.
        let probe = probes.path().join("probe.sh");
        std::fs::write(
            &probe,
            format!(
                "#!/bin/sh\n{{ tr '\\0' '\\n' < /proc/{b_pid}/environ; ls -a '{}'; }} > \"$HOME/probe.txt\" 2>&1\nexec '{}' \"$@\"\n",
                b_root.display(),
                worker_bin.display()
            ),
        )
        .expect("the probe");
        std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("executable");
        let a_workers = Workers::with_launcher(&probe, PoolLimits::default(), launcher);
        let (a_env, a_config) = tenant_env("alice");
        let seen_at = a_env.home().join("probe.txt");
        let a = WorkerDriver::new(Arc::clone(&a_workers), a_env, a_config).expect("a driver");
        let request = Request::new(RunId::new("a"), "hello", profile());
        a.run(request, Arc::new(Watch::default()))
            .await
            .expect("A's turn, after the probe");
        let seen = std::fs::read_to_string(&seen_at).expect("the probe ran as A's worker");
        assert_eq!(
            b_workers.worker_pid(&b_namespace),
            Some(b_pid),
            "B's worker lived on"
        );
        if separated {
            assert!(!seen.contains(&b_home), "A saw B's environment: {seen}");
            // `sh` says "No such file", `ls` "No such file or directory".
            assert_eq!(
                seen.matches("No such file").count(),
                2,
                "neither B's process nor B's directory is visible: {seen}"
            );
            assert!(!seen.contains("config"), "{seen}");
        } else {
            assert!(
                seen.contains(&b_home),
                "the direct launch shows B's environment to A (the hole): {seen}"
            );
            assert!(seen.contains("config"), "and B's directories: {seen}");
        }
        a_workers.close().await;
        b_workers.close().await;
    }
}

/// The processes whose parent chain reaches `root` (not `root` itself).
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, comm)) = stat(pid) {
            parents.push((pid, ppid, comm));
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, ppid, comm) in &parents {
            if *ppid == parent {
                found.push((*pid, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    found
}

/// The parent and name of a live (not zombie) process.
fn stat(pid: u32) -> Option<(u32, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (name, rest) = text.rsplit_once(')')?;
    let comm = name.split_once('(')?.1.to_owned();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    Some((fields.next()?.parse().ok()?, comm))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_sandboxed_worker_takes_its_cli_children_with_it() {
    let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "SIGKILL of a sandboxed worker")
    else {
        return;
    };
    let Some(bwrap) = bwrap("SIGKILL of a sandboxed worker") else {
        return;
    };
    let base = tempfile::tempdir().expect("tempdir");
    let script = Script::new()
        .then(Reply::builtin_call(
            "exec_command",
            json!({ "cmd": "sleep 120", "yield_time_ms": 120_000 }),
        ))
        .then(Reply::text("done"));
    let model = MockResponses::start(script).expect("a mock model");
    let a = tenant(base.path(), "alice", &codex, &model);
    let workers = Workers::with_launcher(
        env!("CARGO_BIN_EXE_agent-worker"),
        PoolLimits::default(),
        Launcher::Bubblewrap(Bubblewrap::new(bwrap).read_only(codex_modules(&codex))),
    );
    let namespace = a.env.namespace().clone();
    let driver = WorkerDriver::new(Arc::clone(&workers), a.env, a.config).expect("a driver");
    let run = tokio::spawn(async move {
        let request = Request::new(RunId::new("sleep"), "sleep", profile())
            .with_permissions(commands_allowed());
        driver.run(request, Arc::new(Watch::default())).await
    });
    // Wait until the CLI's command runs inside the sandbox.
    let mut children = Vec::new();
    for _ in 0..600 {
        if let Some(pid) = workers.worker_pid(&namespace) {
            children = descendants(pid);
            if children.iter().any(|(_, comm)| comm == "sleep") {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        children.iter().any(|(_, comm)| comm == "sleep"),
        "the CLI's command ran under the worker: {children:?}"
    );
    kill(workers.worker_pid(&namespace).expect("a worker")).await;
    let _ = run.await.expect("joined");
    let mut left = children.clone();
    for _ in 0..100 {
        left.retain(|(pid, _)| stat(*pid).is_some());
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "processes outlived the worker: {left:?}");
}
