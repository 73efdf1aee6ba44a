//! MCP tool names, as the CLIs rewrite them, mapped back to the declared server and tool.

/// Maps the MCP tool names a CLI reports back to `mcp__<declared server>__<tool>`, so events
/// name a tool the same way whichever CLI ran.
///
/// Claude Code and Cursor report `mcp__agent-ui__ping`; CodeBuddy reports the same tool as
/// `mcp__agent_ui__ping` (characters outside `[A-Za-z0-9_]` become `_`); Gemini reports
/// `mcp_agent-ui_ping` ([`ToolNames::with_wire_form`]). A server is recognised as declared or
/// in that sanitized form, the longest declared name first (`agent-ui` wins over `agent`).
/// Names of built-in tools (`Bash`, `read_file`, …) and of undeclared servers pass unchanged.
///
/// ```
/// use driver_cli::ToolNames;
///
/// let names = ToolNames::new(["agent-ui", "agent"]);
/// assert_eq!(names.report("mcp__agent_ui__ping"), "mcp__agent-ui__ping");
/// assert_eq!(names.report("Bash"), "Bash");
/// let gemini = ToolNames::new(["agent-ui"]).with_wire_form("mcp_", "_");
/// assert_eq!(gemini.report("mcp_agent-ui_ping"), "mcp__agent-ui__ping");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
    /// `(declared, sanitized)`, longest declared name first.
    servers: Vec<(String, String)>,
    prefix: &'static str,
    separator: &'static str,
}

/// A name as the CLIs put it on the wire: every character outside `[A-Za-z0-9_]` becomes `_`.
fn sanitize(name: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_';
    name.chars()
        .map(|c| if keep(c) { c } else { '_' })
        .collect()
}

impl Default for ToolNames {
    /// No declared server: every name passes unchanged.
    fn default() -> Self {
        Self::new([])
    }
}

impl ToolNames {
    /// The names of the request's MCP servers, for the `mcp__<server>__<tool>` wire form.
    pub fn new<'a>(servers: impl IntoIterator<Item = &'a str>) -> Self {
        let mut servers: Vec<(String, String)> = servers
            .into_iter()
            .map(|s| (s.to_owned(), sanitize(s)))
            .collect();
        servers.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        servers.dedup();
        Self {
            servers,
            prefix: "mcp__",
            separator: "__",
        }
    }

    /// The same servers for a CLI whose wire form is `<prefix><server><separator><tool>`.
    #[must_use]
    pub fn with_wire_form(mut self, prefix: &'static str, separator: &'static str) -> Self {
        self.prefix = prefix;
        self.separator = separator;
        self
    }

    /// The name to report for a tool the CLI called `wire`.
    pub fn report(&self, wire: &str) -> String {
        let Some(rest) = wire.strip_prefix(self.prefix) else {
            return wire.to_owned();
        };
        self.servers
            .iter()
            .find_map(|(declared, sanitized)| {
                [declared, sanitized]
                    .into_iter()
                    .find_map(|p| rest.strip_prefix(p.as_str())?.strip_prefix(self.separator))
                    .filter(|tool| !tool.is_empty())
                    .map(|tool| format!("mcp__{declared}__{tool}"))
            })
            .unwrap_or_else(|| wire.to_owned())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn names_map_back_to_declared_servers() {
        let names = ToolNames::new(["agent", "agent-ui"]);
        assert_eq!(names.report("mcp__agent_ui__ping"), "mcp__agent-ui__ping");
        assert_eq!(names.report("mcp__agent-ui__ping"), "mcp__agent-ui__ping");
        assert_eq!(names.report("mcp__agent__ping"), "mcp__agent__ping");
        assert_eq!(names.report("mcp__other__ping"), "mcp__other__ping");
        assert_eq!(names.report("mcp__agent__"), "mcp__agent__");
        assert_eq!(names.report("Bash"), "Bash");
        let gemini = ToolNames::new(["agent-tools", "agent"]).with_wire_form("mcp_", "_");
        assert_eq!(
            gemini.report("mcp_agent-tools_ping"),
            "mcp__agent-tools__ping"
        );
        assert_eq!(gemini.report("mcp_agent_ping"), "mcp__agent__ping");
        assert_eq!(gemini.report("mcp_agent_"), "mcp_agent_");
        assert_eq!(gemini.report("read_file"), "read_file");
    }

    proptest! {
        #![proptest_config(test_support::fuzz_config())]

        /// A reported name is the wire name, or the wire name with a declared server (as
        /// declared or sanitized) replaced by the declared name.
        #[test]
        fn names_map_only_to_declared_servers(
            declared in prop::collection::vec(prop_oneof!["[a-z_.-]{1,6}", "\\PC{0,12}"], 0..4),
            wire in prop_oneof!["mcp__[a-z_.-]{0,8}__[a-z_]{0,6}", "\\PC{0,12}"],
            gemini in any::<bool>(),
        ) {
            let mut names = ToolNames::new(declared.iter().map(String::as_str));
            let (prefix, separator) = if gemini { ("mcp_", "_") } else { ("mcp__", "__") };
            names = names.with_wire_form(prefix, separator);
            let out = names.report(&wire);
            if out != wire {
                let ok = declared.iter().any(|d| {
                    [d.clone(), sanitize(d)].iter().any(|s| {
                        wire.strip_prefix(prefix)
                            .and_then(|r| r.strip_prefix(s.as_str()))
                            .and_then(|r| r.strip_prefix(separator))
                            .is_some_and(|tool| out == format!("mcp__{d}__{tool}"))
                    })
                });
                prop_assert!(ok, "{wire:?} -> {out:?}");
            }
        }
    }
}
