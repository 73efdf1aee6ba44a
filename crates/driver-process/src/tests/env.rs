//! The child's environment, stdin and working directory.

use driver_spi::ExitStatus;
use fake_cli::{Rule, Scenario, read_invocations};
use run_service::EnvBinding;

use crate::command::CliCommand;
use crate::error::ProcessError;
use crate::process::CliProcess;
use crate::tests::support::{CODEX, HOST_KEY, fixture, limits};

#[tokio::test]
async fn the_child_sees_the_namespace_and_injected_secrets_but_no_host_credential() {
    let fx = fixture();
    let (record, scenario) = fx.recording();
    let scenario = scenario
        .record_env_values(["OPENAI_API_KEY", "HOME", "CODEX_HOME", "PATH", "RUST_LOG"])
        .rule(Rule::any().stdout("ok"));

    // Without a binding the host's key is not there at all.
    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);
    // With one, the child sees the tenant's value.
    let key = EnvBinding::new("OPENAI_API_KEY", "tenant-key-123");
    let command = fx
        .fake(&scenario)
        .secret_env([&key])
        .var("RUST_LOG", "warn");
    let process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);

    let runs = read_invocations(&record).unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_ne!(
            run.env.get("OPENAI_API_KEY").map(String::as_str),
            Some(HOST_KEY)
        );
        assert_eq!(run.env["HOME"], fx.env.home().to_str().unwrap());
        assert_eq!(
            run.env["CODEX_HOME"],
            fx.env.state_dir(&CODEX).unwrap().to_str().unwrap()
        );
        assert_eq!(run.env["PATH"], crate::tests::support::host_path());
        // The environment's own injected secret reaches the child too.
        assert!(run.has_env("ANTHROPIC_API_KEY"));
    }
    assert!(!runs[0].has_env("OPENAI_API_KEY"));
    assert!(!runs[0].has_env("RUST_LOG"));
    assert_eq!(runs[1].env["OPENAI_API_KEY"], "tenant-key-123");
    assert_eq!(runs[1].env["RUST_LOG"], "warn");
}

#[tokio::test]
async fn the_prompt_arrives_on_stdin_and_stdin_is_otherwise_empty() {
    let fx = fixture();
    let (record, scenario) = fx.recording();
    let scenario = scenario.rule(Rule::any().stdout(r#"{"echo":"${STDIN}"}"#));
    let prompt = "line one\nwith \"quotes\" and ünïcödé";

    let command = fx.fake(&scenario).stdin_text(prompt);
    let mut process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    let echo = process.next_json().await.unwrap().unwrap();
    assert_eq!(echo["echo"], prompt);
    assert_eq!(process.next_json().await.unwrap(), None);
    process.wait().await.unwrap();

    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    process.wait().await.unwrap();

    let runs = read_invocations(&record).unwrap();
    assert_eq!(runs[0].stdin, prompt);
    assert_eq!(runs[1].stdin, "");
}

#[tokio::test]
async fn a_large_prompt_does_not_deadlock_against_output() {
    let fx = fixture();
    // The fake reads all of stdin before writing; the prompt is far larger than a pipe.
    let scenario = Scenario::new().rule(Rule::any().stdout("${STDIN}"));
    let prompt = "p".repeat(4 << 20);
    let command = fx.fake(&scenario).stdin_text(prompt.clone());
    let mut process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    assert_eq!(process.next_line().await.unwrap().unwrap(), prompt);
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);
}

#[tokio::test]
async fn the_working_directory_is_the_environments_unless_overridden() {
    let fx = fixture();
    let record = fx.path("record.jsonl");
    let scenario = Scenario::new().record(&record);
    let other = tempfile::tempdir().unwrap();

    let process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    process.wait().await.unwrap();
    let command = fx.fake(&scenario).cwd(other.path());
    let process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    process.wait().await.unwrap();

    let runs = read_invocations(&record).unwrap();
    let canonical = |p: &std::path::Path| p.canonicalize().unwrap();
    assert_eq!(canonical(&runs[0].cwd), canonical(fx.project.path()));
    assert_eq!(canonical(&runs[1].cwd), canonical(other.path()));
}

#[tokio::test]
async fn arguments_reach_the_child_verbatim_without_a_shell() {
    let fx = fixture();
    let record = fx.path("record.jsonl");
    let scenario = Scenario::new().record(&record);
    let args = [
        "exec",
        "--json",
        "$HOME",
        "a b",
        "'quoted'",
        "; echo hi",
        "",
    ];
    let command = fx.fake(&scenario).args(args);
    let process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    process.wait().await.unwrap();
    assert_eq!(read_invocations(&record).unwrap()[0].argv, args);
}

#[tokio::test]
async fn namespace_variables_and_credentials_cannot_be_set_as_plain_variables() {
    let fx = fixture();
    let scenario = Scenario::new();
    let spawn = |command| CliProcess::spawn(&fx.env, command, limits()).map(drop);

    let err = spawn(fx.fake(&scenario).var("HOME", "/tmp")).unwrap_err();
    assert!(
        matches!(err, ProcessError::ReservedVar { ref name } if name == "HOME"),
        "{err:?}"
    );
    let err = spawn(fx.fake(&scenario).var("CODEX_HOME", "/tmp")).unwrap_err();
    assert!(matches!(err, ProcessError::ReservedVar { .. }), "{err:?}");
    let err = spawn(fx.fake(&scenario).var("OPENAI_API_KEY", "plain")).unwrap_err();
    assert!(matches!(err, ProcessError::CredentialVar { .. }), "{err:?}");
    let err = spawn(fx.fake(&scenario).var("A=sk-secret", "x")).unwrap_err();
    assert!(
        matches!(err, ProcessError::InvalidVarName { len: 11 }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("sk-secret"));
    let binding = EnvBinding::new("XDG_CONFIG_HOME", "/tmp");
    let err = spawn(fx.fake(&scenario).secret_env([&binding])).unwrap_err();
    assert!(matches!(err, ProcessError::ReservedVar { .. }), "{err:?}");
}

#[test]
fn debug_of_a_command_shows_variable_names_never_secret_values() {
    let key = EnvBinding::new("OPENAI_API_KEY", "sk-do-not-print-me");
    let command = CliCommand::new("codex", driver_spi::Redactor::new())
        .args(["exec", "--json", "-"])
        .var("RUST_LOG", "warn")
        .secret_env([&key])
        .stdin_text("hello");
    let debug = format!("{command:?}");
    assert!(debug.contains("OPENAI_API_KEY") && debug.contains("RUST_LOG"));
    assert!(!debug.contains("sk-do-not-print-me") && !debug.contains("hello"));
}

/// A run service's binding may not set what changes how or where the runtime runs, nor
/// replace the model key the namespace injects; the refusal names the class, never the value,
/// and nothing is started.
#[tokio::test]
async fn request_bindings_may_not_set_loader_interpreter_tls_endpoint_or_model_key() {
    use runtime_env::RefusedVar;
    let fx = fixture();
    let (record, scenario) = fx.recording();
    let scenario = scenario.rule(Rule::any().stdout("ok"));
    let value = "canary-value-7c1e";
    for (name, class) in [
        ("LD_PRELOAD", RefusedVar::Loader),
        ("LD_LIBRARY_PATH", RefusedVar::Loader),
        ("NODE_OPTIONS", RefusedVar::Interpreter),
        ("BASH_ENV", RefusedVar::Interpreter),
        ("PATH", RefusedVar::SearchPath),
        ("NODE_TLS_REJECT_UNAUTHORIZED", RefusedVar::Tls),
        ("SSL_CERT_FILE", RefusedVar::Tls),
        ("HTTPS_PROXY", RefusedVar::Proxy),
        ("all_proxy", RefusedVar::Proxy),
        ("ANTHROPIC_BASE_URL", RefusedVar::Endpoint),
        ("OPENAI_BASE_URL", RefusedVar::Endpoint),
        ("ANTHROPIC_API_KEY", RefusedVar::ModelCredential),
        ("OPENAI_API_KEY", RefusedVar::ModelCredential),
    ] {
        let binding = EnvBinding::new(name, value);
        let command = fx.fake(&scenario).request_env([&binding]);
        let err = CliProcess::spawn(&fx.env, command, limits())
            .map(drop)
            .unwrap_err();
        match &err {
            ProcessError::RefusedRequestVar { name: n, class: c } => {
                assert_eq!((n.as_str(), *c), (name, class));
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(!err.to_string().contains(value), "{err}");
        assert!(err.to_string().contains(&class.to_string()), "{err}");
    }
    assert!(read_invocations(&record).unwrap_or_default().is_empty());

    // An ordinary service token still reaches the child.
    let token = EnvBinding::new("DOCS_TOKEN", value);
    let command = fx.fake(&scenario).request_env([&token]);
    let process = CliProcess::spawn(&fx.env, command, limits()).unwrap();
    assert_eq!(process.wait().await.unwrap().status, ExitStatus::Success);
    assert_eq!(read_invocations(&record).unwrap().len(), 1);
}
