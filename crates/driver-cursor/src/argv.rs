//! The argv of one `cursor-agent -p` invocation: a pure function of the options, the request's
//! model and workspace, and the session plan.

use crate::options::{CursorOptions, PromptTransport};
use crate::session::Plan;

/// Builds the argv (without the program). With [`PromptTransport::Stdin`] (the default) the
/// prompt is not in it: it goes on stdin, so it never shows in the process table. With
/// [`PromptTransport::Argument`] it is the last element, after every flag; the caller has
/// checked it with [`is_prompt_argument`].
///
/// `--approve-mcps` is always passed: nobody can approve the request's MCP servers in `-p`
/// mode, and the driver wrote them itself.
pub(crate) fn build(
    options: &CursorOptions,
    model: Option<&str>,
    workspace: &str,
    plan: Plan<'_>,
    prompt: &str,
) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--workspace"]
        .map(str::to_owned)
        .to_vec();
    args.push(workspace.to_owned());
    if let Plan::Resume(id) = plan {
        args.extend(["--resume".to_owned(), id.to_owned()]);
    }
    if let Some(model) = model.or(options.model.as_deref()) {
        args.extend(["--model".to_owned(), model.to_owned()]);
    }
    args.push("--approve-mcps".to_owned());
    if options.trust_workspace {
        args.push("--trust".to_owned());
    }
    if options.force {
        args.push("--force".to_owned());
    }
    if options.prompt == PromptTransport::Argument {
        args.push(prompt.to_owned());
    }
    args
}

/// Whether `prompt` can be passed as the last argv element: non-empty, without NUL, and not
/// starting with `-` (the CLI would read it as a flag).
pub(crate) fn is_prompt_argument(prompt: &str) -> bool {
    is_flag_value(prompt)
}

/// Whether `value` can follow a flag as its own argv element: non-empty, without NUL, and
/// not starting with `-` (the CLI would read it as another flag).
pub(crate) fn is_flag_value(value: &str) -> bool {
    !value.is_empty() && !value.starts_with('-') && !value.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

    fn argv(options: &CursorOptions, model: Option<&str>, plan: Plan<'_>) -> String {
        build(options, model, "/srv/ws", plan, "the prompt").join(" ")
    }

    #[test]
    fn argv_table() {
        let plain = CursorOptions::new();
        let tuned = CursorOptions::new()
            .with_model("gpt-5")
            .with_trust_workspace(false)
            .with_force(true);
        let head = "-p --output-format stream-json --workspace /srv/ws";
        let cases: [(&CursorOptions, Option<&str>, Plan<'_>, String); 6] = [
            (
                &plain,
                None,
                Plan::Start,
                format!("{head} --approve-mcps --trust"),
            ),
            (
                &plain,
                None,
                Plan::Stateless,
                format!("{head} --approve-mcps --trust"),
            ),
            (
                &plain,
                None,
                Plan::Resume(ID),
                format!("{head} --resume {ID} --approve-mcps --trust"),
            ),
            (
                &plain,
                Some("sonnet-4"),
                Plan::Start,
                format!("{head} --model sonnet-4 --approve-mcps --trust"),
            ),
            (
                &tuned,
                None,
                Plan::Resume(ID),
                format!("{head} --resume {ID} --model gpt-5 --approve-mcps --force"),
            ),
            (
                &tuned,
                Some("sonnet-4"),
                Plan::Start,
                format!("{head} --model sonnet-4 --approve-mcps --force"),
            ),
        ];
        for (options, model, plan, want) in cases {
            assert_eq!(argv(options, model, plan), want, "{plan:?}");
        }
    }

    #[test]
    fn the_prompt_is_the_last_argument_only_when_asked() {
        let stdin = build(
            &CursorOptions::new(),
            None,
            "/srv/ws",
            Plan::Start,
            "hi there",
        );
        assert!(!stdin.iter().any(|a| a == "hi there"));
        let options = CursorOptions::new().with_prompt_transport(PromptTransport::Argument);
        let argv = build(&options, None, "/srv/ws", Plan::Resume(ID), "hi there");
        assert_eq!(argv.last().map(String::as_str), Some("hi there"));
        assert!(is_prompt_argument("hi there"));
        assert!(!is_prompt_argument("--force everything"));
        assert!(!is_prompt_argument(""));
    }

    #[test]
    fn flag_values() {
        assert!(is_flag_value("sonnet-4"));
        assert!(is_flag_value("/srv/ws"));
        assert!(!is_flag_value(""));
        assert!(!is_flag_value("--force"));
        assert!(!is_flag_value("a\0b"));
    }
}
