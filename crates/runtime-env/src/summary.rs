//! A secret-free summary of a [`RuntimeEnv`], printable for debugging (`Display`) and
//! serializable for support bundles (`Serialize`).
//!
//! It holds the namespace, level, mode (and whether it separates principals), the policy
//! check's warnings, placeholder paths (`${ROOT}/home`), variable names
//! (never values), the auth status and the implicit-source snapshot.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::auth::{AuthModel, AuthStatus, LoggedIn};
use crate::namespace::{CredentialNamespace, SessionId};
use crate::paths;
use crate::policy::{IsolationMode, PolicyWarning, Tenancy};
use crate::runtime_env::RuntimeEnv;
use crate::snapshot::{Snapshot, SourceStatus};

/// A summary of a runtime environment without secrets or variable values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RuntimeEnvSummary {
    /// The credential namespace.
    pub namespace: CredentialNamespace,
    /// `shared`, `namespaced` or `ephemeral`.
    pub level: &'static str,
    /// The session id of an ephemeral environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// The isolation mode in force.
    pub mode: IsolationMode,
    /// Whether that mode separates principals
    /// ([`IsolationMode::separates_principals`]): `false` means every namespace's runtime runs
    /// as the host's OS user.
    pub separates_principals: bool,
    /// The tenancy the policy was checked for.
    pub tenancy: Tenancy,
    /// The policy check's warnings ([`RuntimeEnv::policy_warnings`]).
    pub policy_warnings: Vec<PolicyWarning>,
    /// The namespace or session root, as `${BASE}/…` (absent at the shared level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Path variables set for the child (HOME, XDG_*, TMPDIR, state variables) as placeholder
    /// paths.
    pub paths: BTreeMap<String, String>,
    /// Names of every variable the child gets, secrets included.
    pub env_names: Vec<String>,
    /// Names of the injected secrets.
    pub injected_secrets: Vec<String>,
    /// Auth status per runtime.
    pub auth: Vec<AuthStatus>,
    /// Implicit-source snapshot.
    pub snapshot: Snapshot,
}

impl RuntimeEnvSummary {
    pub(crate) fn new(env: &RuntimeEnv) -> Self {
        let anchors = env.summary_anchors();
        let child = env.child_env();
        let mut path_vars: Vec<&str> = crate::runtime_env::LAYOUT_VARS
            .iter()
            .map(|(v, _)| *v)
            .collect();
        path_vars.extend(env.runtimes().iter().map(|r| r.state_var));
        let paths = path_vars
            .into_iter()
            .filter_map(|var| {
                let value = child.get(var)?;
                Some((
                    var.to_owned(),
                    paths::render(std::path::Path::new(value), &anchors),
                ))
            })
            .collect();
        Self {
            namespace: env.namespace().clone(),
            level: env.level().name(),
            session: env.level().session().cloned(),
            mode: env.mode(),
            separates_principals: env.mode().separates_principals(),
            tenancy: env.tenancy(),
            policy_warnings: env.policy_warnings().to_vec(),
            root: env
                .root()
                .map(|r| paths::render(r, &[("${BASE}", env.base_dir())])),
            paths,
            env_names: child.names(),
            injected_secrets: child.secret_names().map(str::to_owned).collect(),
            auth: env.auth_statuses(),
            snapshot: env.snapshot(),
        }
    }
}

fn logged_in_name(l: LoggedIn) -> &'static str {
    match l {
        LoggedIn::Yes => "yes",
        LoggedIn::No => "no",
        LoggedIn::Unknown => "unknown",
    }
}

fn auth_model_name(m: Option<AuthModel>) -> &'static str {
    match m {
        Some(AuthModel::OauthFile) => "oauth_file",
        Some(AuthModel::ApiKeyVar) => "api_key_var",
        Some(AuthModel::Keyring) => "keyring",
        None => "none",
    }
}

fn status_name(s: SourceStatus) -> &'static str {
    match s {
        SourceStatus::Present => "present",
        SourceStatus::Absent => "absent",
        SourceStatus::Unreadable => "unreadable",
        SourceStatus::CredentialPresent => "credential_present",
    }
}

impl fmt::Display for RuntimeEnvSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "runtime env: namespace={} level={}",
            self.namespace, self.level
        )?;
        if let Some(s) = &self.session {
            write!(f, " session={s}")?;
        }
        writeln!(f, " mode={} tenancy={}", self.mode, self.tenancy)?;
        writeln!(
            f,
            "isolation: {} ({}) separates_principals={}",
            self.mode,
            self.mode.boundary(),
            if self.separates_principals {
                "yes"
            } else {
                "no"
            }
        )?;
        for w in &self.policy_warnings {
            writeln!(f, "  warning: {w}")?;
        }
        if let Some(root) = &self.root {
            writeln!(f, "root: {root}")?;
        }
        writeln!(f, "paths:")?;
        for (var, path) in &self.paths {
            writeln!(f, "  {var}={path}")?;
        }
        writeln!(f, "env: {}", self.env_names.join(" "))?;
        writeln!(f, "secrets: {}", self.injected_secrets.join(" "))?;
        writeln!(f, "auth:")?;
        for a in &self.auth {
            write!(
                f,
                "  {}: logged_in={} model={}",
                a.runtime,
                logged_in_name(a.logged_in),
                auth_model_name(a.auth_model)
            )?;
            if let Some(label) = &a.account_label {
                write!(f, " label={label}")?;
            }
            writeln!(f)?;
            for w in &a.warnings {
                writeln!(f, "    warning: {w}")?;
            }
        }
        writeln!(f, "sources:")?;
        for r in &self.snapshot.runtimes {
            for s in &r.sources {
                write!(f, "  {} {} {}", r.runtime, s.path, status_name(s.status))?;
                if let Some(h) = &s.blake3 {
                    write!(f, " blake3={h}")?;
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
