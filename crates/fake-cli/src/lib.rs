//! A scripted fake agent CLI for driver tests: the scenario types, the invocation record, and a
//! locator for the `fake-cli` binary.
//!
//! Driver crates (Codex, Claude Code, …) are tested against this fake instead of a real
//! provider CLI. A test writes a [`Scenario`] to a JSON file, starts the `fake-cli` binary with
//! [`SCENARIO_ENV`] naming that file, and the fake then:
//!
//! 1. answers `--version` (argv exactly `["--version"]`) with [`Scenario::version`], if set;
//! 2. reads stdin fully (unless it is a terminal), except in serve mode (below);
//! 3. appends one [`Invocation`] line to [`Scenario::record`], if set (in serve mode its
//!    `stdin` is empty);
//! 4. runs the steps of the first [`Rule`] whose `when_args_contain` strings all appear in argv
//!    (a rule without them matches anything; no matching rule means no steps), then exits 0
//!    unless a step ended it, or serve mode begins.
//! 5. Serve mode, when [`Scenario::serve`] is non-empty and argv is not exactly
//!    `["--version"]`: a resident server on stdio (like `codex app-server`). It reads stdin
//!    line by line until EOF; each line is appended to [`Scenario::serve_record`] if set (one
//!    `O_APPEND` write; see [`read_served_lines`]), then runs the steps of the first
//!    [`LineRule`] whose `when_contains` strings all occur in the line (an empty list matches
//!    any line; a `once` rule is skipped after its first match; no match means no steps). A
//!    line need not be JSON. At EOF it sleeps [`Scenario::serve_exit_delay_ms`], if set, and
//!    exits 0.
//! 6. Relay mode, when [`Scenario::relay`] names a Unix socket and argv is not exactly
//!    `["--version"]`: after the argv rule's steps the fake connects to the socket, copies its
//!    stdin to it and what it reads from it to its stdout (each line flushed), and exits 0 when
//!    the socket's peer closes it (after stdin's EOF, the socket's write half is shut down so
//!    the peer sees it). The answers then come from a peer in the test process, such as a
//!    replayed transcript; the fake itself decides nothing. A scenario with both `relay` and
//!    serve-mode line rules is invalid.
//!
//! Steps print lines on stdout or stderr (with templates, see [`Step`]; in serve mode the
//! answers can echo the request's `${ID}` and `${PARAM:<path>}`), sleep, stream an unterminated
//! line, spawn a grandchild that sleeps for ten minutes, hang, exit with a code or SIGKILL
//! themselves. Every stdout line is flushed at once, so a reader waiting for it gets it.
//!
//! # Invariants
//!
//! * The fake never panics on a bad scenario: it prints one line starting with `fake-cli:` on
//!   stderr and exits with [`BAD_SCENARIO_EXIT`] (97). Unknown fields are errors.
//! * One invocation appends exactly one record line with a single `O_APPEND` write, so
//!   concurrent invocations never interleave records.
//! * Environment values are recorded only for the names the scenario lists in
//!   [`Scenario::record_env_values`]; every other variable is recorded by name.
//!
//! # What it deliberately does not do
//!
//! * It does not emulate any real CLI's protocol: the scenario spells out every output line.
//! * It does not clean up the grandchildren it spawns; reaping them is the job of the code
//!   under test (that is what the step exists to check).
//! * [`binary_path`] does not support cross-compiled test binaries (`--target`).
//!
//! # Example
//!
//! Both examples are `no_run`: a doc test runs from rustdoc's temporary directory, from which
//! [`binary_path`] cannot find the target directory (it asks cargo for a profile named after
//! that directory, and fails); the crate's integration tests run the same code.
//!
//! ```no_run
//! use fake_cli::{Rule, Scenario, SCENARIO_ENV, binary_path, read_invocations};
//!
//! let dir = tempfile::tempdir()?;
//! let record = dir.path().join("record.jsonl");
//! let scenario = Scenario::new()
//!     .version("codex-cli 0.169.0")
//!     .record(&record)
//!     .rule(Rule::when(["resume"]).stdout(r#"{"resumed":"${ARG_AFTER:resume}"}"#))
//!     .rule(Rule::any().stdout(r#"{"session":"${NEW_UUID}","prompt":"${STDIN}"}"#).exit(0));
//! let path = dir.path().join("scenario.json");
//! scenario.write_to(&path)?;
//!
//! let out = std::process::Command::new(binary_path())
//!     .args(["exec", "--json"])
//!     .env(SCENARIO_ENV, &path)
//!     .output()?;
//! assert!(out.status.success());
//! assert_eq!(read_invocations(&record)?[0].argv, ["exec", "--json"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A scripted app-server: answers by request id, one notification on the first turn only.
//!
//! ```no_run
//! use std::io::{BufRead, BufReader, Write};
//! use std::process::{Command, Stdio};
//!
//! use fake_cli::{LineRule, SCENARIO_ENV, Scenario, binary_path, read_served_lines};
//!
//! let dir = tempfile::tempdir()?;
//! let served = dir.path().join("served.txt");
//! let scenario = Scenario::new()
//!     .serve_record(&served)
//!     .serve(LineRule::when([r#""method":"initialize""#]).stdout(r#"{"id":${ID},"result":{}}"#))
//!     .serve(
//!         LineRule::when([r#""method":"turn/start""#])
//!             .once()
//!             .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}"}}"#)
//!             .stdout(r#"{"id":${ID},"result":{"session":"${SESSION}","line":${COUNT}}}"#),
//!     );
//! let path = dir.path().join("scenario.json");
//! scenario.write_to(&path)?;
//!
//! let mut child = Command::new(binary_path())
//!     .arg("app-server")
//!     .env(SCENARIO_ENV, &path)
//!     .stdin(Stdio::piped())
//!     .stdout(Stdio::piped())
//!     .spawn()?;
//! let mut stdin = child.stdin.take().ok_or("no stdin")?;
//! let mut answers = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
//! writeln!(stdin, r#"{{"id":1,"method":"initialize","params":{{}}}}"#)?;
//! assert_eq!(answers.next().ok_or("eof")??, r#"{"id":1,"result":{}}"#);
//! drop(stdin); // EOF: the fake exits 0
//! assert!(child.wait()?.success());
//! assert_eq!(read_served_lines(&served)?.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Harness`] wraps the usual test setup: a temporary directory, a credential namespace whose
//! child environment names the scenario (and whose host environment carries credentials the
//! child must not see), a workspace, and the invocation record.
//!
//! `binary_path` builds the binary on first use (once per test process, a no-op when it is
//! fresh), so driver crates that use the fake need no build script and no artifact
//! dependency.
//!
//! Stability: internal test support (`publish = false`); it changes with its users.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cancel;
mod harness;
mod locate;
mod scenario;

pub use cancel::{is_running, processes_ended, run_until_pid_file};
pub use harness::{HOST_CREDENTIAL, Harness};
pub use locate::{LocateError, binary_path, try_binary_path};
pub use scenario::{
    BAD_SCENARIO_EXIT, CaptureFiles, CapturedFile, GRANDCHILD_ENV, Invocation, LineRule, Rule,
    SCENARIO_ENV, Scenario, Step, read_invocations, read_served_lines,
};
