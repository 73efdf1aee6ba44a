//! Every runtime of the registry (`runtimes::all()`, the list agentctl iterates) is named in
//! the README's opening paragraph and status block and in `docs/agentctl.md`'s opening
//! paragraph and `--runtime R` row. The names come from the code, so a runtime added without
//! these lines, or struck from one of them, fails here; the other tests prove the check can
//! fail, list by list.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};

use workspace_tests::runtime_docs::{
    RUNTIME_OPTION_ROW, check_agentctl_doc, check_readme, find_words, first_paragraph,
    flag_spelling, prose_words,
};

fn read(relative: &str) -> String {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits directly under the workspace root")
        .to_path_buf();
    std::fs::read_to_string(root.join(relative)).unwrap()
}

fn registry() -> Vec<&'static str> {
    let names: Vec<&str> = runtimes::all().iter().map(|r| r.name).collect();
    // Guard against an empty registry that would pass every check.
    assert!(names.len() >= 5, "{names:?}");
    names
}

#[test]
fn the_docs_name_every_registered_runtime() {
    let names = registry();
    let mut problems = check_readme(&read("README.md"), &names);
    problems.extend(check_agentctl_doc(&read("docs/agentctl.md"), &names));
    assert!(
        problems.is_empty(),
        "the runtime lists do not match the registry:\n{}",
        problems.join("\n")
    );
}

/// `text` with every whole-word prose mention of `name` struck out.
fn strike_prose(text: &str, name: &str) -> String {
    let mut text = text.to_owned();
    while let Some(range) = find_words(&text, &prose_words(name)).into_iter().next() {
        text.replace_range(range, "…");
    }
    text
}

#[test]
fn a_runtime_struck_from_a_readme_list_is_caught() {
    let readme = read("README.md");
    let names = registry();
    // Each list as the document spells it (the status block with its `>` marks).
    let status: Vec<&str> = readme
        .lines()
        .skip_while(|line| !line.starts_with("> Status:"))
        .take_while(|line| line.starts_with('>'))
        .collect();
    for name in &names {
        for list in [first_paragraph(&readme).unwrap(), status.join("\n")] {
            let struck = readme.replacen(&list, &strike_prose(&list, name), 1);
            assert!(struck != readme, "{name} is not in {list:?}");
            let problems = check_readme(&struck, &names);
            assert!(
                problems.iter().any(|p| p.contains(&format!("`{name}`"))),
                "striking {name} from {list:?} went unnoticed: {problems:?}"
            );
        }
    }
    let without_status = readme.replace("> Status:", "> State:");
    assert!(
        check_readme(&without_status, &names)
            .iter()
            .any(|p| p.contains("`> Status:` block is missing"))
    );
}

#[test]
fn a_runtime_struck_from_an_agentctl_list_is_caught() {
    let doc = read("docs/agentctl.md");
    let names = registry();
    let paragraph = first_paragraph(&doc).unwrap();
    let row = doc
        .lines()
        .find(|line| line.starts_with(RUNTIME_OPTION_ROW))
        .unwrap();
    for name in &names {
        for list in [paragraph.as_str(), row] {
            let struck = doc.replacen(list, &list.replace(&flag_spelling(name), "`…`"), 1);
            let problems = check_agentctl_doc(&struck, &names);
            assert!(
                problems.iter().any(|p| p.contains(&format!("`{name}`"))),
                "striking {name} from {list:?} went unnoticed: {problems:?}"
            );
        }
    }
}

#[test]
fn prose_names_match_whole_words_in_any_case_across_lines() {
    let words = prose_words("claude_code");
    let found = find_words("the Claude\nCode CLI", &words);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0], 4..15);
    assert!(find_words("Claude-Code, claudecode, Claude Codex", &words).is_empty());
    assert!(find_words("Codex", &prose_words("code")).is_empty());
    assert_eq!(flag_spelling("claude_code"), "`claude-code`");
}
