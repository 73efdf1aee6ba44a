//! Serving replays to a real driver: a Unix socket in the test process, one [`RpcReplay`] per
//! connection, each connection a process the driver spawned (the scripted fake in relay mode).

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fake_cli::Scenario;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::{RpcReplay, RpcTranscript};

/// How long [`RpcReplayServer::assert_replayed`] waits for the processes to close their
/// connections.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// The JSON-RPC code of the error answer to a request the transcript has no match for
/// ("method not found": the replayed server knows no such call).
const NO_MATCH: i64 = -32601;

/// A replayed server for the processes a driver spawns: each connection to its socket (one
/// process of the fake CLI in relay mode, [`scenario`](Self::scenario)) gets a replay of the
/// transcript from its start. A client request without a match is answered with a JSON-RPC
/// error naming the mismatch, so the driver's turn fails at once instead of waiting; every
/// mismatch is kept for [`assert_replayed`](Self::assert_replayed).
#[derive(Debug)]
pub struct RpcReplayServer {
    socket: PathBuf,
    shared: Arc<Shared>,
    accepting: Option<JoinHandle<()>>,
    /// Holds the socket's directory.
    _dir: TempDir,
}

/// What the connections report.
#[derive(Debug, Default)]
struct Shared {
    stopping: AtomicBool,
    failures: Mutex<Vec<String>>,
    connections: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn fail(&self, failure: String) {
        lock(&self.failures).push(failure);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RpcReplayServer {
    /// Starts serving `transcript` on a socket in a temporary directory of its own.
    ///
    /// # Panics
    /// When the directory or the socket cannot be made: this is test support.
    #[allow(clippy::expect_used, reason = "test support")]
    pub fn start(transcript: RpcTranscript) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let socket = dir.path().join("replay.sock");
        let listener = UnixListener::bind(&socket).expect("a Unix socket");
        let shared = Arc::new(Shared::default());
        let accepting = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept(&listener, &transcript, &shared))
        };
        Self {
            socket,
            shared,
            accepting: Some(accepting),
            _dir: dir,
        }
    }

    /// The socket the fake relays to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// A fake CLI scenario that relays every invocation but `--version` to this server.
    pub fn scenario(&self) -> Scenario {
        Scenario::new().relay(&self.socket)
    }

    /// Every mismatch so far, in order, each naming its process (`process 2: …`, counted from 1
    /// in the order they connected) and its method.
    pub fn failures(&self) -> Vec<String> {
        lock(&self.shared.failures).clone()
    }

    /// Stops accepting, waits for every process to close its connection (close the driver's
    /// processes first), and asserts that each replayed its whole transcript: no mismatch, no
    /// recorded client message missing. Returns how many connections were served.
    ///
    /// # Panics
    /// When a replay failed, or a connection is still open after 10 s.
    pub fn assert_replayed(mut self) -> usize {
        self.stop();
        let deadline = Instant::now() + CLOSE_WAIT;
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        let served = connections.len();
        for connection in connections {
            while !connection.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "a replayed connection is still open: close the driver's processes first"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = connection.join();
        }
        let failures = self.failures();
        assert!(
            failures.is_empty(),
            "the transcript did not replay:\n{}",
            failures.join("\n")
        );
        served
    }

    /// Wakes the accepting thread with a connection of its own and lets it end.
    fn stop(&mut self) {
        let Some(accepting) = self.accepting.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        if UnixStream::connect(&self.socket).is_ok() {
            let _ = accepting.join();
        }
    }
}

impl Drop for RpcReplayServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Accepts connections until stopped, each served on a thread of its own.
fn accept(listener: &UnixListener, transcript: &RpcTranscript, shared: &Arc<Shared>) {
    for (number, stream) in (1..).zip(listener.incoming()) {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let replay = RpcReplay::new(transcript);
        let connection = {
            let shared = Arc::clone(shared);
            std::thread::spawn(move || {
                let fail = |failure: String| shared.fail(format!("process {number}: {failure}"));
                if let Err(e) = serve(stream, replay, &fail) {
                    fail(format!("the replay connection failed: {e}"));
                }
            })
        };
        lock(&shared.connections).push(connection);
    }
}

/// Replays for one connection until the client closes it.
fn serve(stream: UnixStream, mut replay: RpcReplay, fail: &dyn Fn(String)) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    write_all(&mut out, replay.start())?;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            fail(format!("the client sent a line that is not JSON: {line}"));
            continue;
        };
        match replay.receive(&message) {
            Ok(answers) => write_all(&mut out, answers)?,
            Err(mismatch) => {
                fail(mismatch.to_string());
                // A request waits for its answer: refuse it, naming the mismatch.
                if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
                    let error = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": NO_MATCH, "message": mismatch.to_string()}});
                    write_all(&mut out, vec![error])?;
                }
            }
        }
    }
    if let Err(unfinished) = replay.finish() {
        fail(unfinished.to_string());
    }
    Ok(())
}

fn write_all(out: &mut UnixStream, messages: Vec<Value>) -> io::Result<()> {
    for message in messages {
        let mut line = message.to_string();
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}
