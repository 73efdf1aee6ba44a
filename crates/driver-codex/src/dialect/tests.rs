//! Unit tests of the exec dialect: argv, TOML values, server checks, the provider.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use driver_spi::PermissionPolicy;

#[test]
fn the_codec_resumes_thread_ids_only() {
    use driver_spi::{SessionCodec, SessionState};
    let state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
    let params = super::IDENTITY
        .codec
        .to_params(Some(&state))
        .unwrap()
        .unwrap();
    assert_eq!(params.display_id, state.resume_id);
    assert!(
        super::IDENTITY
            .codec
            .to_params(Some(&SessionState::new("--last")))
            .is_err()
    );
}
use crate::options::ModelProvider;

fn overrides(args: &[String]) -> BTreeMap<String, toml::Value> {
    args.windows(2)
        .filter(|w| w[0] == "-c")
        .map(|w| {
            let (k, v) = w[1].split_once('=').unwrap();
            let doc: toml::Table = toml::from_str(&format!("v = {v}")).unwrap();
            (k.to_owned(), doc["v"].clone())
        })
        .collect()
}

/// A request with nothing set but `permissions`.
fn request(permissions: PermissionPolicy) -> Request {
    use compat_fingerprint::{Fingerprint, Kind};
    const K: Kind = Kind::new("driver-codex dialect test v1");
    let fp = Fingerprint::of(K, |e| e.str("p"));
    Request::new(
        run_service::RunId::new("r"),
        "hi",
        driver_spi::ProfilePayload::new(fp, fp),
    )
    .with_permissions(permissions)
}

fn argv(options: &CodexOptions, plan: SessionPlan<'_>) -> Vec<String> {
    build(options, &request(PermissionPolicy::allow_all()), plan)
}

#[test]
fn values_are_toml_literals_that_round_trip() {
    let tricky = "a \"quoted\" \\ path\nwith = and ' and é";
    let server = McpServer::stdio("local", tricky)
        .with_args(["--x=1", "two words"])
        .with_env("MODE", "a=b");
    let request = request(PermissionPolicy::default())
        .with_model(tricky)
        .with_instructions("line 1\nline 2")
        .with_mcp([server]);
    let args = build(&CodexOptions::new(), &request, SessionPlan::Start(None));
    let c = overrides(&args);
    assert_eq!(c["model"].as_str(), Some(tricky));
    assert_eq!(c["developer_instructions"].as_str(), Some("line 1\nline 2"));
    assert_eq!(c["mcp_servers.local.command"].as_str(), Some(tricky));
    assert_eq!(
        c["mcp_servers.local.args"],
        toml::Value::Array(vec!["--x=1".into(), "two words".into()])
    );
    assert_eq!(c["mcp_servers.local.env"]["MODE"].as_str(), Some("a=b"));
}

#[test]
fn secret_headers_are_env_http_headers_by_variable_name() {
    let server = McpServer::streamable_http("docs", "http://127.0.0.1:1/mcp")
        .with_header("X-Tenant", "t1")
        .with_bearer_token_env("DOCS_TOKEN")
        .with_secret_header("X-Api-Key", "DOCS_API_KEY");
    let keyed = request(PermissionPolicy::default()).with_mcp([server]);
    let args = build(&CodexOptions::new(), &keyed, SessionPlan::Start(None));
    let c = overrides(&args);
    let table = |pairs: &[(&str, &str)]| {
        let table: toml::Table = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), toml::Value::from(*v)))
            .collect();
        toml::Value::Table(table)
    };
    assert_eq!(
        c["mcp_servers.docs.env_http_headers"],
        table(&[("X-Api-Key", "DOCS_API_KEY")])
    );
    assert_eq!(
        c["mcp_servers.docs.http_headers"],
        table(&[("X-Tenant", "t1")])
    );
    // Without secret headers, no key at all.
    let plain = McpServer::streamable_http("docs", "http://127.0.0.1:1/mcp");
    let plain = request(PermissionPolicy::default()).with_mcp([plain]);
    let args = build(&CodexOptions::new(), &plain, SessionPlan::Start(None));
    assert!(!overrides(&args).contains_key("mcp_servers.docs.env_http_headers"));
}

#[test]
fn resume_and_fork_put_the_id_after_the_subcommand() {
    let options = CodexOptions::new();
    let resume = argv(
        &options,
        SessionPlan::Resume("0199a213-81c0-7800-8aa1-bbab2a035a53"),
    );
    let n = resume.len();
    assert_eq!(
        &resume[n - 3..],
        ["resume", "0199a213-81c0-7800-8aa1-bbab2a035a53", "-"]
    );
    assert_eq!(&resume[..2], ["exec", "--json"]);
    let fork = argv(
        &options,
        SessionPlan::Fork("01A22DF3-293F-7F41-947B-CFF0D35CC64E"),
    );
    assert_eq!(
        &fork[fork.len() - 3..],
        ["fork", "01A22DF3-293F-7F41-947B-CFF0D35CC64E", "-"]
    );
    let start = argv(&options, SessionPlan::Start(None));
    assert_eq!(start.last().map(String::as_str), Some("-"));
    assert!(!start.iter().any(|a| a == "resume" || a == "--ephemeral"));
    assert!(argv(&options, SessionPlan::Stateless).contains(&"--ephemeral".to_owned()));
}

#[test]
fn server_names_and_transports_are_checked() {
    for bad in ["", "a.b", "a b", "ü", &"x".repeat(65)] {
        let server = McpServer::streamable_http(bad, "http://127.0.0.1:1/mcp");
        assert_eq!(
            check_servers(&[server]),
            Err(ConfigError::invalid("mcp.name", KEY_RULE).into()),
            "{bad:?}"
        );
    }
    let dup = McpServer::streamable_http("x", "http://127.0.0.1:1/mcp");
    assert_eq!(
        check_servers(&[dup.clone(), dup.clone()]),
        Err(ConfigError::invalid("mcp.name", "must be unique within a run").into())
    );
    let sse = McpServer::sse("legacy", "http://127.0.0.1:1/sse");
    assert_eq!(
        check_servers(&[sse]),
        Err(Unsupported::McpTransport(TransportKind::Sse).into())
    );
    let stdio = McpServer::stdio("local_1", "/bin/true");
    assert_eq!(check_servers(&[dup, stdio]), Ok(()));
}

#[test]
fn the_provider_is_validated() {
    let env_dir = tempfile::tempdir().unwrap();
    let env = RuntimeEnv::builder(
        env_dir.path().join("rt"),
        "user:t".parse().unwrap(),
        env_dir.path(),
    )
    .build()
    .unwrap();
    let with =
        |p: ModelProvider| Codex::from(CodexOptions::new().with_model_provider(p)).validate(&env);
    assert_eq!(
        with(ModelProvider::new("a.b", "http://x")),
        Err(ConfigError::invalid("provider.id", KEY_RULE))
    );
    assert!(with(ModelProvider::new("gw", "ftp://x")).is_err());
    assert!(with(ModelProvider::new("gw", "http://x").with_env_key("A=B")).is_err());
    assert_eq!(
        with(ModelProvider::new("gw", "https://x").with_env_key("KEY")),
        Ok(())
    );
}

#[test]
fn recognises_codex_phrases_only() {
    // Verbatim from codex 0.169.0 (`exec resume` with an unknown UUID).
    assert!(is_unknown_session(
        "Error: thread/resume: thread/resume failed: no rollout found for thread id \
         1f9c3813-6aa8-448e-8c61-b9a6080c42ad (code -32600)"
    ));
    assert!(is_unknown_session(
        "Error: thread/fork: thread/fork failed: no rollout found for thread id x (code -32600)"
    ));
    assert!(is_unknown_session("Error: Session not found: garbage-name"));
    assert!(is_unknown_session("thread not found: abc"));
    assert!(!is_unknown_session("stream disconnected before completion"));
    assert!(!is_unknown_session(""));
}
