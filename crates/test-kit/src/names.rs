//! How the CLIs mangle MCP server and tool names into model-facing tool names; each wire module
//! picks the characters its CLI keeps.

/// `name` with every character outside `[A-Za-z0-9]` and `keep` replaced by `_`.
pub(crate) fn mangle(name: &str, keep: &[char]) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || keep.contains(&c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__<server>__<tool>`, both parts [`mangle`]d with `keep`: the flat name Claude Code and
/// CodeBuddy Code give an MCP tool.
pub(crate) fn mcp_tool_name(server: &str, tool: &str, keep: &[char]) -> String {
    format!("mcp__{}__{}", mangle(server, keep), mangle(tool, keep))
}
