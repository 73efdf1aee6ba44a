//! The scenario file the fake reads, and the invocation record it writes.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The environment variable that names the scenario file.
pub const SCENARIO_ENV: &str = "FAKE_CLI_SCENARIO";

/// The environment variable that puts the binary in grandchild mode (sleep ten minutes). Set
/// by the `spawn_grandchild` step; tests do not need it.
pub const GRANDCHILD_ENV: &str = "FAKE_CLI_GRANDCHILD";

/// The exit code of the fake when the scenario is missing or invalid.
pub const BAD_SCENARIO_EXIT: i32 = 97;

/// What the fake does; serialized as JSON into the file named by [`SCENARIO_ENV`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Scenario {
    /// Text printed (with a newline) for `--version`, exit 0. When unset, `--version` goes
    /// through the rules like any other invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A file that gets one [`Invocation`] JSON line appended per invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<PathBuf>,
    /// Environment variables whose values (not only names) are recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record_env_values: Vec<String>,
    /// Files whose contents and modes are recorded.
    #[serde(default, skip_serializing_if = "CaptureFiles::is_empty")]
    pub capture_files: CaptureFiles,
    /// The rules; the first that matches argv supplies the steps.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Serve mode when non-empty: after the argv rule's steps, stdin is read line by line and
    /// each line runs the steps of the first [`LineRule`] that matches it (see the crate
    /// documentation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serve: Vec<LineRule>,
    /// In serve mode, a file that gets each received line (and a newline) appended with one
    /// `O_APPEND` write; read it back with [`read_served_lines`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_record: Option<PathBuf>,
    /// In serve mode, how long to sleep at stdin EOF before exiting 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_exit_delay_ms: Option<u64>,
    /// Relay mode when set: after the argv rule's steps, the fake connects to the Unix socket
    /// at this path and copies its stdin to it and what it reads from it to its stdout, so a
    /// peer in the test process answers the driver (see the crate documentation). Exclusive
    /// with [`serve`](Self::serve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<PathBuf>,
}

/// Which files an invocation records (see [`Invocation::files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CaptureFiles {
    /// Flags whose next argument (or `--flag=value` value) names a file to record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arg_flags: Vec<String>,
    /// Environment variables naming directories whose regular files are recorded
    /// (recursively, symlinks not followed, at most 256 files of at most 1 MiB each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs_from_env: Vec<String>,
}

impl CaptureFiles {
    fn is_empty(&self) -> bool {
        self.arg_flags.is_empty() && self.dirs_from_env.is_empty()
    }
}

/// Steps to run when argv contains every string of `when_args_contain`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Rule {
    /// Strings that must all be argv elements (exact match); empty matches anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when_args_contain: Vec<String>,
    /// The steps, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Line rules of its own: an invocation this rule matches serves stdin with these instead
    /// of the scenario's [`Scenario::serve`] (a resident CLI whose answers depend on its argv,
    /// such as the session it was started with).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serve: Vec<LineRule>,
}

/// In serve mode, steps to run for a stdin line that contains every string of `when_contains`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LineRule {
    /// Strings that must all occur in the line (substrings); empty matches any line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when_contains: Vec<String>,
    /// The steps, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// When `true`, the rule matches only once; afterwards it is skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub once: bool,
}

/// One step of a rule. Serialized as a one-key object such as `{"stdout": "text"}`.
///
/// Text of `stdout` and `stderr` steps expands these templates (others are left as they are):
///
/// * `${NEW_UUID}`: a UUID made once per invocation (the same value everywhere in it);
/// * `${ARG_AFTER:<word>}`: the argv element right after the first `<word>` (empty if none);
/// * `${STDIN}`: stdin, JSON-escaped without the quotes, to embed in a JSON string (always
///   empty in serve mode, where stdin is not read to EOF).
///
/// In serve mode (a non-empty [`Scenario::serve`]) these expand too, in the argv rule's steps
/// and in every [`LineRule`]'s steps; without serve mode they are left as they are:
///
/// * `${ID}`: the received line's JSON `id`, serialized as JSON (`1`, `"a"`), or `null` when the
///   line is not JSON or has no `id` (and in the argv rule's steps, before any line);
/// * `${PARAM:<path>}`: the string at `params.<path>` of the received line, JSON-escaped without
///   the quotes; empty when absent or not a string. `<path>` is dotted, and a numeric segment
///   indexes an array: `input.0.text`;
/// * `${FIELD:<path>}`: the same from the received line itself (a stream-json control
///   request's `request_id`: `${FIELD:request_id}`);
/// * `${PID}`: the fake's process id (decimal);
/// * `${SESSION}`: a UUID chosen once per process (the same value in every answer);
/// * `${COUNT}`: how many lines this process has received, including this one (`0` before any).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Step {
    /// Prints the text and a newline on stdout (flushed).
    Stdout(String),
    /// Prints the text and a newline on stderr.
    Stderr(String),
    /// Sleeps this many milliseconds.
    SleepMs(u64),
    /// Prints this many `a` bytes on stdout without a newline, in chunks.
    StdoutUnterminatedBytes(u64),
    /// Prints the text and a newline on stdout this many times (a flood of whole lines).
    StdoutRepeated {
        /// The line (templates expanded once).
        line: String,
        /// How many times.
        times: u64,
    },
    /// Spawns a copy of the fake that sleeps ten minutes in the same process group, with
    /// stdout and stderr inherited, and writes its pid (decimal) to `pid_file` atomically.
    SpawnGrandchild {
        /// Where the grandchild's pid is written.
        pid_file: PathBuf,
    },
    /// Sleeps forever when `true`.
    Hang(bool),
    /// Exits with this code now.
    Exit(i32),
    /// Sends SIGKILL to itself when `true` (a crash).
    KillSelf(bool),
}

impl Scenario {
    /// An empty scenario: no version, no record, no rule (every invocation exits 0 silently).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the `--version` text.
    pub fn version(mut self, text: impl Into<String>) -> Self {
        self.version = Some(text.into());
        self
    }

    /// Records each invocation to this file.
    pub fn record(mut self, path: impl Into<PathBuf>) -> Self {
        self.record = Some(path.into());
        self
    }

    /// Records the values of these environment variables.
    pub fn record_env_values<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.record_env_values
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Records the file named after this flag.
    pub fn capture_arg_flag(mut self, flag: impl Into<String>) -> Self {
        self.capture_files.arg_flags.push(flag.into());
        self
    }

    /// Records the files under the directory named by this environment variable.
    pub fn capture_dir_from_env(mut self, var: impl Into<String>) -> Self {
        self.capture_files.dirs_from_env.push(var.into());
        self
    }

    /// Appends a rule.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Appends a serve-mode line rule (a non-empty list turns serve mode on).
    pub fn serve(mut self, rule: LineRule) -> Self {
        self.serve.push(rule);
        self
    }

    /// Records each line received in serve mode to this file.
    pub fn serve_record(mut self, path: impl Into<PathBuf>) -> Self {
        self.serve_record = Some(path.into());
        self
    }

    /// Sleeps this long at stdin EOF in serve mode before exiting.
    pub fn serve_exit_delay_ms(mut self, ms: u64) -> Self {
        self.serve_exit_delay_ms = Some(ms);
        self
    }

    /// Relays stdio to the Unix socket at `path` (see [`relay`](Self#structfield.relay)).
    pub fn relay(mut self, path: impl Into<PathBuf>) -> Self {
        self.relay = Some(path.into());
        self
    }

    /// Writes the scenario as JSON to `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be written, or a path in the scenario is not UTF-8.
    pub fn write_to(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        std::fs::write(path, json)
    }
}

impl Rule {
    /// A rule that matches every invocation.
    pub fn any() -> Self {
        Self::default()
    }

    /// A rule that matches when argv contains all of `args`.
    pub fn when<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            when_args_contain: args.into_iter().map(Into::into).collect(),
            steps: Vec::new(),
            serve: Vec::new(),
        }
    }

    /// Adds a line rule of its own (see [`Rule::serve`](Self#structfield.serve)).
    pub fn serve(mut self, rule: LineRule) -> Self {
        self.serve.push(rule);
        self
    }

    /// Appends a step.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends a [`Step::Stdout`].
    pub fn stdout(self, text: impl Into<String>) -> Self {
        self.step(Step::Stdout(text.into()))
    }

    /// Appends a [`Step::Stderr`].
    pub fn stderr(self, text: impl Into<String>) -> Self {
        self.step(Step::Stderr(text.into()))
    }

    /// Appends a [`Step::SleepMs`].
    pub fn sleep_ms(self, ms: u64) -> Self {
        self.step(Step::SleepMs(ms))
    }

    /// Appends a [`Step::StdoutUnterminatedBytes`].
    pub fn stdout_unterminated_bytes(self, n: u64) -> Self {
        self.step(Step::StdoutUnterminatedBytes(n))
    }

    /// Appends a [`Step::StdoutRepeated`].
    pub fn stdout_repeated(self, line: impl Into<String>, times: u64) -> Self {
        self.step(Step::StdoutRepeated {
            line: line.into(),
            times,
        })
    }

    /// Appends a [`Step::SpawnGrandchild`].
    pub fn spawn_grandchild(self, pid_file: impl Into<PathBuf>) -> Self {
        self.step(Step::SpawnGrandchild {
            pid_file: pid_file.into(),
        })
    }

    /// Appends a [`Step::Hang`].
    pub fn hang(self) -> Self {
        self.step(Step::Hang(true))
    }

    /// Appends a [`Step::Exit`].
    pub fn exit(self, code: i32) -> Self {
        self.step(Step::Exit(code))
    }

    /// Appends a [`Step::KillSelf`].
    pub fn kill_self(self) -> Self {
        self.step(Step::KillSelf(true))
    }

    /// Whether the rule matches these arguments.
    pub fn matches(&self, argv: &[String]) -> bool {
        self.when_args_contain
            .iter()
            .all(|want| argv.iter().any(|a| a == want))
    }
}

impl LineRule {
    /// A line rule that matches every line.
    pub fn any() -> Self {
        Self::default()
    }

    /// A line rule that matches when the line contains all of `needles` (substrings), such as
    /// `LineRule::when(["\"method\":\"turn/start\""])`.
    pub fn when<I, S>(needles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            when_contains: needles.into_iter().map(Into::into).collect(),
            steps: Vec::new(),
            once: false,
        }
    }

    /// Makes the rule match only the first line it matches.
    pub fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// Appends a step.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends a [`Step::Stdout`].
    pub fn stdout(self, text: impl Into<String>) -> Self {
        self.step(Step::Stdout(text.into()))
    }

    /// Appends a [`Step::Stderr`].
    pub fn stderr(self, text: impl Into<String>) -> Self {
        self.step(Step::Stderr(text.into()))
    }

    /// Appends a [`Step::SleepMs`].
    pub fn sleep_ms(self, ms: u64) -> Self {
        self.step(Step::SleepMs(ms))
    }

    /// Appends a [`Step::StdoutUnterminatedBytes`].
    pub fn stdout_unterminated_bytes(self, n: u64) -> Self {
        self.step(Step::StdoutUnterminatedBytes(n))
    }

    /// Appends a [`Step::StdoutRepeated`].
    pub fn stdout_repeated(self, line: impl Into<String>, times: u64) -> Self {
        self.step(Step::StdoutRepeated {
            line: line.into(),
            times,
        })
    }

    /// Appends a [`Step::SpawnGrandchild`].
    pub fn spawn_grandchild(self, pid_file: impl Into<PathBuf>) -> Self {
        self.step(Step::SpawnGrandchild {
            pid_file: pid_file.into(),
        })
    }

    /// Appends a [`Step::Hang`].
    pub fn hang(self) -> Self {
        self.step(Step::Hang(true))
    }

    /// Appends a [`Step::Exit`].
    pub fn exit(self, code: i32) -> Self {
        self.step(Step::Exit(code))
    }

    /// Appends a [`Step::KillSelf`].
    pub fn kill_self(self) -> Self {
        self.step(Step::KillSelf(true))
    }

    /// Whether the line contains every string of `when_contains` (`once` is not considered).
    pub fn matches(&self, line: &str) -> bool {
        self.when_contains.iter().all(|want| line.contains(want))
    }
}

/// One recorded invocation of the fake (one line of [`Scenario::record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Invocation {
    /// The arguments after the program name.
    pub argv: Vec<String>,
    /// The names of every environment variable, sorted.
    pub env_names: Vec<String>,
    /// The values of the variables listed in [`Scenario::record_env_values`] that were set.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Everything read from stdin (lossy UTF-8); empty in serve mode, which reads stdin line by
    /// line after recording (see [`Scenario::serve_record`]).
    pub stdin: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The process id.
    pub pid: u32,
    /// The process group id.
    pub pgid: u32,
    /// The captured files, by path.
    #[serde(default)]
    pub files: BTreeMap<String, CapturedFile>,
}

impl Invocation {
    /// Whether the variable was set.
    pub fn has_env(&self, name: &str) -> bool {
        self.env_names.iter().any(|n| n == name)
    }

    /// Whether argv contains this exact element.
    pub fn has_arg(&self, arg: &str) -> bool {
        self.argv.iter().any(|a| a == arg)
    }

    /// The argv element right after the first `flag`.
    pub fn arg_after(&self, flag: &str) -> Option<&str> {
        let i = self.argv.iter().position(|a| a == flag)?;
        self.argv.get(i + 1).map(String::as_str)
    }
}

/// One captured file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CapturedFile {
    /// The contents (lossy UTF-8).
    pub contents: String,
    /// The permission bits in octal, such as `"600"`.
    pub mode: String,
}

/// Reads every invocation recorded in `path`, oldest first; a missing file means none.
///
/// # Errors
///
/// The file cannot be read, or a line is not an [`Invocation`].
pub fn read_invocations(path: impl AsRef<Path>) -> io::Result<Vec<Invocation>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(io::Error::other))
        .collect()
}

/// Reads every line recorded in [`Scenario::serve_record`], oldest first (lossy UTF-8, without
/// the newline); a missing file means none.
///
/// # Errors
///
/// The file cannot be read.
pub fn read_served_lines(path: impl AsRef<Path>) -> io::Result<Vec<String>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    // Every recorded line ends with a newline, so the last piece is empty.
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    Ok(lines)
}
