//! MCP tool names as Gemini gives them to the model, mapped back to the declared server and
//! tool.

/// Maps the tool names Gemini reports back to `mcp__<declared server>__<tool>`, the form the
/// other CLI drivers report, so events name a tool the same way whichever CLI ran.
///
/// Gemini 0.61.0 names an MCP tool `mcp_<server>_<tool>`, with every character outside
/// `[A-Za-z0-9_.:-]` replaced by `_` (and names over 63 characters cut to their first and
/// last 30 around `...`). Server names this driver accepts are `[A-Za-z0-9_-]`, so they
/// appear unchanged; since `_` is also the separator, the longest declared server name that
/// fits wins. Names of built-in tools (`read_file`, `glob`, …) and of tools of undeclared
/// servers pass unchanged.
///
/// ```
/// use driver_gemini::ToolNames;
///
/// let names = ToolNames::new(["agent-tools", "agent"]);
/// assert_eq!(names.report("mcp_agent-tools_ping"), "mcp__agent-tools__ping");
/// assert_eq!(names.report("mcp_agent_ping"), "mcp__agent__ping");
/// assert_eq!(names.report("mcp_other_ping"), "mcp_other_ping");
/// assert_eq!(names.report("read_file"), "read_file");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    /// Declared server names, longest first so that `agent-tools` wins over `agent`.
    servers: Vec<String>,
}

impl ToolNames {
    /// The names of the request's MCP servers.
    pub fn new<'a>(servers: impl IntoIterator<Item = &'a str>) -> Self {
        let mut servers: Vec<String> = servers.into_iter().map(str::to_owned).collect();
        servers.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        servers.dedup();
        Self { servers }
    }

    /// The name to report for a tool Gemini called `wire`.
    pub fn report(&self, wire: &str) -> String {
        let Some(rest) = wire.strip_prefix("mcp_") else {
            return wire.to_owned();
        };
        for server in &self.servers {
            if let Some(tool) = rest
                .strip_prefix(server.as_str())
                .and_then(|t| t.strip_prefix('_'))
                .filter(|t| !t.is_empty())
            {
                return format!("mcp__{server}__{tool}");
            }
        }
        wire.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_declared_server_wins_and_others_pass() {
        let names = ToolNames::new(["a", "a_b", "x-y"]);
        assert_eq!(names.report("mcp_a_b_ping"), "mcp__a_b__ping");
        assert_eq!(names.report("mcp_a_ping"), "mcp__a__ping");
        assert_eq!(names.report("mcp_x-y_do.it"), "mcp__x-y__do.it");
        assert_eq!(names.report("mcp_a_"), "mcp_a_");
        assert_eq!(names.report("mcp_"), "mcp_");
        assert_eq!(names.report("glob"), "glob");
        assert_eq!(ToolNames::default().report("mcp_a_b"), "mcp_a_b");
    }
}
