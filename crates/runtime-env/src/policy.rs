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

/// How the runtime is hosted: the process boundary between it and the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IsolationMode {
    /// The runtime library runs inside the host process; its HOME/XDG state is process-global.
    InProcess,
    /// The runtime runs in its own child process with the [`ChildEnv`](crate::ChildEnv).
    Subprocess,
    /// The host talks to an external runtime server; isolation is the server's boundary.
    ServerSide,
}

impl IsolationMode {
    /// The mode's name: `in_process`, `subprocess` or `server_side`.
    pub fn name(self) -> &'static str {
        match self {
            IsolationMode::InProcess => "in_process",
            IsolationMode::Subprocess => "subprocess",
            IsolationMode::ServerSide => "server_side",
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
    /// Modes the runtime can be hosted in.
    pub supported_modes: &'static [IsolationMode],
    /// Whether the runtime keeps OAuth credentials or session state on local disk.
    pub disk_state: bool,
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
         tenants; use the subprocess mode"
    )]
    InProcessMultiTenant {
        /// Runtime name.
        runtime: &'static str,
    },
}

/// Checks one combination against these rules:
///
/// | level \ tenancy | single tenant | multi-tenant |
/// |---|---|---|
/// | [`Shared`](IsolationLevel::Shared) | allowed | rejected when the runtime keeps state on disk, unless the mode is [`ServerSide`](IsolationMode::ServerSide) |
/// | [`Namespaced`](IsolationLevel::Namespaced) | allowed | allowed, except in-process (below) |
/// | [`Ephemeral`](IsolationLevel::Ephemeral) | allowed | allowed, except in-process (below) |
///
/// Independently of the level:
///
/// * a mode the runtime does not support is rejected;
/// * multi-tenant [`InProcess`](IsolationMode::InProcess) use of a runtime that keeps OAuth state
///   on disk is rejected: HOME and the runtime's state directory are process-global, so
///   concurrent tenants would read and write each other's credential cache.
///
/// # Errors
///
/// The first rule the combination breaks, as a [`PolicyError`].
pub fn check(
    runtime: &RuntimeTraits,
    level: &IsolationLevel,
    mode: IsolationMode,
    tenancy: Tenancy,
) -> Result<(), PolicyError> {
    if !runtime.supported_modes.contains(&mode) {
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
    Ok(())
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
) -> Result<(), PolicyError> {
    check(&runtime.traits(), level, mode, tenancy)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [IsolationMode; 3] = [
        IsolationMode::InProcess,
        IsolationMode::Subprocess,
        IsolationMode::ServerSide,
    ];

    fn levels() -> [IsolationLevel; 3] {
        [
            IsolationLevel::Shared,
            IsolationLevel::Namespaced,
            IsolationLevel::Ephemeral(SessionId::new("s1").expect("valid")),
        ]
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
                    let got = check(&rt, &level, mode, tenancy);
                    let expected = match (tenancy, mode, &level) {
                        (Tenancy::Single, _, _) => Ok(()),
                        (Tenancy::Multi, IsolationMode::InProcess, _) => {
                            Err(PolicyError::InProcessMultiTenant { runtime: "test" })
                        }
                        (Tenancy::Multi, IsolationMode::Subprocess, IsolationLevel::Shared) => {
                            Err(PolicyError::SharedLevelMultiTenant { runtime: "test" })
                        }
                        (Tenancy::Multi, _, _) => Ok(()),
                    };
                    assert_eq!(got, expected, "{level} {mode} {tenancy:?}");
                }
            }
        }
    }

    #[test]
    fn stateless_runtime_may_run_in_process_for_many_tenants() {
        let rt = RuntimeTraits {
            name: "stateless",
            supported_modes: &[IsolationMode::InProcess],
            disk_state: false,
        };
        for level in levels() {
            assert_eq!(
                check(&rt, &level, IsolationMode::InProcess, Tenancy::Multi),
                Ok(())
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
            ),
            Ok(())
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
