//! The argv of one `gemini` invocation. A pure function of the options, the request's model
//! and MCP server names, and the session plan.
//!
//! The prompt is not in argv: it goes on stdin, with an empty `-p` to select headless mode
//! (Gemini appends `-p`'s text to stdin's, and uses stdin alone when `-p` is empty). So a
//! prompt that starts with `-` cannot be read as a flag, a long prompt does not hit the
//! kernel's per-argument limit, and no prompt shows in the process table.

use std::path::Path;

use crate::options::GeminiOptions;

/// The allow-list entry of a turn without MCP servers: a name no request server can have
/// (they are `[A-Za-z0-9_-]`), so nothing connects. Gemini refuses an empty value.
pub(crate) const NO_SERVERS: &str = "sdk.no-servers";

/// What the invocation does with sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Session<'a> {
    /// A new session under this host-chosen id (`--session-id`).
    Start(&'a str),
    /// Continue this session (`--resume`).
    Resume(&'a str),
    /// A new session importing this recording (`--session-file`), Gemini's only way to fork.
    Fork(&'a Path),
    /// A session under an id Gemini picks, never resumed: Gemini 0.61.0 has no switch that
    /// stops it from recording the session.
    Stateless,
}

/// Builds the argv (without the program).
///
/// `servers` are the request's MCP server names: each becomes one
/// `--allowed-mcp-server-names=<name>`, so a server declared elsewhere (a workspace's
/// `.gemini/settings.json`) does not connect. The `=` form keeps a name that starts with `-`
/// a value. Without servers the list holds [`NO_SERVERS`], since an empty list would allow
/// every server.
pub(crate) fn build(
    options: &GeminiOptions,
    model: Option<&str>,
    servers: &[&str],
    session: Session<'_>,
) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "", "--output-format", "stream-json", "--skip-trust"]
        .map(str::to_owned)
        .to_vec();
    if let Some(model) = model.or(options.model.as_deref()) {
        args.extend(["-m".to_owned(), model.to_owned()]);
    }
    match session {
        Session::Start(id) => args.extend(["--session-id".to_owned(), id.to_owned()]),
        Session::Resume(id) => args.extend(["--resume".to_owned(), id.to_owned()]),
        Session::Fork(file) => args.extend([
            "--session-file".to_owned(),
            file.to_string_lossy().into_owned(),
        ]),
        Session::Stateless => {}
    }
    let allowed = if servers.is_empty() {
        &[NO_SERVERS][..]
    } else {
        servers
    };
    args.extend(
        allowed
            .iter()
            .map(|name| format!("--allowed-mcp-server-names={name}")),
    );
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

    #[test]
    fn argv_by_session_plan() {
        let options = GeminiOptions::new().with_model("gemini-default");
        let head = ["-p", "", "--output-format", "stream-json", "--skip-trust"];
        // (session, request model, server names, argv after the head)
        type Row<'a> = (Session<'a>, Option<&'a str>, &'a [&'a str], Vec<&'a str>);
        let table: [Row<'_>; 5] = [
            (
                Session::Start(ID),
                None,
                &["agent-ui"],
                vec![
                    "-m",
                    "gemini-default",
                    "--session-id",
                    ID,
                    "--allowed-mcp-server-names=agent-ui",
                ],
            ),
            (
                Session::Resume(ID),
                Some("gemini-other"),
                &["a", "-b"],
                vec![
                    "-m",
                    "gemini-other",
                    "--resume",
                    ID,
                    "--allowed-mcp-server-names=a",
                    "--allowed-mcp-server-names=-b",
                ],
            ),
            (
                Session::Stateless,
                None,
                &[],
                vec![
                    "-m",
                    "gemini-default",
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
            (
                Session::Fork(Path::new("/g/.gemini/tmp/w/chats/session-x-0199a213.jsonl")),
                None,
                &[],
                vec![
                    "-m",
                    "gemini-default",
                    "--session-file",
                    "/g/.gemini/tmp/w/chats/session-x-0199a213.jsonl",
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
            (
                Session::Start(ID),
                Some("m"),
                &[],
                vec![
                    "-m",
                    "m",
                    "--session-id",
                    ID,
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
        ];
        for (session, model, servers, tail) in table {
            let args = build(&options, model, servers, session);
            let want: Vec<&str> = head.iter().copied().chain(tail).collect();
            assert_eq!(args, want, "{session:?}");
        }
        // Without any model, `-m` is left out (Gemini picks `auto`).
        let args = build(&GeminiOptions::new(), None, &["s"], Session::Stateless);
        let want: Vec<&str> = head
            .iter()
            .copied()
            .chain(["--allowed-mcp-server-names=s"])
            .collect();
        assert_eq!(args, want);
    }
}
