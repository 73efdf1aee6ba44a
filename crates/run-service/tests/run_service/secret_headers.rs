//! Secret MCP headers: validated like the bearer variable, named in the views by header and
//! variable name only, and absent from every request written before they existed.

use run_service::{
    EnvBinding, Field, McpServer, McpTransport, Reason, RunAttachment, ServiceRef, build_views,
    check_host_bearers, validate_run,
};

const CANARY: &str = "CANARY-secret-header-value";

/// An attachment whose one service owns `mcp` and binds `bound` (each to the canary).
fn owned(mcp: McpServer, bound: &[&str]) -> RunAttachment {
    let service = bound.iter().fold(
        ServiceRef::new("docs", "Docs").with_mcp(mcp),
        |service, name| service.with_secret_env(EnvBinding::new(*name, CANARY)),
    );
    RunAttachment::new([service])
}

fn http() -> McpServer {
    McpServer::streamable_http("docs", "http://127.0.0.1:4101/mcp")
}

fn refused(attachment: RunAttachment) -> (Field, Reason) {
    let e = validate_run(&[attachment], &[]).unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(!text.contains(CANARY), "an error echoes a value: {text}");
    (e.field(), e.reason())
}

#[test]
fn a_bound_secret_header_is_valid_on_both_http_transports() {
    for server in [http(), McpServer::sse("docs", "http://127.0.0.1:4101/sse")] {
        let server = server
            .with_bearer_token_env("DOCS_TOKEN")
            .with_header("X-Tenant", "t1")
            .with_secret_header("X-Api-Key", "DOCS_API_KEY")
            .with_secret_header("Cookie", "DOCS_COOKIE");
        let bound = ["DOCS_TOKEN", "DOCS_API_KEY", "DOCS_COOKIE"];
        validate_run(&[owned(server, &bound)], &[]).unwrap();
    }
    // A secret `Authorization` (a scheme other than a bearer) is fine without a bearer.
    let basic = http().with_secret_header("Authorization", "DOCS_BASIC");
    validate_run(&[owned(basic, &["DOCS_BASIC"])], &[]).unwrap();
    // stdio has no headers: the builder leaves it alone.
    let stdio = McpServer::stdio("files", "/bin/files").with_secret_header("X-Api-Key", "K");
    assert!(matches!(stdio.transport, McpTransport::Stdio { .. }));
}

#[test]
fn header_and_variable_names_must_be_valid() {
    for name in ["X Api Key", "X-Api-Key:", "Ключ", "X-(key)", "X\"Key"] {
        let server = http().with_secret_header(name, "DOCS_API_KEY");
        assert_eq!(
            refused(owned(server, &["DOCS_API_KEY"])),
            (Field::McpHeader, Reason::InvalidHeaderName),
            "{name:?}"
        );
    }
    let empty = http().with_secret_header("", "DOCS_API_KEY");
    assert_eq!(
        refused(owned(empty, &["DOCS_API_KEY"])),
        (Field::McpHeader, Reason::Empty)
    );
    let control = http().with_secret_header("X-Key\n", "DOCS_API_KEY");
    assert_eq!(
        refused(owned(control, &["DOCS_API_KEY"])),
        (Field::McpHeader, Reason::ControlCharacter)
    );
    for var in ["1KEY", "DOCS-KEY", "", "A}B"] {
        let server = http().with_secret_header("X-Api-Key", var);
        assert_eq!(
            refused(owned(server, &[])),
            (Field::HeaderEnvVar, Reason::InvalidEnvName),
            "{var:?}"
        );
    }
}

#[test]
fn a_header_given_twice_is_refused_whatever_its_case() {
    let plain_and_secret = http()
        .with_header("x-tenant", "t1")
        .with_secret_header("X-Tenant", "DOCS_TENANT");
    assert_eq!(
        refused(owned(plain_and_secret, &["DOCS_TENANT"])),
        (Field::McpHeader, Reason::DuplicateHeader)
    );
    let secret_twice = http()
        .with_secret_header("X-Api-Key", "DOCS_A")
        .with_secret_header("x-api-key", "DOCS_B");
    assert_eq!(
        refused(owned(secret_twice, &["DOCS_A", "DOCS_B"])),
        (Field::McpHeader, Reason::DuplicateHeader)
    );
    let beside_the_bearer = http()
        .with_bearer_token_env("DOCS_TOKEN")
        .with_secret_header("authorization", "DOCS_AUTH");
    assert_eq!(
        refused(owned(beside_the_bearer, &["DOCS_TOKEN", "DOCS_AUTH"])),
        (Field::McpHeader, Reason::DuplicateHeader)
    );
}

#[test]
fn a_secret_header_variable_must_be_bound_like_the_bearer() {
    // A server naming the runtime's own key would receive it: refused unless its own
    // attachment (or the host, for a host server) binds the variable.
    let server = http().with_secret_header("X-Api-Key", "OPENAI_API_KEY");
    assert_eq!(
        refused(owned(server.clone(), &[])),
        (Field::HeaderEnvVar, Reason::UnboundHeaderVar)
    );
    let elsewhere = RunAttachment::new([ServiceRef::new("other", "Other")
        .with_secret_env(EnvBinding::new("OPENAI_API_KEY", CANARY))]);
    let e = validate_run(&[elsewhere, owned(server.clone(), &[])], &[]).unwrap_err();
    assert_eq!(
        (e.field(), e.reason(), e.attachment()),
        (Field::HeaderEnvVar, Reason::UnboundHeaderVar, Some(1))
    );
    validate_run(&[owned(server.clone(), &["OPENAI_API_KEY"])], &[]).unwrap();
    // A host server: against the host's own bindings.
    let e = check_host_bearers(std::slice::from_ref(&server), &["DOCS_TOKEN"]).unwrap_err();
    assert_eq!(
        (e.field(), e.reason()),
        (Field::HeaderEnvVar, Reason::UnboundHeaderVar)
    );
    check_host_bearers(&[server], &["OPENAI_API_KEY"]).unwrap();
}

#[test]
fn views_name_secret_headers_but_never_their_values() {
    let views = |server: McpServer, value: &str| {
        let service = ServiceRef::new("docs", "Docs")
            .with_mcp(server)
            .with_secret_env(EnvBinding::new("DOCS_API_KEY", value));
        build_views(&[RunAttachment::new([service])], &[]).unwrap()
    };
    let keyed = http().with_secret_header("X-Api-Key", "DOCS_API_KEY");
    let one = views(keyed.clone(), "key-one");
    // A new value alone changes no view; the header or its variable does.
    assert_eq!(one, views(keyed, "key-two"));
    let renamed = http().with_secret_header("X-Other-Key", "DOCS_API_KEY");
    assert_ne!(
        one.concrete.digest(),
        views(renamed, "key-one").concrete.digest()
    );
    let without = views(http(), "key-one");
    assert_ne!(one.concrete.digest(), without.concrete.digest());
    assert_ne!(one.session.digest(), without.session.digest());
}

#[test]
fn requests_without_secret_headers_serialize_as_before() {
    // The worker wire and stored requests: no new key when there is nothing in it, and an
    // old document (without the key) still reads.
    let old = http()
        .with_header("X-Tenant", "t1")
        .with_bearer_token_env("T");
    let json = serde_json::to_value(&old).unwrap();
    assert_eq!(
        json["transport"],
        serde_json::json!({
            "type": "streamable_http",
            "url": "http://127.0.0.1:4101/mcp",
            "headers": {"X-Tenant": "t1"},
            "bearer_token_env_var": "T"
        })
    );
    assert_eq!(serde_json::from_value::<McpServer>(json).unwrap(), old);
    let new = http().with_secret_header("X-Api-Key", "DOCS_API_KEY");
    let json = serde_json::to_value(&new).unwrap();
    assert_eq!(
        json["transport"]["env_headers"],
        serde_json::json!({"X-Api-Key": "DOCS_API_KEY"})
    );
    assert_eq!(serde_json::from_value::<McpServer>(json).unwrap(), new);
}
