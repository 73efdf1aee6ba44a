//! Placeholder rendering of paths (`${HOME}/.codex/config.toml`, `${CWD}/AGENTS.md`), so that
//! summaries and snapshots do not depend on where the base directory or the project lives.

use std::path::{Path, PathBuf};

use crate::runtime::{Anchor, RuntimeDescriptor, SourceSpec};

/// The directories one runtime's implicit sources are relative to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchors<'a> {
    pub(crate) runtime: &'a RuntimeDescriptor,
    pub(crate) home: &'a Path,
    pub(crate) cwd: &'a Path,
    /// The runtime's state directory (its state variable's value).
    pub(crate) state_dir: &'a Path,
}

impl Anchors<'_> {
    /// The placeholder form of the runtime's state directory: `${HOME}/.codex` when it sits at
    /// its default place under HOME, `${CODEX_HOME}` otherwise.
    fn state_placeholder(&self) -> String {
        let d = self.runtime;
        if self.state_dir == join_rel(self.home, d.state_subdir) {
            join_placeholder("${HOME}", d.state_subdir)
        } else {
            format!("${{{}}}", d.state_var)
        }
    }

    /// The absolute path of a source and its placeholder form.
    pub(crate) fn resolve(&self, spec: &SourceSpec) -> (PathBuf, String) {
        match spec.anchor {
            Anchor::StateDir => (
                join_rel(self.state_dir, spec.path),
                join_placeholder(&self.state_placeholder(), spec.path),
            ),
            Anchor::Home => (
                join_rel(self.home, spec.path),
                join_placeholder("${HOME}", spec.path),
            ),
            Anchor::Cwd => (
                join_rel(self.cwd, spec.path),
                join_placeholder("${CWD}", spec.path),
            ),
            Anchor::System => (PathBuf::from(spec.path), spec.path.to_owned()),
        }
    }
}

/// `base` + `/`-separated `rel`, one component at a time.
pub(crate) fn join_rel(base: &Path, rel: &str) -> PathBuf {
    let mut p = base.to_owned();
    for c in rel.split('/').filter(|c| !c.is_empty()) {
        p.push(c);
    }
    p
}

fn join_placeholder(prefix: &str, rel: &str) -> String {
    if rel.is_empty() {
        prefix.to_owned()
    } else {
        format!("{prefix}/{rel}")
    }
}

/// Renders `path` relative to the longest matching anchor (`("${ROOT}", root)`, …); paths
/// under no anchor are shown as they are.
pub(crate) fn render(path: &Path, anchors: &[(&str, &Path)]) -> String {
    let mut best: Option<(&str, &Path)> = None;
    for &(name, dir) in anchors {
        if path.starts_with(dir)
            && best.is_none_or(|(_, b)| dir.as_os_str().len() > b.as_os_str().len())
        {
            best = Some((name, dir));
        }
    }
    match best.and_then(|(name, dir)| Some((name, path.strip_prefix(dir).ok()?))) {
        Some((name, rest)) if rest.as_os_str().is_empty() => name.to_owned(),
        Some((name, rest)) => format!("{name}/{}", rest.to_string_lossy()),
        None => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_picks_longest_anchor() {
        let base = Path::new("/b");
        let root = Path::new("/b/ns/x");
        let anchors = [("${BASE}", base), ("${ROOT}", root)];
        assert_eq!(render(Path::new("/b/ns/x/home"), &anchors), "${ROOT}/home");
        assert_eq!(render(Path::new("/b/ns/x"), &anchors), "${ROOT}");
        assert_eq!(render(Path::new("/b/other"), &anchors), "${BASE}/other");
        assert_eq!(render(Path::new("/elsewhere"), &anchors), "/elsewhere");
        // Component-wise, not string prefix.
        assert_eq!(render(Path::new("/bx"), &anchors), "/bx");
    }

    #[test]
    fn state_placeholders() {
        let tool = RuntimeDescriptor {
            state_subdir: ".tool",
            ..crate::runtime::tests::GOOD
        };
        let home = PathBuf::from("/h");
        let spec = tool.sources[1];
        assert_eq!(spec.path, "config.toml");
        let at = |state_dir: &Path, runtime| {
            Anchors {
                runtime,
                home: &home,
                cwd: Path::new("/w"),
                state_dir,
            }
            .resolve(&spec)
        };
        assert_eq!(
            at(Path::new("/h/.tool"), &tool),
            (
                PathBuf::from("/h/.tool/config.toml"),
                "${HOME}/.tool/config.toml".to_owned()
            )
        );
        // Elsewhere than its default place: named by the state variable.
        assert_eq!(
            at(Path::new("/elsewhere/tool"), &tool).1,
            "${TOOL_HOME}/config.toml"
        );
        // A state directory that is HOME itself (Gemini's).
        let in_home = RuntimeDescriptor {
            state_subdir: "",
            ..tool
        };
        assert_eq!(at(Path::new("/h"), &in_home).1, "${HOME}/config.toml");
    }
}
