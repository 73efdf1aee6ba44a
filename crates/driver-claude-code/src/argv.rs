//! The argv of one `claude -p` invocation.

use std::path::Path;

use driver_stream_json::SessionPlan;

use crate::options::{ClaudeCodeOptions, PermissionPolicy};

/// Builds the argv (without the program). The prompt is read from stdin: nothing follows
/// the variadic `--allowedTools`, and no prompt argument can be mistaken for a tool name.
pub(crate) fn build(
    options: &ClaudeCodeOptions,
    model: Option<&str>,
    instructions: Option<&str>,
    mcp_config: &Path,
    server_names: &[&str],
    plan: SessionPlan<'_>,
) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(str::to_owned)
        .to_vec();
    args.extend(plan.flags(Some("--no-session-persistence")));
    if let Some(model) = model.or(options.model.as_deref()) {
        args.extend(["--model".to_owned(), model.to_owned()]);
    }
    if let Some(instructions) = instructions {
        args.extend(["--append-system-prompt".to_owned(), instructions.to_owned()]);
    }
    if let Some(turns) = options.max_turns {
        args.extend(["--max-turns".to_owned(), turns.to_string()]);
    }
    args.extend([
        "--mcp-config".to_owned(),
        mcp_config.to_string_lossy().into_owned(),
        "--strict-mcp-config".to_owned(),
    ]);
    let mode = match &options.permissions {
        PermissionPolicy::AllowRequestServers { mode } | PermissionPolicy::Explicit { mode } => {
            Some(*mode)
        }
        PermissionPolicy::DangerouslySkipPermissions => None,
    };
    match mode {
        Some(mode) => args.extend(["--permission-mode".to_owned(), mode.as_str().to_owned()]),
        None => args.push("--dangerously-skip-permissions".to_owned()),
    }
    let mut allowed: Vec<String> = Vec::new();
    if matches!(
        options.permissions,
        PermissionPolicy::AllowRequestServers { .. }
    ) {
        allowed.extend(server_names.iter().map(|s| format!("mcp__{s}")));
    }
    allowed.extend(options.allowed_tools.iter().cloned());
    if !allowed.is_empty() {
        args.extend(["--allowedTools".to_owned(), allowed.join(",")]);
    }
    args
}
