//! The `fake-cli` binary: runs the scenario named by `FAKE_CLI_SCENARIO` (see the library
//! documentation for the format). Exit codes of its own: 97 for a missing or invalid scenario
//! or an unwritable record, 98 when stdout or stderr is closed under it.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::ffi::OsStr;
use std::fs;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use fake_cli::{
    BAD_SCENARIO_EXIT, CapturedFile, GRANDCHILD_ENV, Invocation, LineRule, SCENARIO_ENV, Scenario,
    Step,
};

/// Exit code when a standard stream is closed under the fake.
const PIPE_CLOSED_EXIT: u8 = 98;
/// How long the grandchild sleeps.
const GRANDCHILD_SLEEP: Duration = Duration::from_secs(600);
/// Bounds of the directory capture.
const MAX_CAPTURED_FILES: usize = 256;
const MAX_CAPTURED_BYTES: u64 = 1 << 20;
const MAX_CAPTURE_DEPTH: usize = 8;
/// Bound of what is read from stdin.
const MAX_STDIN: u64 = 64 << 20;
/// Bound of one line in serve mode; a longer line is taken as several.
const MAX_LINE: u64 = 64 << 20;

enum Fail {
    /// A bad scenario or environment: one line on stderr, exit 97.
    Bad(String),
    /// A standard stream was closed: exit 98 quietly.
    Pipe,
}

fn bad(message: impl Into<String>) -> Fail {
    Fail::Bad(message.into())
}

fn main() -> ExitCode {
    if std::env::var_os(GRANDCHILD_ENV).is_some() {
        std::thread::sleep(GRANDCHILD_SLEEP);
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Bad(message)) => {
            // One line, whatever the message contains.
            let line = message.replace(['\n', '\r'], " ");
            let _ = writeln!(io::stderr(), "fake-cli: {line}");
            ExitCode::from(u8::try_from(BAD_SCENARIO_EXIT).unwrap_or(1))
        }
        Err(Fail::Pipe) => ExitCode::from(PIPE_CLOSED_EXIT),
    }
}

fn run() -> Result<(), Fail> {
    let path = std::env::var_os(SCENARIO_ENV).ok_or_else(|| bad("FAKE_CLI_SCENARIO is not set"))?;
    let text = fs::read_to_string(&path).map_err(|e| {
        bad(format!(
            "cannot read scenario {}: {e}",
            Path::new(&path).display()
        ))
    })?;
    let scenario: Scenario =
        serde_json::from_str(&text).map_err(|e| bad(format!("invalid scenario: {e}")))?;
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();

    let only_version = argv.len() == 1 && argv[0] == "--version";
    let version = scenario.version.as_deref().filter(|_| only_version);
    let rule = scenario.rules.iter().find(|r| r.matches(&argv));
    // The argv rule's own line rules, when it has some, else the scenario's.
    let line_rules = match rule {
        Some(rule) if !rule.serve.is_empty() => rule.serve.as_slice(),
        _ => scenario.serve.as_slice(),
    };
    // Serve mode reads stdin line by line after the record and the argv rule's steps.
    let serving = !line_rules.is_empty() && !only_version;
    // Relay mode hands stdin to the socket's peer, also after them.
    let relay = scenario.relay.as_deref().filter(|_| !only_version);
    if relay.is_some() && serving {
        return Err(bad("a scenario relays or serves, not both"));
    }
    let stdin = if version.is_some() || serving || relay.is_some() {
        String::new()
    } else {
        read_stdin()?
    };
    if let Some(record) = &scenario.record {
        append_record(record, &invocation(&scenario, &argv, &stdin)?)?;
    }
    if let Some(version) = version {
        return print_line(&mut io::stdout(), version);
    }

    let serve_record = match &scenario.serve_record {
        Some(path) if serving => Some(open_append(path, "serve record")?),
        _ => None,
    };

    let mut ctx = Templates {
        uuid: uuid::Uuid::now_v7().to_string(),
        argv: &argv,
        stdin: json_escape(&stdin),
        serve: serving.then(|| Served {
            pid: std::process::id(),
            session: uuid::Uuid::now_v7().to_string(),
            count: 0,
            line: None,
        }),
    };
    let steps = rule.map(|r| r.steps.as_slice()).unwrap_or_default();
    for step in steps {
        run_step(step, &ctx)?;
    }
    if serving {
        serve(&scenario, line_rules, &mut ctx, serve_record)?;
    }
    if let Some(socket) = relay {
        relay_to(socket)?;
    }
    Ok(())
}

/// Relay mode: stdin to the socket, the socket to stdout, until the socket's peer closes it.
fn relay_to(socket: &Path) -> Result<(), Fail> {
    let stream = UnixStream::connect(socket)
        .map_err(|e| bad(format!("cannot connect to {}: {e}", socket.display())))?;
    let from_peer = stream
        .try_clone()
        .map_err(|e| bad(format!("cannot clone the relay socket: {e}")))?;
    let answers = std::thread::spawn(move || copy_lines(from_peer, &mut io::stdout().lock()));
    copy_lines(io::stdin().lock(), &mut &stream)?;
    // The peer sees the driver's EOF, and closes its side when it is done.
    let _ = stream.shutdown(std::net::Shutdown::Write);
    answers
        .join()
        .map_err(|_| bad("the relay thread panicked"))?
}

/// Copies whole lines from `from` to `to` until EOF, flushing each. Not `io::copy`: on Linux it
/// splices, and a splice waiting for the socket holds the pipe, so the driver reading it would
/// wait too.
fn copy_lines(from: impl io::Read, to: &mut impl Write) -> Result<(), Fail> {
    let mut from = io::BufReader::new(from);
    let mut line = Vec::new();
    while next_line(&mut from, &mut line, "a relayed line")? {
        to.write_all(&line)
            .and_then(|()| to.flush())
            .map_err(|_| Fail::Pipe)?;
    }
    Ok(())
}

/// Reads the next line of `input` (with its newline, at most [`MAX_LINE`] bytes: a longer one
/// is taken as several) into `line`; `false` at EOF. `what` names the input in an error.
fn next_line(input: &mut impl BufRead, line: &mut Vec<u8>, what: &str) -> Result<bool, Fail> {
    line.clear();
    let n = input
        .take(MAX_LINE)
        .read_until(b'\n', line)
        .map_err(|e| bad(format!("cannot read {what}: {e}")))?;
    Ok(n > 0)
}

/// Serve mode: each stdin line is recorded, then runs the first unspent matching line rule.
/// Returns at stdin EOF (after the exit delay).
fn serve(
    scenario: &Scenario,
    rules: &[LineRule],
    ctx: &mut Templates<'_>,
    mut record: Option<fs::File>,
) -> Result<(), Fail> {
    let mut spent = vec![false; rules.len()];
    let mut input = io::stdin().lock();
    let mut raw = Vec::new();
    while next_line(&mut input, &mut raw, "stdin")? {
        if raw.last() == Some(&b'\n') {
            raw.pop();
        }
        if let Some(file) = &mut record {
            let mut bytes = Vec::with_capacity(raw.len() + 1);
            bytes.extend_from_slice(&raw);
            bytes.push(b'\n');
            // One write of the whole line, like the invocation record.
            file.write_all(&bytes)
                .map_err(|e| bad(format!("cannot write the serve record: {e}")))?;
        }
        let line = String::from_utf8_lossy(&raw);
        ctx.receive(&line);
        let found = rules
            .iter()
            .zip(&mut spent)
            .find(|(rule, spent)| !**spent && rule.matches(&line));
        let Some((rule, spent)) = found else {
            continue;
        };
        *spent = rule.once;
        for step in &rule.steps {
            run_step(step, ctx)?;
        }
    }
    if let Some(ms) = scenario.serve_exit_delay_ms {
        std::thread::sleep(Duration::from_millis(ms));
    }
    Ok(())
}

fn read_stdin() -> Result<String, Fail> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Ok(String::new());
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_STDIN)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("cannot read stdin: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn invocation(scenario: &Scenario, argv: &[String], stdin: &str) -> Result<Invocation, Fail> {
    let mut inv = Invocation::default();
    inv.argv = argv.to_vec();
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    names.sort();
    inv.env_names = names;
    for name in &scenario.record_env_values {
        if let Some(value) = std::env::var_os(name) {
            inv.env
                .insert(name.clone(), value.to_string_lossy().into_owned());
        }
    }
    inv.stdin = stdin.to_owned();
    inv.cwd = std::env::current_dir().map_err(|e| bad(format!("cannot read the cwd: {e}")))?;
    inv.pid = std::process::id();
    inv.pgid = rustix::process::getpgrp().as_raw_pid().unsigned_abs();

    let capture = &scenario.capture_files;
    for flag in &capture.arg_flags {
        let eq = format!("{flag}=");
        for (i, arg) in argv.iter().enumerate() {
            let named = if arg == flag {
                argv.get(i + 1).map(String::as_str)
            } else {
                arg.strip_prefix(&eq)
            };
            if let Some(file) = named {
                capture_file(Path::new(file), &mut inv);
            }
        }
    }
    for var in &capture.dirs_from_env {
        if let Some(dir) = std::env::var_os(var) {
            capture_dir(Path::new(&dir), 0, &mut inv);
        }
    }
    Ok(inv)
}

/// Records one file if it is a regular file (not followed through a symlink).
fn capture_file(path: &Path, inv: &mut Invocation) {
    if inv.files.len() >= MAX_CAPTURED_FILES {
        return;
    }
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_file() {
        return;
    }
    let mut bytes = Vec::new();
    let Ok(file) = fs::File::open(path) else {
        return;
    };
    if file
        .take(MAX_CAPTURED_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return;
    }
    let mut captured = CapturedFile::default();
    captured.contents = String::from_utf8_lossy(&bytes).into_owned();
    captured.mode = format!("{:o}", meta.permissions().mode() & 0o7777);
    inv.files
        .insert(path.to_string_lossy().into_owned(), captured);
}

fn capture_dir(dir: &Path, depth: usize, inv: &mut Invocation) {
    if depth > MAX_CAPTURE_DEPTH {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => capture_dir(&path, depth + 1, inv),
            Ok(m) if m.is_file() => capture_file(&path, inv),
            _ => {}
        }
    }
}

/// Opens a file for `O_APPEND` writes, creating it; `what` names it in the error.
fn open_append(path: &Path, what: &str) -> Result<fs::File, Fail> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| bad(format!("cannot open {what} {}: {e}", path.display())))
}

fn append_record(path: &Path, inv: &Invocation) -> Result<(), Fail> {
    let mut line =
        serde_json::to_string(inv).map_err(|e| bad(format!("cannot encode the record: {e}")))?;
    line.push('\n');
    let mut file = open_append(path, "record")?;
    // One write of the whole line: O_APPEND keeps concurrent records whole.
    file.write_all(line.as_bytes())
        .map_err(|e| bad(format!("cannot write record {}: {e}", path.display())))
}

struct Templates<'a> {
    uuid: String,
    argv: &'a [String],
    stdin: String,
    /// Set in serve mode only, so without it the serve templates stay as they are.
    serve: Option<Served>,
}

/// The serve-mode template values.
struct Served {
    pid: u32,
    session: String,
    /// Lines received so far.
    count: u64,
    /// The current line as JSON, when it is JSON.
    line: Option<serde_json::Value>,
}

impl Templates<'_> {
    /// Makes `line` the current line of the serve templates.
    fn receive(&mut self, line: &str) {
        if let Some(served) = &mut self.serve {
            served.count += 1;
            served.line = serde_json::from_str(line).ok();
        }
    }

    fn resolve(&self, name: &str) -> Option<String> {
        if name == "NEW_UUID" {
            return Some(self.uuid.clone());
        }
        if name == "STDIN" {
            return Some(self.stdin.clone());
        }
        if let Some(word) = name.strip_prefix("ARG_AFTER:") {
            let i = self.argv.iter().position(|a| a == word);
            return Some(
                i.and_then(|i| self.argv.get(i + 1))
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        let served = self.serve.as_ref()?;
        match name {
            "ID" => Some(
                served
                    .line
                    .as_ref()
                    .and_then(|line| line.get("id"))
                    .map_or_else(|| String::from("null"), serde_json::Value::to_string),
            ),
            "PID" => Some(served.pid.to_string()),
            "SESSION" => Some(served.session.clone()),
            "COUNT" => Some(served.count.to_string()),
            _ => {
                // `PARAM:` from the line's params, `FIELD:` from the line itself.
                let (path, mut value) = match name.strip_prefix("PARAM:") {
                    Some(path) => (path, served.line.as_ref().and_then(|l| l.get("params"))),
                    None => (name.strip_prefix("FIELD:")?, served.line.as_ref()),
                };
                for segment in path.split('.') {
                    value = value.and_then(|v| match v {
                        serde_json::Value::Array(items) => {
                            segment.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => v.get(segment),
                    });
                }
                Some(
                    value
                        .and_then(serde_json::Value::as_str)
                        .map(json_escape)
                        .unwrap_or_default(),
                )
            }
        }
    }

    fn expand(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let name = &after[..end];
            match self.resolve(name) {
                Some(value) => out.push_str(&value),
                None => out.push_str(&rest[start..start + 2 + end + 1]),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// JSON string escaping without the surrounding quotes.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::Value::from(text).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .map(str::to_owned)
        .unwrap_or(quoted)
}

/// Writes the text and its newline in one `write_all` (stderr is unbuffered, and a reader
/// should never see half a line because of how the fake formats it).
fn print_line(out: &mut impl Write, text: &str) -> Result<(), Fail> {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    out.write_all(line.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|_| Fail::Pipe)
}

fn run_step(step: &Step, ctx: &Templates<'_>) -> Result<(), Fail> {
    match step {
        Step::Stdout(text) => print_line(&mut io::stdout().lock(), &ctx.expand(text)),
        Step::Stderr(text) => print_line(&mut io::stderr().lock(), &ctx.expand(text)),
        Step::SleepMs(ms) => {
            std::thread::sleep(Duration::from_millis(*ms));
            Ok(())
        }
        Step::StdoutUnterminatedBytes(n) => {
            let chunk = [b'a'; 64 * 1024];
            let mut out = io::stdout().lock();
            let mut left = *n;
            while left > 0 {
                let len = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
                out.write_all(&chunk[..len]).map_err(|_| Fail::Pipe)?;
                left -= len as u64;
            }
            out.flush().map_err(|_| Fail::Pipe)
        }
        Step::StdoutRepeated { line, times } => {
            let mut line = ctx.expand(line);
            line.push('\n');
            let mut out = io::BufWriter::new(io::stdout().lock());
            for _ in 0..*times {
                out.write_all(line.as_bytes()).map_err(|_| Fail::Pipe)?;
            }
            out.flush().map_err(|_| Fail::Pipe)
        }
        Step::SpawnGrandchild { pid_file } => spawn_grandchild(pid_file),
        Step::Hang(true) => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Step::Exit(code) => {
            flush_all();
            std::process::exit(*code)
        }
        Step::KillSelf(true) => {
            flush_all();
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            Err(bad("SIGKILL did not end the process"))
        }
        Step::Hang(false) | Step::KillSelf(false) => Ok(()),
        _ => Err(bad("unsupported step")),
    }
}

fn flush_all() {
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
}

fn spawn_grandchild(pid_file: &Path) -> Result<(), Fail> {
    let exe = std::env::current_exe().map_err(|e| bad(format!("current_exe: {e}")))?;
    // Same process group; stdout and stderr inherited, so the grandchild holds the pipes open
    // like a helper server that outlives its parent would.
    let child = Command::new(exe)
        .env(GRANDCHILD_ENV, "1")
        .env_remove(SCENARIO_ENV)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| bad(format!("cannot spawn the grandchild: {e}")))?;
    let pid = child.id();
    // Never waited for: it outlives this process on purpose.
    drop(child);
    let tmp = pid_file.with_extension(tmp_extension(pid_file.extension()));
    fs::write(&tmp, pid.to_string())
        .and_then(|()| fs::rename(&tmp, pid_file))
        .map_err(|e| bad(format!("cannot write {}: {e}", pid_file.display())))
}

fn tmp_extension(ext: Option<&OsStr>) -> String {
    match ext {
        Some(ext) => format!("{}.tmp", ext.to_string_lossy()),
        None => String::from("tmp"),
    }
}
