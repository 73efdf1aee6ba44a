//! MCP tool names, as the CLIs rewrite them, mapped back to the declared server and tool.

/// Maps the MCP tool names a CLI reports back to `mcp__<declared server>__<tool>`.
///
/// Claude Code reports `mcp__agent-ui__ping`; CodeBuddy reports the same tool as
/// `mcp__agent_ui__ping` in `tool_use` (characters outside `[A-Za-z0-9_]` become `_`) while
/// its `system/init` keeps `agent-ui`. Both map to `mcp__agent-ui__ping`, so events name a
/// tool the same way whichever CLI ran. Names of built-in tools (`Bash`, `Read`, …) pass
/// unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolNames {
    /// `(declared, sanitized)`, longest declared name first so that `agent-ui` wins over
    /// `agent`.
    servers: Vec<(String, String)>,
}

/// A name as the CLIs put it on the wire: every character outside `[A-Za-z0-9_]` becomes `_`.
pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl ToolNames {
    /// The names of the request's MCP servers.
    pub(crate) fn new<'a>(servers: impl IntoIterator<Item = &'a str>) -> Self {
        let mut servers: Vec<(String, String)> = servers
            .into_iter()
            .map(|s| (s.to_owned(), sanitize(s)))
            .collect();
        servers.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Self { servers }
    }

    /// The name to report for a tool the CLI called `wire`.
    pub(crate) fn report(&self, wire: &str) -> String {
        let Some(rest) = wire.strip_prefix("mcp__") else {
            return wire.to_owned();
        };
        for (declared, sanitized) in &self.servers {
            for prefix in [declared, sanitized] {
                if let Some(tool) = rest
                    .strip_prefix(prefix.as_str())
                    .and_then(|t| t.strip_prefix("__"))
                {
                    return format!("mcp__{declared}__{tool}");
                }
            }
        }
        wire.to_owned()
    }

    /// Whether `server` is one of the declared servers.
    #[cfg(test)]
    pub(crate) fn declares(&self, server: &str) -> bool {
        self.servers.iter().any(|(d, _)| d == server)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    #[test]
    fn names_map_back_to_declared_servers() {
        use super::ToolNames;

        let names = ToolNames::new(["agent-ui", "agent"]);
        assert_eq!(names.report("mcp__agent_ui__ping"), "mcp__agent-ui__ping");
        assert_eq!(names.report("mcp__agent-ui__ping"), "mcp__agent-ui__ping");
        assert_eq!(names.report("mcp__agent__ping"), "mcp__agent__ping");
        assert_eq!(names.report("Bash"), "Bash");
    }
}
