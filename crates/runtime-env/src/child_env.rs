//! The host environment as an explicit input, and the allow-listed child environment.
//!
//! The rules are documented on the public item they govern (see the crate root).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

use secrecy::{ExposeSecret, SecretString};

/// Host variables copied into every child environment.
///
/// The proxy variables among them ([`PROXY_VARS`]) are copied without userinfo; a proxy that
/// needs credentials must be injected as a secret.
pub const ALLOWED_HOST_VARS: &[&str] = &[
    "PATH",
    "TERM",
    "COLORTERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    // Locale: POSIX and glibc categories only.
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_ADDRESS",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_NAME",
    "LC_PAPER",
    "LC_TELEPHONE",
];

/// Proxy variables whose host values are copied with their userinfo removed
/// ([`strip_proxy_userinfo`]). `NO_PROXY`/`no_proxy` are host lists and copied as they are.
pub const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Variables that carry credentials. Never copied from the host; pass them by injection.
pub const CREDENTIAL_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CURSOR_API_KEY",
    "CURSOR_AUTH_TOKEN",
    "CODEBUDDY_API_KEY",
    "CODEBUDDY_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// Name suffixes that mark a variable as a credential.
const CREDENTIAL_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
];

/// The XDG search-path variables, set to the specification's defaults (never the host's, which
/// may point into the host user's own directories).
pub(crate) const XDG_SEARCH_DIRS: &[(&str, &str)] = &[
    ("XDG_CONFIG_DIRS", "/etc/xdg"),
    ("XDG_DATA_DIRS", "/usr/local/share:/usr/share"),
];

/// Whether `name` carries a credential: it is on [`CREDENTIAL_VARS`] or ends with `_API_KEY`,
/// `_APIKEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, `_ACCESS_KEY` or `_PRIVATE_KEY` (ASCII case
/// ignored).
pub fn is_credential_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_VARS.contains(&upper.as_str())
        || CREDENTIAL_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Whether a host variable is copied into child environments (names are case-sensitive).
pub fn is_allowed_host_var(name: &str) -> bool {
    !is_credential_var(name) && ALLOWED_HOST_VARS.contains(&name)
}

/// A proxy URL without its userinfo: `http://user:pass@proxy:3128/` becomes
/// `http://proxy:3128/`, `user:pass@proxy:3128` becomes `proxy:3128`. A value without userinfo
/// is returned as it is.
///
/// Everything between `scheme://` (or the start, without a scheme) and the last `@` in the
/// value goes, `@` included: a password may hold a raw `@`, `:` or `/`, and a proxy URL has no
/// path worth keeping.
///
/// ```
/// use runtime_env::strip_proxy_userinfo;
/// use std::ffi::OsStr;
///
/// let url = OsStr::new("socks5://u:p@socks.example:1080");
/// assert_eq!(strip_proxy_userinfo(url), OsStr::new("socks5://socks.example:1080"));
/// let plain = OsStr::new("http://proxy:3128");
/// assert_eq!(strip_proxy_userinfo(plain), plain);
/// ```
pub fn strip_proxy_userinfo(value: &OsStr) -> Cow<'_, OsStr> {
    let bytes = value.as_bytes();
    let authority = scheme_len(bytes).map_or(0, |n| n + 3);
    match bytes[authority..].iter().rposition(|&b| b == b'@') {
        None => Cow::Borrowed(value),
        Some(at) => {
            let mut out = bytes[..authority].to_vec();
            out.extend_from_slice(&bytes[authority + at + 1..]);
            Cow::Owned(OsString::from_vec(out))
        }
    }
}

/// The length of a URL scheme (`[A-Za-z][A-Za-z0-9+.-]*`) followed by `://`.
fn scheme_len(bytes: &[u8]) -> Option<usize> {
    let sep = bytes.windows(3).position(|w| w == b"://")?;
    let scheme = &bytes[..sep];
    let valid = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
    valid.then_some(sep)
}

/// A variable name is `[A-Za-z_][A-Za-z0-9_]*`, at most 256 bytes.
pub(crate) fn is_valid_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 256
}

/// A snapshot of the host's environment, the only input from which child environments copy
/// host variables.
///
/// Take one with [`HostEnv::capture`], or build one by hand in tests. `Debug` prints names only.
#[derive(Clone, Default)]
pub struct HostEnv {
    vars: BTreeMap<OsString, OsString>,
}

impl HostEnv {
    /// The current process environment (`std::env::vars_os`).
    pub fn capture() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// An empty host environment: children get no host variable at all, not even PATH.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A host environment made of the given pairs.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The variable names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &OsStr> {
        self.vars.keys().map(OsString::as_os_str)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// An absolute, non-empty path value (the XDG rule: relative or empty values are ignored).
    pub(crate) fn absolute_path(&self, name: &str) -> Option<std::path::PathBuf> {
        let v = self.get(name)?;
        let p = std::path::Path::new(v);
        (!v.is_empty() && p.is_absolute()).then(|| p.to_owned())
    }

    /// The allow-listed variables, proxy values without userinfo.
    pub(crate) fn allowed(&self) -> impl Iterator<Item = (&OsString, OsString)> {
        self.vars.iter().filter_map(|(k, v)| {
            let name = k.to_str().filter(|n| is_allowed_host_var(n))?;
            let value = if PROXY_VARS.contains(&name) {
                strip_proxy_userinfo(v).into_owned()
            } else {
                v.clone()
            };
            Some((k, value))
        })
    }
}

impl fmt::Debug for HostEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostEnv")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The environment of a child runtime process.
///
/// Built by [`RuntimeEnv`](crate::RuntimeEnv), in the order below.
///
/// A [`ChildEnv`] is assembled in a fixed order:
///
/// 1. it starts empty;
/// 2. host variables on the allow-list ([`ALLOWED_HOST_VARS`]) are copied; the proxy variables
///    ([`PROXY_VARS`]) lose any userinfo (`http://user:pass@proxy:3128` becomes
///    `http://proxy:3128`, see [`strip_proxy_userinfo`]);
/// 3. caller-supplied plain variables are added;
/// 4. the namespace variables (HOME, XDG_*, TMPDIR and each runtime's state variable) are set;
/// 5. explicitly injected secrets are added.
///
/// Credential variables ([`CREDENTIAL_VARS`] and names that look like credentials, see
/// [`is_credential_var`]) are never copied from the host; the only way to pass one is to inject
/// it as a [`SecretString`]. The same holds for a proxy that needs credentials: inject the
/// whole URL as a secret under the proxy variable's name (for example
/// `.secret("HTTPS_PROXY", url)` on the builder), which replaces the stripped host value.
///
/// Only the POSIX/glibc locale variables are copied (`LANG`, `LANGUAGE`, `LC_ALL` and the
/// twelve `LC_<category>` variables), never an arbitrary `LC_*`: SSH forwards `LC_*` from the
/// client, so a name like `LC_GH_PAT` can carry anything.
///
/// Values of a `ChildEnv` leave it only through [`ChildEnv::apply_to`], which configures a
/// [`std::process::Command`] (convert that into a `tokio::process::Command` with `From` when
/// needed); the paths the crate itself chose (HOME, XDG_*, state variables) can also be read
/// with [`ChildEnv::get`]. `Debug` prints variable names only, and there is no `Serialize`.
#[derive(Clone, Default)]
pub struct ChildEnv {
    /// Allow-listed host variables and caller variables.
    copied: BTreeMap<OsString, OsString>,
    /// Variables the runtime environment sets itself (HOME, XDG_*, TMPDIR, state variables).
    managed: BTreeMap<OsString, OsString>,
    secrets: BTreeMap<String, SecretString>,
}

impl ChildEnv {
    pub(crate) fn set_copied(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        self.copied.insert(name.into(), value.into());
    }

    pub(crate) fn set_managed(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        let name = name.into();
        self.copied.remove(&name);
        self.managed.insert(name, value.into());
    }

    pub(crate) fn set_secret(&mut self, name: String, value: SecretString) {
        self.copied.remove(OsStr::new(&name));
        self.managed.remove(OsStr::new(&name));
        self.secrets.insert(name, value);
    }

    /// The value of a variable the runtime environment sets itself: HOME, the XDG variables,
    /// TMPDIR and the runtimes' state variables (paths this crate chose, never secrets).
    ///
    /// Copied host variables, caller variables and secrets are not readable here (a proxy URL
    /// may carry a password); only [`apply_to`](Self::apply_to) hands them on.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.managed.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// Whether the variable is set, whatever its origin.
    pub fn contains(&self, name: &str) -> bool {
        let os = OsStr::new(name);
        self.copied.contains_key(os)
            || self.managed.contains_key(os)
            || self.secrets.contains_key(name)
    }

    /// Every variable name, secrets included, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .copied
            .keys()
            .chain(self.managed.keys())
            .map(|k| k.to_string_lossy().into_owned())
            .chain(self.secrets.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Names of the injected secrets, sorted.
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.secrets.keys().map(String::as_str)
    }

    pub(crate) fn secret_values(&self) -> impl Iterator<Item = &SecretString> {
        self.secrets.values()
    }

    /// Replaces `cmd`'s environment with this one: `env_clear`, then every variable, secrets
    /// included. This is the only way values leave a `ChildEnv`.
    pub fn apply_to<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_clear();
        cmd.envs(&self.copied);
        cmd.envs(&self.managed);
        for (name, value) in &self.secrets {
            cmd.env(name, value.expose_secret());
        }
        cmd
    }
}

impl fmt::Debug for ChildEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildEnv")
            .field("copied", &self.copied.keys().collect::<Vec<_>>())
            .field("managed", &self.managed.keys().collect::<Vec<_>>())
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for n in CREDENTIAL_VARS {
            assert!(is_credential_var(n), "{n}");
            assert!(!is_allowed_host_var(n), "{n}");
        }
        assert!(is_credential_var("MY_MCP_TOKEN"));
        assert!(is_credential_var("my_service_api_key"));
        assert!(!is_credential_var("PATH"));
        assert!(!is_credential_var("TOKENIZER_PARALLELISM"));
    }

    #[test]
    fn allow_list() {
        assert!(is_allowed_host_var("PATH"));
        assert!(is_allowed_host_var("LC_ALL"));
        assert!(is_allowed_host_var("https_proxy"));
        assert!(!is_allowed_host_var("HOME"));
        assert!(!is_allowed_host_var("CODEX_HOME"));
        assert!(!is_allowed_host_var("XDG_CONFIG_HOME"));
        assert!(!is_allowed_host_var("LD_PRELOAD"));
        assert!(
            !is_allowed_host_var("LC_SECRET"),
            "credential-looking names lose"
        );
    }

    #[test]
    fn var_names() {
        assert!(is_valid_var_name("A_1"));
        assert!(is_valid_var_name("_x"));
        for bad in ["", "1A", "A-B", "A=B", "A B", "Ä"] {
            assert!(!is_valid_var_name(bad), "{bad}");
        }
    }

    #[test]
    fn debug_prints_names_only() {
        let host = HostEnv::from_vars([("OPENAI_API_KEY", "canary-host-1")]);
        let dbg = format!("{host:?}");
        assert!(
            dbg.contains("OPENAI_API_KEY") && !dbg.contains("canary"),
            "{dbg}"
        );

        let mut child = ChildEnv::default();
        child.set_copied("PATH", "/canary-path");
        child.set_managed("HOME", "/ns/home");
        child.set_secret("TOK".into(), SecretString::from("canary-secret-2"));
        let dbg = format!("{child:?}");
        assert!(dbg.contains("PATH") && dbg.contains("TOK"), "{dbg}");
        assert!(!dbg.contains("canary"), "{dbg}");
        assert_eq!(child.get("TOK"), None);
        assert_eq!(child.get("PATH"), None, "copied values are not readable");
        assert_eq!(child.get("HOME"), Some(OsStr::new("/ns/home")));
        assert!(child.contains("TOK") && child.contains("PATH"));
        assert_eq!(child.names(), ["HOME", "PATH", "TOK"]);
    }

    #[test]
    fn apply_to_replaces_environment() {
        let mut child = ChildEnv::default();
        child.set_copied("A", "1");
        child.set_managed("B", "2");
        child.set_secret("S".into(), SecretString::from("v"));
        let mut cmd = Command::new("true");
        cmd.env("LEFTOVER", "x");
        child.apply_to(&mut cmd);
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("A"), Some(OsStr::new("1")))));
        assert!(envs.contains(&(OsStr::new("B"), Some(OsStr::new("2")))));
        assert!(envs.contains(&(OsStr::new("S"), Some(OsStr::new("v")))));
        assert!(!envs.iter().any(|(k, _)| *k == "LEFTOVER"));
    }
}
