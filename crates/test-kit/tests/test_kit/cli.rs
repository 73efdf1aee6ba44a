//! Running a real agent CLI with a cleared environment, the prompt on stdin, and a deadline.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
use run_service::{ExposeSecret, RunId, RunServiceProvider};
use serde_json::{Value, json};

pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) events: Vec<Value>,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    pub(crate) fn init(&self) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == "system" && e["subtype"] == "init")
            .unwrap_or_else(|| panic!("no init event: {:?} {}", self.events, self.stderr))
    }

    pub(crate) fn result(&self) -> &Value {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == "result")
            .unwrap_or_else(|| panic!("no result event: {:?} {}", self.events, self.stderr))
    }

    /// The content blocks of every `assistant` event, in order.
    pub(crate) fn assistant_blocks(&self) -> Vec<&Value> {
        self.of_type("assistant")
            .into_iter()
            .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
            .collect()
    }

    /// The content blocks of every `user` event, in order.
    pub(crate) fn user_blocks(&self) -> Vec<&Value> {
        self.of_type("user")
            .into_iter()
            .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
            .collect()
    }
}

/// Runs `bin args` in `cwd` with only `PATH` and `env`, `prompt` on stdin; killed after
/// `deadline`. Stdout is parsed as JSON lines.
pub(crate) fn run(
    bin: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
    prompt: &str,
    deadline: Duration,
) -> Run {
    let mut child = Command::new(bin)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            child.kill().unwrap();
            let _ = child.wait();
            panic!(
                "{} did not finish in {deadline:?}; stdout so far: {}",
                bin.display(),
                out.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    let events = stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}; {stderr}"))
        })
        .collect();
    Run {
        code: status.code(),
        events,
        stderr,
    }
}

/// A hosted-tools server with one tool, `ping` (answers `pong:<text>`), attached to a run.
pub(crate) struct Tools {
    pub(crate) provider: HostedToolsProvider,
    pub(crate) url: String,
    /// (env var name, token) for the bearer header.
    pub(crate) token: (String, String),
}

pub(crate) async fn ping_tools() -> Tools {
    let ping = HostedTool::new(
        "ping",
        "Answers pong.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |call| async move {
            let text = call
                .arguments
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            Ok(ToolOutput::text(format!("pong:{text}")))
        },
    )
    .with_revision("1");
    let provider = HostedToolsProvider::new(ToolSet::new([ping]).unwrap());
    let attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let service = &attachment.services[0];
    let url = service.url.clone().unwrap();
    let binding = &service.secret_env[0];
    let token = (
        binding.name().to_owned(),
        binding.value().expose_secret().to_owned(),
    );
    Tools {
        provider,
        url,
        token,
    }
}

/// Writes an `--mcp-config` file (mode 0600) with one HTTP server `name` whose bearer comes
/// from `${token_var}`; `extra` is merged into the server entry.
pub(crate) fn mcp_config(
    dir: &Path,
    name: &str,
    url: &str,
    token_var: &str,
    extra: Value,
) -> String {
    let mut server = json!({
        "type": "http",
        "url": url,
        "headers": {"Authorization": format!("Bearer ${{{token_var}}}")},
    });
    if let (Some(server), Value::Object(extra)) = (server.as_object_mut(), extra) {
        server.extend(extra);
    }
    let config = json!({"mcpServers": {name: server}});
    let path = dir.join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path.to_str().unwrap().to_owned()
}
