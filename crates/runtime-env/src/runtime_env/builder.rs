//! [`RuntimeEnvBuilder`]: checks the policy, then creates the layout and the child environment.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use secrecy::SecretString;

use super::{
    RuntimeEnv, SESSIONS_DIR, create_session, is_reserved_var, namespace_root, private_layout,
    shared_layout,
};
use crate::child_env::{self, ChildEnv, HostEnv};
use crate::error::Error;
use crate::namespace::CredentialNamespace;
use crate::policy::{self, IsolationLevel, IsolationMode, Tenancy, Verdict};
use crate::runtime::RuntimeDescriptor;
use crate::secure_fs::{self, Strictness};

/// Builder of a [`RuntimeEnv`]; see [`RuntimeEnv::builder`].
#[derive(Debug)]
pub struct RuntimeEnvBuilder {
    pub(super) base: PathBuf,
    pub(super) namespace: CredentialNamespace,
    pub(super) cwd: PathBuf,
    pub(super) level: IsolationLevel,
    pub(super) mode: IsolationMode,
    pub(super) tenancy: Tenancy,
    pub(super) host: HostEnv,
    pub(super) runtimes: Vec<&'static RuntimeDescriptor>,
    pub(super) vars: Vec<(String, OsString)>,
    pub(super) secrets: Vec<(String, SecretString)>,
}

impl RuntimeEnvBuilder {
    /// The isolation level (default [`IsolationLevel::Namespaced`]).
    pub fn level(mut self, level: IsolationLevel) -> Self {
        self.level = level;
        self
    }

    /// The isolation mode (default [`IsolationMode::Subprocess`], what a CLI driver does: a
    /// direct child in the host's OS user; multi-tenant, it builds with
    /// [`PolicyWarning::SameUserTenants`](crate::PolicyWarning::SameUserTenants)).
    pub fn mode(mut self, mode: IsolationMode) -> Self {
        self.mode = mode;
        self
    }

    /// The tenancy (default [`Tenancy::Multi`], the stricter policy).
    pub fn tenancy(mut self, tenancy: Tenancy) -> Self {
        self.tenancy = tenancy;
        self
    }

    /// The host environment that allow-listed variables are copied from (default: empty, so
    /// children get no host variable, not even PATH). Usually `HostEnv::capture()`, which a
    /// host needs whenever the child must find its program or its interpreter on `PATH` (a
    /// binary given by name; an npm-installed CLI, which is a Node script) or use the host's
    /// proxy, CA bundle or locale. Only [`ALLOWED_HOST_VARS`](crate::ALLOWED_HOST_VARS) are
    /// copied, never a credential.
    pub fn host_env(mut self, host: HostEnv) -> Self {
        self.host = host;
        self
    }

    /// Adds runtimes this environment serves (default: none). Each descriptor is checked
    /// ([`RuntimeDescriptor::validate`]) and policy-checked; its state directory is created
    /// 0700 and its state variable set for the child; the auth status, snapshot and summary
    /// cover it. A runtime given twice is served once, in the order first given.
    ///
    /// Only served runtimes have a state directory here: a driver refuses an environment that
    /// does not serve its runtime.
    pub fn runtimes(
        mut self,
        runtimes: impl IntoIterator<Item = &'static RuntimeDescriptor>,
    ) -> Self {
        for runtime in runtimes {
            if !self.runtimes.contains(&runtime) {
                self.runtimes.push(runtime);
            }
        }
        self
    }

    /// Adds a plain (non-secret) variable, such as `ANTHROPIC_BASE_URL`. Credential-looking and
    /// reserved names are rejected by [`build`](Self::build).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// Injects a secret variable (an API key or token). It is applied last and is visible only
    /// to the child process.
    pub fn secret(mut self, name: impl Into<String>, value: SecretString) -> Self {
        self.secrets.push((name.into(), value));
        self
    }

    /// Checks the policy and inputs, creates the directories and assembles the child
    /// environment.
    ///
    /// # Errors
    ///
    /// [`Error::Policy`] for an unsafe combination (an accepted one's warnings are in
    /// [`RuntimeEnv::policy_warnings`]), [`Error::Fs`] when a directory fails a
    /// safety check or cannot be created, and the variable errors for bad names.
    pub fn build(self) -> Result<RuntimeEnv, Error> {
        self.validate_runtimes()?;
        // The mode's own warnings hold even for an environment that serves no runtime yet.
        let mut verdict = Verdict::for_mode(self.mode, self.tenancy);
        for rt in &self.runtimes {
            verdict.merge(policy::check_runtime(
                rt,
                &self.level,
                self.mode,
                self.tenancy,
            )?);
        }
        secure_fs::require_absolute(&self.cwd).map_err(|_| Error::RelativeCwd)?;
        self.validate_vars()?;
        secure_fs::prepare_base(&self.base)?;

        let layout = match &self.level {
            IsolationLevel::Shared => shared_layout(&self.base, &self.host, &self.runtimes)?,
            IsolationLevel::Namespaced => {
                let root = namespace_root(&self.base, &self.namespace)?;
                private_layout(root.clone(), root, None, &self.runtimes)?
            }
            IsolationLevel::Ephemeral(session) => {
                let ns_root = namespace_root(&self.base, &self.namespace)?;
                let sessions =
                    secure_fs::ensure_dir(&ns_root, OsStr::new(SESSIONS_DIR), Strictness::Private)?;
                let (root, guard) = create_session(&sessions, session)?;
                private_layout(root.clone(), root, Some(guard), &self.runtimes)?
            }
        };

        let mut child = ChildEnv::default();
        for (k, v) in self.host.allowed() {
            child.set_copied(k.clone(), v.clone());
        }
        for (k, v) in self.vars {
            child.set_copied(k, v);
        }
        for (k, v) in &layout.vars {
            child.set_managed(*k, v.clone());
        }
        for (k, v) in self.secrets {
            child.set_secret(k, v);
        }

        Ok(RuntimeEnv {
            base: self.base,
            namespace: self.namespace,
            cwd: self.cwd,
            level: self.level,
            mode: self.mode,
            tenancy: self.tenancy,
            verdict,
            runtimes: self.runtimes,
            root: layout.root,
            home: layout.home,
            state_dirs: layout.state_dirs,
            lock_dir: layout.lock_dir,
            lock_name: layout.lock_name,
            child,
            guard: layout.guard,
        })
    }

    /// Each descriptor is valid, and no two share a name or a state variable.
    fn validate_runtimes(&self) -> Result<(), Error> {
        for (i, rt) in self.runtimes.iter().enumerate() {
            rt.validate()?;
            let clash = |reason| Error::InvalidDescriptor {
                runtime: rt.name,
                reason,
            };
            for other in &self.runtimes[..i] {
                if other.name == rt.name {
                    return Err(clash("another runtime of the environment has this name"));
                }
                if other.state_var == rt.state_var {
                    return Err(clash(
                        "another runtime of the environment has this state variable",
                    ));
                }
            }
        }
        Ok(())
    }

    fn is_reserved_var(&self, name: &str) -> bool {
        is_reserved_var(name) || self.runtimes.iter().any(|r| r.state_var == name)
    }

    fn validate_vars(&self) -> Result<(), Error> {
        let mut seen = std::collections::BTreeSet::new();
        let plain = self.vars.iter().map(|(k, _)| (k, false));
        let secret = self.secrets.iter().map(|(k, _)| (k, true));
        for (name, is_secret) in plain.chain(secret) {
            if !child_env::is_valid_var_name(name) {
                return Err(Error::InvalidVarName { len: name.len() });
            }
            if self.is_reserved_var(name) {
                return Err(Error::ReservedVar { name: name.clone() });
            }
            if !is_secret && child_env::is_credential_var(name) {
                return Err(Error::CredentialVar { name: name.clone() });
            }
            // A plain variable may be given twice (last wins); a secret never shares a name.
            if is_secret && !seen.insert(name.as_str()) {
                return Err(Error::DuplicateVar { name: name.clone() });
            }
        }
        for (name, _) in &self.vars {
            if seen.contains(name.as_str()) {
                return Err(Error::DuplicateVar { name: name.clone() });
            }
        }
        Ok(())
    }
}
