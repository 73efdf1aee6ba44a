//! Placeholder rendering of paths (`${HOME}/.codex/config.toml`, `${CWD}/AGENTS.md`), so that
//! summaries and snapshots do not depend on where the base directory or the project lives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::runtime::{Anchor, RuntimeKind, SourceSpec};

/// The directories a runtime's implicit sources are relative to.
#[derive(Debug, Clone)]
pub(crate) struct Anchors<'a> {
    pub(crate) home: &'a Path,
    pub(crate) cwd: &'a Path,
    pub(crate) state_dirs: &'a BTreeMap<RuntimeKind, PathBuf>,
}

impl Anchors<'_> {
    /// The runtime's state directory (its state variable's value).
    pub(crate) fn state_dir(&self, kind: RuntimeKind) -> PathBuf {
        self.state_dirs.get(&kind).cloned().unwrap_or_else(|| {
            let sub = kind.descriptor().state_subdir;
            if sub.is_empty() {
                self.home.to_owned()
            } else {
                self.home.join(sub)
            }
        })
    }

    /// The placeholder form of the runtime's state directory: `${HOME}/.codex` when it sits at
    /// its default place under HOME, `${CODEX_HOME}` otherwise.
    fn state_placeholder(&self, kind: RuntimeKind) -> String {
        let d = kind.descriptor();
        let state = self.state_dir(kind);
        let default = if d.state_subdir.is_empty() {
            self.home.to_owned()
        } else {
            self.home.join(d.state_subdir)
        };
        if state == default {
            join_placeholder("${HOME}", d.state_subdir)
        } else {
            format!("${{{}}}", d.state_var)
        }
    }

    /// The absolute path of a source and its placeholder form.
    pub(crate) fn resolve(&self, kind: RuntimeKind, spec: &SourceSpec) -> (PathBuf, String) {
        match spec.anchor {
            Anchor::StateDir => (
                join_rel(&self.state_dir(kind), spec.path),
                join_placeholder(&self.state_placeholder(kind), spec.path),
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
        let home = PathBuf::from("/h");
        let cwd = PathBuf::from("/w");
        let mut dirs = BTreeMap::new();
        dirs.insert(RuntimeKind::Codex, home.join(".codex"));
        dirs.insert(RuntimeKind::ClaudeCode, PathBuf::from("/elsewhere/claude"));
        let a = Anchors {
            home: &home,
            cwd: &cwd,
            state_dirs: &dirs,
        };
        let spec = RuntimeKind::Codex.descriptor().sources[1];
        assert_eq!(
            a.resolve(RuntimeKind::Codex, &spec),
            (
                PathBuf::from("/h/.codex/config.toml"),
                "${HOME}/.codex/config.toml".to_owned()
            )
        );
        let spec = RuntimeKind::ClaudeCode.descriptor().sources[1];
        assert_eq!(
            a.resolve(RuntimeKind::ClaudeCode, &spec).1,
            "${CLAUDE_CONFIG_DIR}/settings.json"
        );
        // Gemini's state directory is HOME itself.
        let spec = RuntimeKind::Gemini.descriptor().sources[1];
        assert_eq!(
            a.resolve(RuntimeKind::Gemini, &spec).1,
            "${HOME}/.gemini/settings.json"
        );
    }
}
