//! Isolation levels (directory layout), isolation modes (process boundary) and the policy check
//! that rejects unsafe combinations.
//!
//! The rules are documented on the public item they govern (see the crate root).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::namespace::SessionId;
use crate::runtime::RuntimeDescriptor;

/// Where a runtime's HOME/XDG state lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IsolationLevel {
    /// The host's own HOME/XDG directories. Easiest, least isolated: single tenant only.
    Shared,
    /// One persistent HOME/XDG tree per credential namespace. The default.
    Namespaced,
    /// One HOME/XDG tree per session under the namespace, removed when its guard drops.
    Ephemeral(SessionId),
}

impl IsolationLevel {
    /// The level's name as used in summaries: `shared`, `namespaced` or `ephemeral`.
    pub fn name(&self) -> &'static str {
        match self {
            IsolationLevel::Shared => "shared",
            IsolationLevel::Namespaced => "namespaced",
            IsolationLevel::Ephemeral(_) => "ephemeral",
        }
    }

    /// The session id of an ephemeral level.
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            IsolationLevel::Ephemeral(id) => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the runtime is hosted: the process boundary between it and the host, and whether that
/// boundary also separates principals (OS identities).
///
/// | mode | name | where the runtime runs | separates principals |
/// |---|---|---|---|
/// | [`InProcess`](Self::InProcess) | `in_process` | inside the host process | no |
/// | [`Subprocess`](Self::Subprocess) | `subprocess` | a direct child of the host, as the host's OS user | no |
/// | [`Worker`](Self::Worker) | `worker` | a worker process per namespace under an OS boundary (a sandbox or a uid of its own) | yes |
/// | [`ServerSide`](Self::ServerSide) | `server_side` | an external runtime server | yes, by the server's boundary |
///
/// The seed's word `subprocess` ("a dedicated worker process with its own environment and
/// HOME/XDG") names what is [`Worker`](Self::Worker) here; ours keeps the name `subprocess`
/// for what a CLI driver does today, spawning the CLI directly, because that name is already
/// stored and printed. A worker started without an OS boundary (the worker crate's direct
/// launcher) runs as the host's user: declare it [`Subprocess`](Self::Subprocess), not
/// [`Worker`](Self::Worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IsolationMode {
    /// The runtime library runs inside the host process; its HOME/XDG state is process-global
    /// and it runs as the host's OS user. No principal boundary.
    InProcess,
    /// A direct child in the host's OS user: its own environment (the
    /// [`ChildEnv`](crate::ChildEnv)) and HOME/XDG, no principal boundary. An agent of one
    /// tenant allowed to run commands can read every namespace of the same OS user.
    Subprocess,
    /// A dedicated worker process per credential namespace (the seed's `subprocess`) under an
    /// OS boundary: a sandbox in which only its own namespace and workspace are visible, or a
    /// uid of its own. Separates principals. The runtime is a direct child of the worker (or a
    /// library inside it), so a runtime that can be hosted as a subprocess or in process can
    /// be hosted in a worker.
    Worker,
    /// The host talks to an external runtime server; isolation is the server's boundary.
    ServerSide,
}

impl IsolationMode {
    /// The mode's name: `in_process`, `subprocess`, `worker` or `server_side`.
    pub fn name(self) -> &'static str {
        match self {
            IsolationMode::InProcess => "in_process",
            IsolationMode::Subprocess => "subprocess",
            IsolationMode::Worker => "worker",
            IsolationMode::ServerSide => "server_side",
        }
    }

    /// Whether the mode separates principals: the runtime of one tenant runs under an OS
    /// identity or sandbox that cannot read another tenant's namespace. `false` for
    /// [`InProcess`](Self::InProcess) and [`Subprocess`](Self::Subprocess), which run as the
    /// host's OS user; `true` for [`Worker`](Self::Worker), and for
    /// [`ServerSide`](Self::ServerSide), where the boundary is the server's and not this host's.
    pub fn separates_principals(self) -> bool {
        match self {
            IsolationMode::InProcess | IsolationMode::Subprocess => false,
            IsolationMode::Worker | IsolationMode::ServerSide => true,
        }
    }

    /// What the mode separates, in a few words, for summaries: `in process, same OS user`,
    /// `direct child, same OS user`, `worker, OS boundary` or `external server`.
    pub fn boundary(self) -> &'static str {
        match self {
            IsolationMode::InProcess => "in process, same OS user",
            IsolationMode::Subprocess => "direct child, same OS user",
            IsolationMode::Worker => "worker, OS boundary",
            IsolationMode::ServerSide => "external server",
        }
    }
}

impl fmt::Display for IsolationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether one host serves one principal or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Tenancy {
    /// One principal: every combination the runtime supports is allowed.
    Single,
    /// Several principals share the host: combinations that share state are rejected.
    Multi,
}

impl Tenancy {
    /// The tenancy's name: `single` or `multi`.
    pub fn name(self) -> &'static str {
        match self {
            Tenancy::Single => "single",
            Tenancy::Multi => "multi",
        }
    }
}

impl fmt::Display for Tenancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The facts about a runtime that the policy check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeTraits {
    /// Short runtime name used in errors (`codex`, `claude`, …).
    pub name: &'static str,
    /// Modes the runtime can be hosted in. [`IsolationMode::Worker`] need not be listed: a
    /// runtime that supports [`Subprocess`](IsolationMode::Subprocess) or
    /// [`InProcess`](IsolationMode::InProcess) runs in a worker the same way.
    pub supported_modes: &'static [IsolationMode],
    /// Whether the runtime keeps OAuth credentials or session state on local disk.
    pub disk_state: bool,
}

impl RuntimeTraits {
    /// Whether the runtime can be hosted in `mode`: listed in
    /// [`supported_modes`](Self::supported_modes), or [`Worker`](IsolationMode::Worker) for a
    /// runtime that runs on this host (as a subprocess or in process), since a worker hosts it
    /// in one of those ways inside its own boundary.
    pub fn supports(&self, mode: IsolationMode) -> bool {
        let listed = |m| self.supported_modes.contains(&m);
        listed(mode)
            || (mode == IsolationMode::Worker
                && (listed(IsolationMode::Subprocess) || listed(IsolationMode::InProcess)))
    }
}

/// An unsafe or unsupported combination of runtime, level, mode and tenancy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The runtime cannot be hosted in this mode.
    #[error("runtime `{runtime}` does not support isolation mode `{mode}`")]
    UnsupportedMode {
        /// Runtime name.
        runtime: &'static str,
        /// The requested mode.
        mode: IsolationMode,
    },
    /// Multi-tenant use of the host's shared HOME for a runtime that keeps state on disk.
    #[error(
        "runtime `{runtime}` keeps credentials on disk: the shared level would give every tenant \
         the host's credentials; use the namespaced or ephemeral level"
    )]
    SharedLevelMultiTenant {
        /// Runtime name.
        runtime: &'static str,
    },
    /// Multi-tenant in-process use of a runtime that keeps OAuth state on disk.
    #[error(
        "runtime `{runtime}` keeps OAuth state on disk: in-process hosting shares HOME between \
         tenants; use the worker mode (the subprocess mode separates HOME but not the OS user)"
    )]
    InProcessMultiTenant {
        /// Runtime name.
        runtime: &'static str,
    },
}

/// A combination the policy accepts but the host must act on or report: it is not refused
/// because it is what every host without an OS boundary runs today, and refusing it would
/// refuse them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PolicyWarning {
    /// Several tenants run in a mode that does not separate principals
    /// ([`IsolationMode::separates_principals`] is `false`): every tenant's runtime runs as the
    /// host's OS user, so an agent allowed to run commands (by policy or by a person approving
    /// one) can read every other tenant's namespace (credentials, sessions). HOME/XDG and the
    /// environment are still separate; file permissions are not.
    #[error(
        "multi-tenant use of isolation mode `{mode}` ({boundary}): every tenant's runtime runs \
         as the host's OS user, so an agent allowed to run commands can read other tenants' \
         namespaces; use the worker mode for a principal boundary",
        boundary = mode.boundary()
    )]
    SameUserTenants {
        /// The mode in force.
        mode: IsolationMode,
    },
}

/// What [`check`] concluded about an accepted combination: its warnings, which a host must
/// act on or report (the type is `#[must_use]`, so dropping it unread is a compiler warning).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "a verdict may carry a warning (same-user tenants) the host must act on or report"]
pub struct Verdict {
    warnings: Vec<PolicyWarning>,
}

impl Verdict {
    /// The warnings, in the order the rules were checked; empty when nothing needs attention.
    pub fn warnings(&self) -> &[PolicyWarning] {
        &self.warnings
    }

    /// Whether the verdict carries no warning.
    pub fn is_clean(&self) -> bool {
        self.warnings.is_empty()
    }

    /// Adds the warnings of `other` not already present (one environment checks each of its
    /// runtimes; a warning about the mode is the same for all of them).
    pub fn merge(&mut self, other: Verdict) {
        for w in other.warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// The warnings about a mode and tenancy alone, whatever the runtime.
    pub(crate) fn for_mode(mode: IsolationMode, tenancy: Tenancy) -> Self {
        let mut warnings = Vec::new();
        if tenancy == Tenancy::Multi && !mode.separates_principals() {
            warnings.push(PolicyWarning::SameUserTenants { mode });
        }
        Verdict { warnings }
    }
}

/// Checks one combination against these rules:
///
/// | level \ tenancy | single tenant | multi-tenant |
/// |---|---|---|
/// | [`Shared`](IsolationLevel::Shared) | allowed | rejected when the runtime keeps state on disk, unless the mode is [`ServerSide`](IsolationMode::ServerSide) |
/// | [`Namespaced`](IsolationLevel::Namespaced) | allowed | allowed, except in-process (below); warned about in a mode that does not separate principals (below) |
/// | [`Ephemeral`](IsolationLevel::Ephemeral) | allowed | as namespaced |
///
/// Independently of the level:
///
/// * a mode the runtime does not support ([`RuntimeTraits::supports`]) is rejected;
/// * multi-tenant [`InProcess`](IsolationMode::InProcess) use of a runtime that keeps OAuth state
///   on disk is rejected: HOME and the runtime's state directory are process-global, so
///   concurrent tenants would read and write each other's credential cache;
/// * multi-tenant use of a mode that does not separate principals
///   ([`InProcess`](IsolationMode::InProcess) of a runtime without disk state,
///   [`Subprocess`](IsolationMode::Subprocess)) is accepted with
///   [`PolicyWarning::SameUserTenants`] in the [`Verdict`]: the directories are separate, the
///   OS user is not. [`Worker`](IsolationMode::Worker) and
///   [`ServerSide`](IsolationMode::ServerSide) carry no such warning.
///
/// # Errors
///
/// The first rule the combination breaks, as a [`PolicyError`].
pub fn check(
    runtime: &RuntimeTraits,
    level: &IsolationLevel,
    mode: IsolationMode,
    tenancy: Tenancy,
) -> Result<Verdict, PolicyError> {
    if !runtime.supports(mode) {
        return Err(PolicyError::UnsupportedMode {
            runtime: runtime.name,
            mode,
        });
    }
    if tenancy == Tenancy::Multi && runtime.disk_state {
        if mode == IsolationMode::InProcess {
            return Err(PolicyError::InProcessMultiTenant {
                runtime: runtime.name,
            });
        }
        if *level == IsolationLevel::Shared && mode != IsolationMode::ServerSide {
            return Err(PolicyError::SharedLevelMultiTenant {
                runtime: runtime.name,
            });
        }
    }
    Ok(Verdict::for_mode(mode, tenancy))
}

/// Checks a described runtime: shorthand for [`check`] with [`RuntimeDescriptor::traits`].
///
/// # Errors
///
/// As [`check`].
pub fn check_runtime(
    runtime: &RuntimeDescriptor,
    level: &IsolationLevel,
    mode: IsolationMode,
    tenancy: Tenancy,
) -> Result<Verdict, PolicyError> {
    check(&runtime.traits(), level, mode, tenancy)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [IsolationMode; 4] = [
        IsolationMode::InProcess,
        IsolationMode::Subprocess,
        IsolationMode::Worker,
        IsolationMode::ServerSide,
    ];

    fn levels() -> [IsolationLevel; 3] {
        [
            IsolationLevel::Shared,
            IsolationLevel::Namespaced,
            IsolationLevel::Ephemeral(SessionId::new("s1").expect("valid")),
        ]
    }

    fn same_user(mode: IsolationMode) -> Vec<PolicyWarning> {
        vec![PolicyWarning::SameUserTenants { mode }]
    }

    /// The full matrix for a disk-state runtime that supports every mode.
    #[test]
    fn matrix_for_disk_state_runtime() {
        let rt = RuntimeTraits {
            name: "test",
            supported_modes: &MODES,
            disk_state: true,
        };
        for level in levels() {
            for mode in MODES {
                for tenancy in [Tenancy::Single, Tenancy::Multi] {
                    let got = check(&rt, &level, mode, tenancy).map(|v| v.warnings().to_vec());
                    let expected = match (tenancy, mode, &level) {
                        (Tenancy::Single, _, _) => Ok(vec![]),
                        (Tenancy::Multi, IsolationMode::InProcess, _) => {
                            Err(PolicyError::InProcessMultiTenant { runtime: "test" })
                        }
                        (
                            Tenancy::Multi,
                            IsolationMode::Subprocess | IsolationMode::Worker,
                            IsolationLevel::Shared,
                        ) => Err(PolicyError::SharedLevelMultiTenant { runtime: "test" }),
                        (Tenancy::Multi, IsolationMode::Subprocess, _) => {
                            Ok(same_user(IsolationMode::Subprocess))
                        }
                        (Tenancy::Multi, _, _) => Ok(vec![]),
                    };
                    assert_eq!(got, expected, "{level} {mode} {tenancy:?}");
                }
            }
        }
    }

    #[test]
    fn multi_tenant_subprocess_is_warned_about_and_a_worker_is_not() {
        let rt = RuntimeTraits {
            name: "cli",
            supported_modes: &[IsolationMode::Subprocess],
            disk_state: true,
        };
        let ns = IsolationLevel::Namespaced;
        let direct = check(&rt, &ns, IsolationMode::Subprocess, Tenancy::Multi).expect("accepted");
        assert_eq!(direct.warnings(), same_user(IsolationMode::Subprocess));
        assert!(!direct.is_clean());
        let message = direct.warnings()[0].to_string();
        assert!(message.contains("host's OS user"), "{message}");
        assert!(message.contains("worker"), "{message}");

        // A worker hosts the same subprocess runtime without listing the mode.
        let worker = check(&rt, &ns, IsolationMode::Worker, Tenancy::Multi).expect("accepted");
        assert!(worker.is_clean(), "{worker:?}");
        // One tenant: nothing to separate.
        let single = check(&rt, &ns, IsolationMode::Subprocess, Tenancy::Single).expect("ok");
        assert!(single.is_clean());
    }

    #[test]
    fn only_worker_and_server_side_separate_principals() {
        let separating: Vec<_> = MODES
            .into_iter()
            .filter(|m| m.separates_principals())
            .collect();
        assert_eq!(
            separating,
            [IsolationMode::Worker, IsolationMode::ServerSide]
        );
        assert_eq!(IsolationMode::Worker.name(), "worker");
        for mode in MODES {
            let json = serde_json::to_value(mode).expect("serializes");
            assert_eq!(json, mode.name(), "the serialized name is the printed name");
        }
    }

    #[test]
    fn a_worker_needs_a_runtime_that_runs_on_this_host() {
        let server_only = RuntimeTraits {
            name: "remote",
            supported_modes: &[IsolationMode::ServerSide],
            disk_state: false,
        };
        assert!(!server_only.supports(IsolationMode::Worker));
        let in_process = RuntimeTraits {
            name: "lib",
            supported_modes: &[IsolationMode::InProcess],
            disk_state: false,
        };
        assert!(in_process.supports(IsolationMode::Worker));
    }

    #[test]
    fn merged_verdicts_keep_one_copy_of_a_warning() {
        let mut all = Verdict::default();
        all.merge(Verdict::for_mode(IsolationMode::Subprocess, Tenancy::Multi));
        all.merge(Verdict::for_mode(IsolationMode::Subprocess, Tenancy::Multi));
        assert_eq!(all.warnings(), same_user(IsolationMode::Subprocess));
    }

    #[test]
    fn stateless_runtime_may_run_in_process_for_many_tenants() {
        let rt = RuntimeTraits {
            name: "stateless",
            supported_modes: &[IsolationMode::InProcess],
            disk_state: false,
        };
        for level in levels() {
            let verdict = check(&rt, &level, IsolationMode::InProcess, Tenancy::Multi);
            // Accepted, but the tenants share the OS user.
            assert_eq!(
                verdict.map(|v| v.warnings().to_vec()),
                Ok(same_user(IsolationMode::InProcess))
            );
        }
        assert_eq!(
            check(
                &rt,
                &IsolationLevel::Namespaced,
                IsolationMode::Subprocess,
                Tenancy::Single
            ),
            Err(PolicyError::UnsupportedMode {
                runtime: "stateless",
                mode: IsolationMode::Subprocess
            })
        );
    }

    #[test]
    fn a_descriptor_is_checked_with_its_own_modes() {
        let subprocess_only = RuntimeDescriptor {
            name: "tool",
            supported_modes: &[IsolationMode::Subprocess],
            ..crate::runtime::tests::GOOD
        };
        let ns = IsolationLevel::Namespaced;
        assert_eq!(
            check_runtime(
                &subprocess_only,
                &ns,
                IsolationMode::Subprocess,
                Tenancy::Multi
            )
            .map(|v| v.warnings().to_vec()),
            Ok(same_user(IsolationMode::Subprocess))
        );
        assert_eq!(
            check_runtime(
                &subprocess_only,
                &ns,
                IsolationMode::InProcess,
                Tenancy::Single
            ),
            Err(PolicyError::UnsupportedMode {
                runtime: "tool",
                mode: IsolationMode::InProcess
            })
        );
        assert_eq!(
            check_runtime(
                &subprocess_only,
                &IsolationLevel::Shared,
                IsolationMode::Subprocess,
                Tenancy::Multi
            ),
            Err(PolicyError::SharedLevelMultiTenant { runtime: "tool" })
        );
    }
}
