//! The entries fit together: unique names and state variables, valid descriptors, key
//! variables the environment treats as credentials, and the policy facts of each runtime.

use std::collections::BTreeSet;

use runtime_env::{
    HostEnv, IsolationLevel, IsolationMode, PolicyError, PolicyWarning, RuntimeEnv, Tenancy,
    check_runtime, is_credential_var,
};

#[test]
fn names_and_state_variables_are_unique_and_descriptors_valid() {
    let mut names = BTreeSet::new();
    let mut vars = std::collections::BTreeMap::new();
    for runtime in runtimes::all() {
        let d = &runtime.descriptor;
        d.validate().unwrap();
        assert!(
            names.insert(runtime.name),
            "duplicate name {}",
            runtime.name
        );
        // A state variable is another entry's only when they share its descriptor.
        let first = *vars.entry(d.state_var).or_insert(d);
        assert_eq!(first, d, "duplicate {}", d.state_var);
        assert!(
            !is_credential_var(runtime.bin_var),
            "{}: {}",
            d.name,
            runtime.bin_var
        );
        // The default key variable is one auth status looks at, and never a plain variable.
        assert!(
            d.api_key_vars.contains(&runtime.key_var),
            "{}: {}",
            d.name,
            runtime.key_var
        );
        assert!(std::ptr::eq(
            runtimes::find(runtime.name).unwrap(),
            *runtime
        ));
    }
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "claude_code",
            "codebuddy",
            "codebuddy_acp",
            "codex",
            "cursor",
            "gemini",
            "gemini_acp"
        ]
    );
    assert!(runtimes::find("opencode").is_none());
}

#[test]
fn one_environment_serves_every_runtime() {
    let base = tempfile::tempdir().unwrap();
    let env = RuntimeEnv::builder(base.path().join("rt"), "user:a".parse().unwrap(), "/")
        .host_env(HostEnv::from_vars([("PATH", "/bin")]))
        .runtimes(runtimes::all().iter().map(|r| &r.descriptor))
        .build()
        .unwrap();
    let served: Vec<_> = env.runtimes().iter().map(|d| d.name).collect();
    assert_eq!(
        served,
        ["codex", "claude_code", "cursor", "codebuddy", "gemini"]
    );
    for runtime in runtimes::all() {
        let d = &runtime.descriptor;
        let dir = env.state_dir(d).unwrap();
        assert!(dir.is_dir(), "{}", d.name);
        assert_eq!(env.child_env().get(d.state_var), Some(dir.as_os_str()));
    }
}

/// Every runtime keeps state on disk: namespaced subprocesses serve many tenants with a
/// same-user warning, workers without one, in-process hosting and the shared level only one
/// tenant; none runs server-side.
#[test]
fn policy_facts_of_every_runtime() {
    let ns = IsolationLevel::Namespaced;
    for runtime in runtimes::all() {
        let d = &runtime.descriptor;
        assert_eq!(
            check_runtime(d, &ns, IsolationMode::Subprocess, Tenancy::Multi)
                .map(|v| v.warnings().to_vec()),
            Ok(vec![PolicyWarning::SameUserTenants {
                mode: IsolationMode::Subprocess
            }])
        );
        assert_eq!(
            check_runtime(d, &ns, IsolationMode::Worker, Tenancy::Multi).map(|v| v.is_clean()),
            Ok(true),
            "{}",
            d.name
        );
        assert!(matches!(
            check_runtime(d, &ns, IsolationMode::InProcess, Tenancy::Multi),
            Err(PolicyError::InProcessMultiTenant { .. } | PolicyError::UnsupportedMode { .. })
        ));
        assert!(matches!(
            check_runtime(d, &ns, IsolationMode::ServerSide, Tenancy::Single),
            Err(PolicyError::UnsupportedMode { .. })
        ));
        assert!(matches!(
            check_runtime(
                d,
                &IsolationLevel::Shared,
                IsolationMode::Subprocess,
                Tenancy::Multi
            ),
            Err(PolicyError::SharedLevelMultiTenant { .. })
        ));
    }
    let codex = &runtimes::find("codex").unwrap().descriptor;
    assert_eq!(
        check_runtime(
            codex,
            &IsolationLevel::Shared,
            IsolationMode::InProcess,
            Tenancy::Single
        )
        .map(|v| v.is_clean()),
        Ok(true)
    );
}

fn env_builder(base: &std::path::Path) -> runtime_env::RuntimeEnvBuilder {
    RuntimeEnv::builder(base.join("rt"), "user:a".parse().unwrap(), "/")
        .host_env(HostEnv::from_vars([("PATH", "/bin")]))
}

/// Each entry builds its driver in an environment that serves the runtime, from nothing but
/// defaults; the per-runtime rules stay in the entries (Cursor takes no model endpoint).
#[test]
fn every_entry_builds_a_driver_that_passes_its_own_checks() {
    use driver_cli::{BuildError, CommonArgs};
    for runtime in runtimes::all() {
        let base = tempfile::tempdir().unwrap();
        let driver = runtime
            .build(env_builder(base.path()), CommonArgs::default())
            .unwrap();
        driver.validate_config().unwrap();
    }
    let base = tempfile::tempdir().unwrap();
    let mut args = CommonArgs::default();
    args.base_url = Some("http://127.0.0.1:9".to_owned());
    let cursor = runtimes::find("cursor").unwrap();
    match cursor.build(env_builder(base.path()), args) {
        Err(BuildError::Config(e)) => assert_eq!(e.field(), "base_url"),
        other => panic!("expected a config error, got {:?}", other.map(|_| ())),
    }
}

/// The common arguments' process mode reaches the driver: resident, an entry whose CLI has a
/// resident mode keeps processes (and says so), one without refuses the mode.
#[test]
fn every_entry_takes_the_process_mode() {
    use driver_cli::{CommonArgs, ProcessMode};
    for runtime in runtimes::all() {
        let base = tempfile::tempdir().unwrap();
        let mut args = CommonArgs::default();
        args.process_mode = ProcessMode::Resident(Default::default());
        let driver = runtime.build(env_builder(base.path()), args).unwrap();
        let name = runtime.name;
        let resident = [
            "codex",
            "claude_code",
            "codebuddy",
            "gemini_acp",
            "codebuddy_acp",
        ]
        .contains(&name);
        assert_eq!(driver.validate_config().is_ok(), resident, "{name}");
        assert!(
            driver.descriptor().capabilities.persistent_processes,
            "{name}"
        );
        assert!(driver.process_lifecycle().is_some(), "{name}");
    }
}

/// A driver refuses an environment that does not serve its runtime: there, its state
/// directory and state variable do not exist.
#[test]
fn a_driver_refuses_an_environment_that_does_not_serve_its_runtime() {
    let base = tempfile::tempdir().unwrap();
    let claude = &runtimes::find("claude_code").unwrap().descriptor;
    let env = env_builder(base.path()).runtimes([claude]).build().unwrap();
    let driver =
        driver_codex::CodexDriver::new(std::sync::Arc::new(env), driver_codex::CodexOptions::new());
    let err = driver_spi::Driver::validate_config(&driver).unwrap_err();
    assert_eq!(err.field(), "runtime_env", "{err}");
}

/// An entry puts the model endpoint and key where its CLI takes them: the driver it builds
/// from a custom key variable and an endpoint has the config fingerprint of the driver built
/// by hand with the options that say so (Codex: a provider named `agentctl` whose key is the
/// variable the key came from; Gemini: the key option, which selects its auth type).
#[test]
fn every_entry_takes_the_endpoint_and_key_where_its_cli_reads_them() {
    use std::sync::Arc;

    use driver_cli::{CliDriver, CommonArgs, CommonOptions, Dialect};
    use driver_spi::Driver;
    use secrecy::SecretString;

    const URL: &str = "http://127.0.0.1:9/v1";
    fn built(name: &str) -> String {
        let base = tempfile::tempdir().unwrap();
        let mut args = CommonArgs::default();
        args.base_url = Some(URL.to_owned());
        args.key = Some(run_service::EnvBinding::new("MY_KEY", "k".to_owned()));
        let runtime = runtimes::find(name).unwrap();
        let driver = runtime.build(env_builder(base.path()), args).unwrap();
        driver
            .config_fingerprinter()
            .unwrap()
            .config_fingerprint()
            .to_string()
    }
    fn by_hand<O: CommonOptions>(options: O) -> String {
        let base = tempfile::tempdir().unwrap();
        let runtime = &O::Dialect::from(options.clone()).runtime().descriptor;
        let env = env_builder(base.path())
            .runtimes([runtime])
            .build()
            .unwrap();
        let driver = CliDriver::<O::Dialect>::new(Arc::new(env), options);
        driver
            .config_fingerprinter()
            .unwrap()
            .config_fingerprint()
            .to_string()
    }
    let provider = driver_codex::ModelProvider::new("agentctl", URL).with_env_key("MY_KEY");
    let key = || SecretString::from("k");
    assert_eq!(
        built("codex"),
        by_hand(driver_codex::CodexOptions::new().with_model_provider(provider))
    );
    assert_eq!(
        built("claude_code"),
        by_hand(driver_claude_code::ClaudeCodeOptions::new().with_base_url(URL))
    );
    assert_eq!(
        built("codebuddy"),
        by_hand(
            driver_codebuddy::CodeBuddyOptions::new()
                .with_base_url(URL)
                .with_api_key(key())
        )
    );
    assert_eq!(
        built("gemini"),
        by_hand(
            driver_gemini::GeminiOptions::new()
                .with_base_url(URL)
                .with_api_key(key())
        )
    );
}

/// The driver builder is the common arguments in one expression, for every entry alike: the
/// driver it builds from a binary, an endpoint, a key, the resident mode and limits has the
/// config fingerprint, the capabilities and the configuration verdict of the driver
/// `Runtime::build` makes from the same arguments; and the one setting an entry cannot take
/// fails the same typed way (Cursor's endpoint).
#[test]
fn the_builder_builds_what_the_common_arguments_build() {
    use driver_cli::{BuildError, CommonArgs, ProcessMode};
    use driver_codex::Limits;
    use driver_spi::Driver;

    const URL: &str = "http://127.0.0.1:9/v1";
    let limits = Limits::default().with_idle_timeout(std::time::Duration::from_secs(7));
    let seen = |driver: &dyn Driver| {
        let fingerprint = driver.config_fingerprinter().unwrap().config_fingerprint();
        let caps = format!("{:?}", driver.descriptor().capabilities);
        (
            fingerprint.to_string(),
            caps,
            driver.validate_config().is_ok(),
        )
    };
    // `key` delivers under the entry's key variable, `key_env` under the one named.
    let keys: [Option<&str>; 2] = [None, Some("MY_KEY")];
    for (runtime, var) in runtimes::all().iter().flat_map(|r| keys.map(|k| (r, k))) {
        let name = runtime.name;
        let endpoint = name != "cursor";
        let base = tempfile::tempdir().unwrap();
        let mut builder = runtime
            .driver(env_builder(base.path()))
            .binary("/opt/cli/bin")
            .model("model-1")
            .resident()
            .limits(limits);
        builder = match var {
            None => builder.key("k-1234"),
            Some(var) => builder.key_env(var, "k-1234"),
        };
        if endpoint {
            builder = builder.endpoint(URL);
        }
        let built = builder.build().unwrap();

        let base = tempfile::tempdir().unwrap();
        let mut args = CommonArgs::default();
        args.binary = Some("/opt/cli/bin".into());
        args.model = Some("model-1".to_owned());
        let var = var.unwrap_or(runtime.key_var);
        args.key = Some(run_service::EnvBinding::new(var, "k-1234"));
        args.process_mode = ProcessMode::Resident(Default::default());
        args.limits = Some(limits);
        args.base_url = endpoint.then(|| URL.to_owned());
        let by_args = runtime.build(env_builder(base.path()), args).unwrap();
        assert_eq!(seen(&*built), seen(&*by_args), "{name} {var}");

        if !endpoint {
            let base = tempfile::tempdir().unwrap();
            let refused = runtime
                .driver(env_builder(base.path()))
                .endpoint(URL)
                .build();
            match refused {
                Err(BuildError::Config(e)) => assert_eq!(e.field(), "base_url", "{name}"),
                other => panic!(
                    "{name}: expected a config error, got {:?}",
                    other.map(|_| ())
                ),
            }
        }
    }
}
