//! A SIGKILLed sticky holder (issue 43): a child process (this test binary, running the
//! ignored [`sticky_child_host`]) keeps a hot Thread on a SQLite file and is killed; the next
//! host gets `Busy` until the kept lease expires, then resumes the Thread's conversation,
//! whose sessions live on disk (the reference runtime's file sessions).

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agent::{Agent, SessionOutcome, ThreadError};
use runtime_env::RuntimeEnv;
use thread_store::ThreadStore;
use thread_store::sqlite::{SqliteConfig, SqliteStore};

use crate::sticky::{Holding, holder, sticky_host};

/// Where the child host keeps its store and sessions; set only for the child.
const CHILD_DIR: &str = "AGENT_STICKY_CHILD_DIR";
/// What the child prints once it keeps the Thread.
const KEPT: &str = "sticky child: kept";
/// Short, so the next host waits little; long enough that it sees the lease still kept.
const TTL: Duration = Duration::from_secs(4);

/// A sticky host on the SQLite file and the reference runtime's file sessions under `dir`.
async fn file_host(dir: &Path) -> (Agent, Arc<dyn ThreadStore>) {
    let store: Arc<dyn ThreadStore> = Arc::new(
        SqliteStore::open(SqliteConfig::new(dir.join("threads.db")))
            .await
            .unwrap(),
    );
    let env = RuntimeEnv::builder(
        dir.join("env"),
        "user:sticky".parse().unwrap(),
        dir.to_path_buf(),
    );
    let driver = Holding::new(reference_runtime::driver(env).unwrap());
    (sticky_host(store.clone(), driver, TTL), store)
}

/// The child: runs one turn, says so, and keeps the Thread (renewing) until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child host of a_sigkilled_sticky_holder_is_busy_until_its_lease_expires"]
async fn sticky_child_host() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let (agent, _store) = file_host(Path::new(&dir)).await;
    agent.thread("hot").run("first").await.unwrap();
    // On a line of its own: libtest has printed the test's name without a newline.
    println!("\n{KEPT}");
    tokio::time::sleep(Duration::from_secs(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_sticky_holder_is_busy_until_its_lease_expires() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sticky_killed::sticky_child_host",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let kept = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line == KEPT)
    });
    let kept = tokio::time::timeout(Duration::from_secs(120), kept).await;
    // SIGKILL (also when the child failed: it must not outlive the test): no close, no
    // release.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        kept.expect("the child host never kept the Thread").unwrap(),
        "the child host ended without keeping the Thread"
    );

    let (next, store) = file_host(dir.path()).await;
    assert!(holder(store.as_ref(), "hot").await.is_some(), "still kept");
    let err = next.thread("hot").run("second").await.unwrap_err();
    assert!(matches!(err, ThreadError::Busy { .. }), "{err}");
    let mut resumed = None;
    // Bounded well past the TTL: the lease must expire, not stay kept by a dead host.
    for _ in 0..400 {
        match next.thread("hot").run("second").await {
            Ok(result) => {
                resumed = Some(result);
                break;
            }
            Err(ThreadError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let resumed = resumed.expect("the killed host's lease never expired");
    assert_eq!(resumed.session, SessionOutcome::Resumed);
    assert!(resumed.output.contains("turn 2"), "{}", resumed.output);
    next.close().await;
}
