//! Which variables a request may not bind in a runtime's process, and why.
//!
//! A run's services hand the runtime secret environment bindings (an MCP server's bearer
//! token, a tool's credential). Those bindings come from providers, which a host may not fully
//! trust, so they may not set what changes *how the runtime runs* or *where it sends its
//! traffic*: the loader, the interpreter, the search path, TLS trust, proxies, the model
//! endpoint, the model key, or what the environment manages itself. The dialect's own
//! variables (its model endpoint and key, from the driver's configuration) are not request
//! bindings and are not checked here.

use std::fmt;

use crate::RuntimeDescriptor;
use crate::child_env::PROXY_VARS;

/// A class of variables a request may not bind. Its `Display` names the class, never a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusedVar {
    /// Set by the runtime environment itself: HOME, XDG_*, TMPDIR, a state variable.
    Managed,
    /// The dynamic loader: `LD_*`, `DYLD_*`, `GCONV_PATH`.
    Loader,
    /// An interpreter or shell hook: `NODE_OPTIONS`, `NODE_PATH`, `BASH_ENV`, `ENV`,
    /// `PYTHONPATH`, `PERL5OPT`, `RUBYOPT`, `BASH_FUNC_*`, ….
    Interpreter,
    /// The program search path, `PATH`.
    SearchPath,
    /// TLS trust: `NODE_TLS_REJECT_UNAUTHORIZED`, `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`,
    /// `SSL_CERT_DIR`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `SSLKEYLOGFILE`, ….
    Tls,
    /// A proxy: `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` (either case).
    Proxy,
    /// A model endpoint: a runtime's [`endpoint_vars`](RuntimeDescriptor::endpoint_vars), or
    /// any `*_BASE_URL`.
    Endpoint,
    /// A runtime's model credential ([`api_key_vars`](RuntimeDescriptor::api_key_vars)): a
    /// binding would replace the key the namespace injects.
    ModelCredential,
}

impl fmt::Display for RefusedVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Managed => "a variable the runtime environment sets itself",
            Self::Loader => "a dynamic-loader variable",
            Self::Interpreter => "an interpreter or shell start-up variable",
            Self::SearchPath => "the program search path",
            Self::Tls => "a TLS trust variable",
            Self::Proxy => "a proxy variable",
            Self::Endpoint => "a model-endpoint variable",
            Self::ModelCredential => "the runtime's model credential",
        })
    }
}

const LOADER_PREFIXES: &[&str] = &["LD_", "DYLD_"];
const LOADER_VARS: &[&str] = &["GCONV_PATH", "LOCPATH", "HOSTALIASES", "RESOLV_HOST_CONF"];
const INTERPRETER_PREFIXES: &[&str] = &["BASH_FUNC_", "NPM_CONFIG_", "GIT_CONFIG_"];
const INTERPRETER_VARS: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "ZDOTDIR",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "SHELL",
];
const TLS_VARS: &[&str] = &[
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_NO_VERIFY",
    "GIT_SSL_CAINFO",
    "SSLKEYLOGFILE",
];

/// Whether `name` carries a network endpoint for one of `runtimes`: one of their
/// [`endpoint_vars`](RuntimeDescriptor::endpoint_vars), any `*_BASE_URL`, or a proxy
/// ([`PROXY_VARS`], `NO_PROXY`; ASCII case ignored). An agent checks the values of such
/// bindings against its endpoint policy.
///
/// ```
/// use runtime_env::is_endpoint_var;
///
/// assert!(is_endpoint_var("OPENAI_BASE_URL", &[]));
/// assert!(is_endpoint_var("https_proxy", &[]));
/// assert!(!is_endpoint_var("DOCS_TOKEN", &[]));
/// ```
pub fn is_endpoint_var(name: &str, runtimes: &[&RuntimeDescriptor]) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_BASE_URL")
        || is_proxy(&upper)
        || runtimes
            .iter()
            .any(|r| r.endpoint_vars.iter().any(|v| v.eq_ignore_ascii_case(name)))
}

fn is_proxy(upper: &str) -> bool {
    upper == "NO_PROXY" || PROXY_VARS.iter().any(|v| v.eq_ignore_ascii_case(upper))
}

/// The class of `name` if a request may not bind it in the process of one of `runtimes`;
/// `None` when it may. Names are compared ignoring ASCII case (over-refusing is the safe
/// mistake). [`RuntimeEnv::refused_request_var`](crate::RuntimeEnv::refused_request_var) adds
/// the variables the environment manages.
///
/// ```
/// use runtime_env::{RefusedVar, refused_request_var};
///
/// assert_eq!(refused_request_var("LD_PRELOAD", &[]), Some(RefusedVar::Loader));
/// assert_eq!(refused_request_var("NODE_OPTIONS", &[]), Some(RefusedVar::Interpreter));
/// assert_eq!(refused_request_var("ANTHROPIC_BASE_URL", &[]), Some(RefusedVar::Endpoint));
/// assert_eq!(refused_request_var("DOCS_TOKEN", &[]), None);
/// ```
pub fn refused_request_var(name: &str, runtimes: &[&RuntimeDescriptor]) -> Option<RefusedVar> {
    let upper = name.to_ascii_uppercase();
    let in_list = |list: &[&str]| list.contains(&upper.as_str());
    let has_prefix = |prefixes: &[&str]| prefixes.iter().any(|p| upper.starts_with(p));
    if crate::is_reserved_var(&upper) || runtimes.iter().any(|r| r.state_var == upper) {
        Some(RefusedVar::Managed)
    } else if has_prefix(LOADER_PREFIXES) || in_list(LOADER_VARS) {
        Some(RefusedVar::Loader)
    } else if has_prefix(INTERPRETER_PREFIXES) || in_list(INTERPRETER_VARS) {
        Some(RefusedVar::Interpreter)
    } else if upper == "PATH" {
        Some(RefusedVar::SearchPath)
    } else if in_list(TLS_VARS) {
        Some(RefusedVar::Tls)
    } else if is_proxy(&upper) {
        Some(RefusedVar::Proxy)
    } else if is_endpoint_var(name, runtimes) {
        Some(RefusedVar::Endpoint)
    } else if runtimes
        .iter()
        .any(|r| r.api_key_vars.iter().any(|v| v.eq_ignore_ascii_case(name)))
    {
        Some(RefusedVar::ModelCredential)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_is_found_in_either_case() {
        for (name, class) in [
            ("HOME", RefusedVar::Managed),
            ("xdg_config_home", RefusedVar::Managed),
            ("LD_PRELOAD", RefusedVar::Loader),
            ("ld_library_path", RefusedVar::Loader),
            ("DYLD_INSERT_LIBRARIES", RefusedVar::Loader),
            ("NODE_OPTIONS", RefusedVar::Interpreter),
            ("BASH_ENV", RefusedVar::Interpreter),
            ("BASH_FUNC_ls%%", RefusedVar::Interpreter),
            ("PATH", RefusedVar::SearchPath),
            ("NODE_TLS_REJECT_UNAUTHORIZED", RefusedVar::Tls),
            ("SSL_CERT_FILE", RefusedVar::Tls),
            ("HTTPS_PROXY", RefusedVar::Proxy),
            ("all_proxy", RefusedVar::Proxy),
            ("NO_PROXY", RefusedVar::Proxy),
            ("OPENAI_BASE_URL", RefusedVar::Endpoint),
            ("Some_Base_Url", RefusedVar::Endpoint),
        ] {
            assert_eq!(refused_request_var(name, &[]), Some(class), "{name}");
        }
        for name in ["DOCS_TOKEN", "UI_TOKEN", "MY_SERVICE_URL", "PATHS", "LANG"] {
            assert_eq!(refused_request_var(name, &[]), None, "{name}");
        }
    }

    #[test]
    fn a_runtime_adds_its_endpoint_state_and_key_variables() {
        let runtime = RuntimeDescriptor {
            name: "my_cli",
            program: "my-cli",
            state_var: "MY_CLI_HOME",
            state_subdir: ".my-cli",
            state_dir_must_exist: false,
            private_subdirs: &[],
            sources: &[],
            credential_files: &[],
            api_key_vars: &["MY_CLI_API_KEY"],
            endpoint_vars: &["MY_CLI_ENDPOINT"],
            keyring: crate::KeyringUse::Never,
            mcp: crate::McpMechanism::McpConfigFlag,
            supported_modes: &[crate::IsolationMode::Subprocess],
        };
        let runtimes = [&runtime];
        assert_eq!(
            refused_request_var("MY_CLI_ENDPOINT", &runtimes),
            Some(RefusedVar::Endpoint)
        );
        assert_eq!(
            refused_request_var("MY_CLI_HOME", &runtimes),
            Some(RefusedVar::Managed)
        );
        assert_eq!(
            refused_request_var("my_cli_api_key", &runtimes),
            Some(RefusedVar::ModelCredential)
        );
        assert_eq!(refused_request_var("MY_CLI_ENDPOINT", &[]), None);
        assert!(is_endpoint_var("my_cli_endpoint", &runtimes));
    }

    #[test]
    fn the_class_names_no_value() {
        assert_eq!(RefusedVar::Loader.to_string(), "a dynamic-loader variable");
    }
}
