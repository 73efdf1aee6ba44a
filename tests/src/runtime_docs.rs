//! The runtime lists a new user reads first name every runtime of the registry: the README's
//! opening paragraph and its `> Status:` block, and `docs/agentctl.md`'s opening paragraph and
//! its `--runtime R` option row. Run by `tests/tests/runtime_docs.rs`, which takes the names
//! from `runtimes::all()`, so a runtime added to the code without these lines fails there.
//!
//! The checks are plain functions over a document's text and the registry names, so a test
//! can show that striking one runtime from one list is caught.

use std::ops::Range;

/// The `--runtime` row of agentctl's run options table.
pub const RUNTIME_OPTION_ROW: &str = "| `--runtime R` |";

/// The README's problems: each runtime of `names` (registry names, `claude_code`) that its
/// opening paragraph or its status block does not name in prose (`Claude Code`), and each of
/// those lists that is missing.
pub fn check_readme(readme: &str, names: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let lists = [
        ("the first paragraph", first_paragraph(readme)),
        ("the `> Status:` block", status_block(readme)),
    ];
    for (list, text) in lists {
        let Some(text) = text else {
            problems.push(format!("README.md: {list} is missing"));
            continue;
        };
        for name in names {
            if find_words(&text, &prose_words(name)).is_empty() {
                problems.push(format!("README.md: {list} does not name `{name}`"));
            }
        }
    }
    problems
}

/// `docs/agentctl.md`'s problems: each runtime of `names` that its opening paragraph or its
/// `--runtime R` row does not name as agentctl spells it (`` `claude-code` ``), and each of
/// those lists that is missing.
pub fn check_agentctl_doc(doc: &str, names: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let row = doc
        .lines()
        .find(|line| line.starts_with(RUNTIME_OPTION_ROW))
        .map(str::to_owned);
    let lists = [
        ("the first paragraph", first_paragraph(doc)),
        ("the `--runtime R` row", row),
    ];
    for (list, text) in lists {
        let Some(text) = text else {
            problems.push(format!("docs/agentctl.md: {list} is missing"));
            continue;
        };
        for name in names {
            if !text.contains(&flag_spelling(name)) {
                problems.push(format!("docs/agentctl.md: {list} does not name `{name}`"));
            }
        }
    }
    problems
}

/// The paragraph after the document's `# ` title, its lines joined as they are.
pub fn first_paragraph(doc: &str) -> Option<String> {
    let mut lines = doc
        .lines()
        .skip_while(|line| !line.starts_with("# "))
        .skip(1);
    let paragraph: Vec<&str> = lines
        .by_ref()
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| !line.trim().is_empty())
        .collect();
    (!paragraph.is_empty()).then(|| paragraph.join("\n"))
}

/// The block quote that opens with `> Status:`, without its `>` marks.
pub fn status_block(doc: &str) -> Option<String> {
    let block: Vec<&str> = doc
        .lines()
        .skip_while(|line| !line.starts_with("> Status:"))
        .take_while(|line| line.starts_with('>'))
        .map(|line| line.trim_start_matches('>').trim())
        .collect();
    (!block.is_empty()).then(|| block.join("\n"))
}

/// A registry name as prose words: `claude_code` is `claude code`, found in any case.
pub fn prose_words(name: &str) -> Vec<String> {
    name.split('_').map(str::to_ascii_lowercase).collect()
}

/// A registry name as agentctl shows it, in backticks: `` `claude-code` `` (agentctl's
/// `--runtime` values spell `_` as `-`).
pub fn flag_spelling(name: &str) -> String {
    format!("`{}`", name.replace('_', "-"))
}

/// Where `words` (lower case) appear in `text` in that order as whole words, in any case,
/// separated by whitespace only: the byte range of each occurrence.
pub fn find_words(text: &str, words: &[String]) -> Vec<Range<usize>> {
    let tokens: Vec<(Range<usize>, String)> = text
        .char_indices()
        .filter(|(at, c)| {
            c.is_alphanumeric()
                && !text[..*at]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphanumeric)
        })
        .map(|(start, _)| {
            let end = text[start..]
                .char_indices()
                .find(|(_, c)| !c.is_alphanumeric())
                .map_or(text.len(), |(at, _)| start + at);
            (start..end, text[start..end].to_lowercase())
        })
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    tokens
        .windows(words.len())
        .filter(|window| {
            window
                .iter()
                .zip(words)
                .all(|((_, token), word)| token == word)
                && window
                    .windows(2)
                    .all(|pair| text[pair[0].0.end..pair[1].0.start].trim().is_empty())
        })
        .map(|window| window[0].0.start..window[words.len() - 1].0.end)
        .collect()
}
