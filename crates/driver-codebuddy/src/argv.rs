//! The argv of one `codebuddy -p` invocation.

use std::path::Path;

use driver_stream_json::SessionPlan;

use crate::options::CodeBuddyOptions;

/// Builds the argv (without the program). The prompt is read from stdin: nothing follows
/// the variadic `--allowedTools`, and no prompt argument can be mistaken for a tool name.
pub(crate) fn build(
    options: &CodeBuddyOptions,
    model: Option<&str>,
    instructions: Option<&str>,
    mcp_config: &Path,
    plan: SessionPlan<'_>,
) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json"]
        .map(str::to_owned)
        .to_vec();
    // CodeBuddy has no flag to skip persistence: a stateless turn is a new session whose
    // checkpoint is not returned.
    args.extend(plan.flags(None));
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
    if let Some(mode) = options.permission_mode {
        args.extend(["--permission-mode".to_owned(), mode.as_str().to_owned()]);
    }
    if !options.allowed_tools.is_empty() {
        args.extend(["--allowedTools".to_owned(), options.allowed_tools.join(",")]);
    }
    args
}
