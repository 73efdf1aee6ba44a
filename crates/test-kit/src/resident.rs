//! The resident-process scenario every resident-capable driver's real-CLI test runs, written
//! once.
//!
//! [`run_resident_scenario`] plays, against a real CLI kept alive between turns (the driver
//! built with a resident process mode), offline:
//! 1. **Reuse.** One driver shared by two agents over one SQLite store, each with its own
//!    bearer-checking hosted `ping` tool (its own port, token and env-var name). Host 1 runs
//!    two turns of Thread [`THREAD`]: the first calls host 1's `ping`; a resident process is
//!    alive between the turns, and the second turn runs on the same processes (the same pids
//!    from `/proc`). The pool, when it reports, counts one start and one reuse.
//! 2. **Recycle.** Host 2 resumes the Thread (`resume_only`). Its tools differ (the rotation),
//!    so the old process is retired and a new one resumes the session: the old pids are gone,
//!    new ones serve, the pool counts a second start and one recycle. The tool call reaches
//!    host 2's server (which admits only host 2's token), and the model's request carries the
//!    earlier turns.
//! 3. **Fork.** Host 2 forks the Thread into [`FORK`]: the model sees the parent's history, and
//!    the child's provider session differs from the parent's.
//! 4. **Close.** `Agent::close` of both hosts leaves no process of the CLI behind.
//!
//! The driver test supplies the shared driver, how to list its CLI's live processes (usually
//! [`processes_with_env`] with the CLI's argv marker and its state-dir variable), the pool's
//! counts, and a view of the mock's model requests ([`ResidentSetup`]); the mock is scripted
//! with [`resident_script`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent::SessionOutcome;
use driver_spi::Driver;
use hosted_tools::{HostedToolsProvider, ToolSet};
use serde_json::json;

use crate::hosts::{Calls, agent, last_call, ping_tool};
use crate::restart::TOOL_SERVER;
use crate::{RecordedRequest, Reply, Script};

/// The Thread key of the scenario.
pub const THREAD: &str = "t";
/// The Thread key of the fork.
pub const FORK: &str = "t-fork";
/// Host 1's first prompt: the model calls `ping` with `one`.
pub const FIRST_PROMPT: &str = "Call ping with one.";
/// The model's answer after host 1's tool call.
pub const FIRST_ANSWER: &str = "Answer one.";
/// Host 1's second prompt, on the same process.
pub const SECOND_PROMPT: &str = "Just answer.";
/// The model's answer to [`SECOND_PROMPT`].
pub const SECOND_ANSWER: &str = "Answer two, same process.";
/// Host 2's prompt, after the rotation: the model calls `ping` with `three`.
pub const THIRD_PROMPT: &str = "Call ping with three.";
/// The model's answer after host 2's tool call.
pub const THIRD_ANSWER: &str = "Answer three, after the rotation.";
/// The fork's prompt.
pub const FORK_PROMPT: &str = "Fork here.";
/// The model's answer in the fork.
pub const FORK_ANSWER: &str = "Answer of the fork.";

/// The model's replies for [`run_resident_scenario`], in order: a `ping` call and
/// [`FIRST_ANSWER`]; [`SECOND_ANSWER`]; a `ping` call and [`THIRD_ANSWER`]; [`FORK_ANSWER`].
pub fn resident_script() -> Script {
    Script::new()
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "one"}),
        ))
        .then(Reply::text(FIRST_ANSWER))
        .then(Reply::text(SECOND_ANSWER))
        .then(Reply::tool_call(
            TOOL_SERVER,
            "ping",
            json!({"text": "three"}),
        ))
        .then(Reply::text(THIRD_ANSWER))
        .then(Reply::text(FORK_ANSWER))
}

/// The pool's counts `(started, reused, recycled)`: processes started (recycles included),
/// turns served by a live idle process, processes retired because the next turn's signature
/// differed.
pub type PoolCounts = (u64, u64, u64);

/// What a driver test supplies to [`run_resident_scenario`].
pub struct ResidentSetup<'a> {
    /// The test's directory: the SQLite store and the workspace (`<dir>/workspace`, created
    /// here when missing). The driver's namespace should be under it.
    pub dir: &'a Path,
    /// The one driver both hosts share, built with a resident process mode.
    pub driver: Arc<dyn Driver>,
    /// The pids of the CLI's live processes in the driver's namespace (for example
    /// [`processes_with_env`] with the CLI's argv marker and `<state var>=<state dir>`).
    pub live_pids: &'a (dyn Fn() -> BTreeSet<u32> + Sync),
    /// The pool's counts now ([`PoolCounts`], from `driver_cli::CliDriver::pool_stats`), or
    /// `None` when the driver reports none: the count checks are then skipped.
    pub pool_counts: &'a (dyn Fn() -> Option<PoolCounts> + Sync),
    /// The mock's model requests so far.
    pub model_requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
}

impl std::fmt::Debug for ResidentSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentSetup")
            .field("dir", &self.dir)
            .field("driver", &self.driver.descriptor())
            .finish_non_exhaustive()
    }
}

/// An agent of host `label` over the shared driver and store, with its own hosted `ping`
/// (its own port, token and env-var name).
async fn host(setup: &ResidentSetup<'_>, label: &'static str, calls: &Calls) -> agent::Agent {
    let tools = HostedToolsProvider::new(
        ToolSet::new([ping_tool(label, "1", calls)]).expect("a valid tool set"),
    );
    agent(setup.dir, Arc::clone(&setup.driver), Arc::new(tools)).await
}

/// The model's input texts of request `index`, joined by newlines.
fn history(setup: &ResidentSetup<'_>, index: usize) -> String {
    (setup.model_requests)()
        .get(index)
        .expect("the CLI asked the model")
        .input_texts()
        .join("\n")
}

/// Plays the resident scenario (see the [module docs](self)) and panics at the first outcome
/// that differs. The mock must be scripted with [`resident_script`].
///
/// # Panics
/// On any failed check: that is the test.
pub async fn run_resident_scenario(setup: ResidentSetup<'_>) {
    std::fs::create_dir_all(setup.dir.join("workspace")).expect("workspace created");
    let calls: Calls = Arc::default();
    let counts = || (setup.pool_counts)();

    // ---- Two turns of one Thread on one live process ----
    println!("1. host 1: two turns of Thread {THREAD:?} on one resident process");
    let host1 = host(&setup, "host-1", &calls).await;
    let one = host1
        .thread(THREAD)
        .run(FIRST_PROMPT)
        .await
        .expect("host 1's first turn succeeds");
    assert_eq!(one.session, SessionOutcome::Started);
    assert_eq!(one.output, FIRST_ANSWER);
    let first = (setup.live_pids)();
    assert!(!first.is_empty(), "a resident process runs between turns");
    let two = host1
        .thread(THREAD)
        .run(SECOND_PROMPT)
        .await
        .expect("host 1's second turn succeeds");
    assert_eq!(two.output, SECOND_ANSWER);
    assert_eq!((setup.live_pids)(), first, "the same process, no respawn");
    if let Some((started, reused, _)) = counts() {
        assert_eq!((started, reused), (1, 1), "one start, one reuse");
    }
    assert_eq!(
        last_call(&calls),
        Some(("host-1".to_owned(), "one".to_owned())),
        "the tool call reached host 1's server"
    );

    // ---- A rotation: host 2's tools have a new port, token and env-var name ----
    println!("   pids {first:?} served both turns");
    println!("2. host 2 (new port, token and env-var name): resume_only recycles the process");
    let host2 = host(&setup, "host-2", &calls).await;
    let before = (setup.model_requests)().len();
    let three = host2
        .thread(THREAD)
        .resume_only()
        .run(THIRD_PROMPT)
        .await
        .expect("host 2's resume_only turn succeeds");
    assert_eq!(three.session, SessionOutcome::Resumed);
    assert_eq!(three.output, THIRD_ANSWER);
    let rotated = (setup.live_pids)();
    assert!(!rotated.is_empty(), "a new resident process serves");
    assert!(
        rotated.is_disjoint(&first),
        "the old process exited and a new one serves: {first:?} then {rotated:?}"
    );
    if let Some((started, _, recycled)) = counts() {
        assert_eq!((started, recycled), (2, 1), "one recycle, one more start");
    }
    assert_eq!(
        last_call(&calls),
        Some(("host-2".to_owned(), "three".to_owned())),
        "the tool call reached host 2's server, which admits only the new token"
    );
    let resumed = history(&setup, before);
    for earlier in [FIRST_PROMPT, FIRST_ANSWER, SECOND_PROMPT, SECOND_ANSWER] {
        assert!(
            resumed.contains(earlier),
            "resumed without {earlier:?}: {resumed}"
        );
    }

    // ---- A fork with its parent's history ----
    println!("   pids {rotated:?} resumed the session; the model saw the earlier turns");
    println!("3. host 2 forks Thread {THREAD:?} into {FORK:?}");
    let before = (setup.model_requests)().len();
    let forked = host2
        .thread(THREAD)
        .fork(FORK)
        .run(FORK_PROMPT)
        .await
        .expect("the fork's turn succeeds");
    assert_eq!(forked.output, FORK_ANSWER);
    let inherited = history(&setup, before);
    for earlier in [FIRST_PROMPT, THIRD_ANSWER] {
        assert!(
            inherited.contains(earlier),
            "forked without {earlier:?}: {inherited}"
        );
    }
    let parent = host2
        .thread(THREAD)
        .checkpoint()
        .await
        .expect("the store answers")
        .expect("the parent's checkpoint");
    let child = host2
        .thread(FORK)
        .checkpoint()
        .await
        .expect("the store answers")
        .expect("the fork's checkpoint");
    assert_ne!(
        parent.resume_id, child.resume_id,
        "the fork has a session of its own"
    );

    // ---- Agent::close leaves no process ----
    println!("4. Agent::close of both hosts");
    host2.close().await;
    host1.close().await;
    let left = (setup.live_pids)();
    assert!(left.is_empty(), "processes outlived Agent::close: {left:?}");
}

/// The pids of the live (not zombie) processes whose command line contains `marker` and
/// whose environment holds `var=value` exactly: the processes of one CLI in one namespace
/// (`var` is the CLI's state-dir variable, `value` the namespace's state dir).
///
/// The command line is matched as its argv elements joined by single spaces, as
/// [`restart::watch_argv`](crate::restart::watch_argv) matches it: `marker` may be one
/// element (`app-server`) or several (`--input-format stream-json`). Processes whose files
/// cannot be read (another user's, or gone meanwhile) are skipped. Linux only (`/proc`).
pub fn processes_with_env(marker: &str, var: &str, value: &Path) -> BTreeSet<u32> {
    let want = format!("{var}={}", value.display());
    processes_where(marker, |entry| entry == want.as_bytes())
}

/// The live (not zombie) processes whose command line contains `marker` (matched as
/// [`processes_with_env`] matches it) and one of whose environment entries (`NAME=value`
/// bytes) satisfies `env`: for agents whose processes are known by where their state lives
/// rather than by one variable (a launcher and the child it starts). Linux only (`/proc`).
///
/// A child that runs the same executable as a matched parent is left out: it is the parent's
/// fork on its way to `exec` something else (a CLI starting `git` or a shell after its turn
/// answered), which still shows the parent's command line for a moment, not a process of
/// its own. A launcher and the different binary it starts both count.
pub fn processes_where(marker: &str, env: impl Fn(&[u8]) -> bool) -> BTreeSet<u32> {
    // pid -> (parent pid, executable) of each matched live process.
    let mut found: BTreeMap<u32, (u32, Option<PathBuf>)> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let argv = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !argv.contains(marker) {
            continue;
        }
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if !environ.split(|b| *b == 0).any(&env) {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // The state and the parent pid are the first fields after the command name's closing
        // parenthesis.
        let mut fields = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let zombie = fields.next().is_some_and(|state| state.starts_with('Z'));
        let parent = fields
            .next()
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0);
        if !zombie {
            found.insert(pid, (parent, std::fs::read_link(dir.join("exe")).ok()));
        }
    }
    let forked = |(parent, exe): &(u32, Option<PathBuf>)| {
        found
            .get(parent)
            .is_some_and(|(_, parent_exe)| exe.is_some() && parent_exe == exe)
    };
    found
        .iter()
        .filter(|(_, process)| !forked(process))
        .map(|(pid, _)| *pid)
        .collect()
}

/// One line per pid: its parent, executable and command line as `/proc` shows them now (or
/// `gone`), for a failed process assertion. Test processes only: the command line may hold
/// anything the test gave the process. Linux only.
pub fn describe_processes(pids: &BTreeSet<u32>) -> String {
    let mut out = String::new();
    for pid in pids {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let line = match std::fs::read(dir.join("cmdline")) {
            Ok(cmdline) => {
                let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
                let parent = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .nth(1);
                let exe = std::fs::read_link(dir.join("exe"));
                format!(
                    "{pid} parent {} exe {} argv {}",
                    parent.unwrap_or("?"),
                    exe.map_or_else(|_| "?".to_owned(), |e| e.display().to_string()),
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                )
            }
            Err(_) => format!("{pid} gone"),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}
