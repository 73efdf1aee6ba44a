//! What the child environment copies from the host: proxies lose their credentials, and only
//! the real locale variables pass.

use runtime_env::HostEnv;
use runtime_env::is_allowed_host_var;
use secrecy::SecretString;

use crate::support::{Sandbox, child_value};

fn host_with(vars: &[(&str, &str)]) -> HostEnv {
    let mut all = vec![("PATH", "/usr/bin:/bin")];
    all.extend_from_slice(vars);
    HostEnv::from_vars(all)
}

#[test]
fn proxy_credentials_are_stripped() {
    let sb = Sandbox::new();
    let host = host_with(&[
        ("HTTPS_PROXY", "http://user:canary-pass@proxy.example:3128"),
        ("https_proxy", "http://user:canary-pass@proxy.example:3128/"),
        ("HTTP_PROXY", "http://canary-user-only@proxy.example:8080"),
        ("all_proxy", "socks5://u:canary-p@socks.example:1080"),
        ("ALL_PROXY", "socks5h://u:canary:with@at@socks.example:1080"),
        ("http_proxy", "u:canary-noscheme@proxy.example:3128"),
        ("NO_PROXY", "localhost,127.0.0.1,.internal"),
    ]);
    let env = sb.builder("user:p").host_env(host).build().unwrap();
    for (name, expected) in [
        ("HTTPS_PROXY", "http://proxy.example:3128"),
        ("https_proxy", "http://proxy.example:3128/"),
        ("HTTP_PROXY", "http://proxy.example:8080"),
        ("all_proxy", "socks5://socks.example:1080"),
        ("ALL_PROXY", "socks5h://socks.example:1080"),
        ("http_proxy", "proxy.example:3128"),
        ("NO_PROXY", "localhost,127.0.0.1,.internal"),
    ] {
        assert_eq!(child_value(&env, name).unwrap(), expected, "{name}");
    }
    let cmd = env.command("true");
    for (name, value) in cmd.get_envs() {
        let value = value.unwrap_or_default().to_string_lossy();
        assert!(!value.contains("canary"), "{name:?}={value}");
    }
}

#[test]
fn a_proxy_with_credentials_is_injected_as_a_secret() {
    let sb = Sandbox::new();
    let host = host_with(&[("HTTPS_PROXY", "http://user:host-pass@proxy:3128")]);
    let env = sb
        .builder("user:p")
        .host_env(host)
        .secret(
            "HTTPS_PROXY",
            SecretString::from("http://user:injected@proxy:3128"),
        )
        .build()
        .unwrap();
    assert_eq!(
        child_value(&env, "HTTPS_PROXY").unwrap(),
        "http://user:injected@proxy:3128"
    );
}

#[test]
fn only_real_locale_variables_pass() {
    for name in [
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
    ] {
        assert!(is_allowed_host_var(name), "{name}");
    }
    for name in ["LC_GH_PAT", "LC_FOO", "LC_", "LC_all", "LC_TERMINAL", "LCX"] {
        assert!(!is_allowed_host_var(name), "{name}");
    }

    let sb = Sandbox::new();
    let host = host_with(&[
        ("LC_GH_PAT", "canary-ghpat"),
        ("LC_CUSTOM", "canary-custom"),
        ("LC_TIME", "en_GB.UTF-8"),
    ]);
    let env = sb.builder("user:l").host_env(host).build().unwrap();
    assert_eq!(child_value(&env, "LC_GH_PAT"), None);
    assert_eq!(child_value(&env, "LC_CUSTOM"), None);
    assert_eq!(child_value(&env, "LC_TIME").unwrap(), "en_GB.UTF-8");
}
