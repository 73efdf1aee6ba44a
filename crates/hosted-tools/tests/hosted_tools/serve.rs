//! Serving: a real MCP client lists and calls tools at the attached URL; results, rejections,
//! panics and structured output; the attachment's shape; close.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use hosted_tools::{
    COMPATIBILITY_ID, EVENT_ARGUMENTS, EVENT_RESULT, EVENT_STARTED, SERVICE_ID, TOKEN_ENV_PREFIX,
};
use run_service::{Lifecycle, McpTransport, RunId, RunServiceProvider};
use serde_json::json;

use crate::support::{Calls, call, connect, endpoint, events, next_event, provider, text};

#[tokio::test]
async fn a_real_mcp_client_lists_and_calls_tools_and_the_run_sees_the_call() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let run = RunId::new("run-1");
    let mut attachment = provider.attach_run(&run).await.unwrap();
    let mut events = events(&mut attachment);
    let ep = endpoint(&attachment);

    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["add", "boom", "fail", "stats"]);
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.description.as_deref(), Some("Adds two integers."));
    assert_eq!(
        serde_json::Value::Object((*add.input_schema).clone())["required"],
        json!(["a", "b"])
    );

    let result = client
        .call_tool(call("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "5");
    assert_eq!(calls.add.load(Ordering::SeqCst), 1, "the handler ran once");

    let started = next_event(&mut events).await.unwrap();
    assert_eq!(started.service_id, SERVICE_ID);
    assert_eq!(started.name, EVENT_STARTED);
    assert_eq!(started.data["tool"], "add");
    let call_id = started.data["call_id"].clone();
    let arguments = next_event(&mut events).await.unwrap();
    assert_eq!(arguments.name, EVENT_ARGUMENTS);
    assert_eq!(arguments.data["call_id"], call_id);
    assert_eq!(arguments.data["arguments"], json!({"a": 2, "b": 3}));
    let result = next_event(&mut events).await.unwrap();
    assert_eq!(result.name, EVENT_RESULT);
    assert_eq!(result.data["call_id"], call_id);
    assert_eq!(result.data["is_error"], false);
    assert_eq!(result.data["output"], "5");

    client.cancel().await.unwrap();
    provider.detach_run(&run).await.unwrap();
    assert_eq!(
        next_event(&mut events).await,
        None,
        "detach ends the stream"
    );
    provider.close().await.unwrap();
}

#[tokio::test]
async fn rejections_and_panics_are_error_results_and_reported_in_events() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let mut attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let mut events = events(&mut attachment);
    let ep = endpoint(&attachment);
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();

    for (tool, args, message) in [
        ("fail", json!({}), "refused on purpose"),
        ("add", json!({"a": "x"}), "`a` and `b` must be integers"),
        ("boom", json!({}), "the tool handler panicked"),
    ] {
        let result = client.call_tool(call(tool, args)).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{tool}");
        assert_eq!(text(&result), message);
        let _started = next_event(&mut events).await.unwrap();
        let _arguments = next_event(&mut events).await.unwrap();
        let reported = next_event(&mut events).await.unwrap();
        assert_eq!(reported.name, EVENT_RESULT);
        assert_eq!(reported.data["is_error"], true, "{tool}");
        assert_eq!(reported.data["output"], message);
    }
    // The session survived the panic.
    let ok = client
        .call_tool(call("add", json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(text(&ok), "2");

    let unknown = client.call_tool(call("nope", json!({}))).await;
    assert!(unknown.is_err(), "unknown tools are a protocol error");
    client.cancel().await.unwrap();
    provider.close().await.unwrap();
}

#[tokio::test]
async fn structured_output_reaches_the_client() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let ep = endpoint(&attachment);
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let stats = tools.iter().find(|t| t.name == "stats").unwrap();
    assert!(stats.output_schema.is_some());
    let result = client.call_tool(call("stats", json!({}))).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"count": 3})));
    client.cancel().await.unwrap();
    provider.close().await.unwrap();
}

#[tokio::test]
async fn the_attachment_carries_url_mcp_secret_env_and_a_semantic_tuple_only() {
    let calls = Arc::new(Calls::default());
    let one = provider(&calls);
    let two = provider(&calls);
    let a = one.attach_run(&RunId::new("r")).await.unwrap();
    let b = two.attach_run(&RunId::new("r")).await.unwrap();
    let (ea, eb) = (endpoint(&a), endpoint(&b));

    let service = &a.services[0];
    assert_eq!(service.id, SERVICE_ID);
    assert_eq!(service.lifecycle, Lifecycle::Shared);
    assert!(
        ea.url
            .starts_with(&format!("http://127.0.0.1:{}/mcp/", ea.port))
    );
    let mcp = service.mcp.as_ref().unwrap();
    assert_eq!(mcp.name, SERVICE_ID);
    assert!(mcp.required);
    match &mcp.transport {
        McpTransport::StreamableHttp {
            url,
            headers,
            bearer_token_env_var,
            env_headers,
        } => {
            assert_eq!(url, &ea.url);
            assert!(
                headers.is_empty() && env_headers.is_empty(),
                "the token never travels as a header value"
            );
            assert_eq!(bearer_token_env_var.as_deref(), Some(ea.env_var.as_str()));
        }
        other => panic!("unexpected transport {other:?}"),
    }
    assert!(ea.env_var.starts_with(TOKEN_ENV_PREFIX));

    // Two agents: new port, env-var name and token; the same semantic tuple.
    assert_ne!(ea.port, eb.port);
    assert_ne!(ea.env_var, eb.env_var);
    assert_ne!(ea.token, eb.token);
    let (ca, cb) = (
        a.resume_compatibility.clone().unwrap(),
        b.resume_compatibility.clone().unwrap(),
    );
    assert_eq!(ca, cb);
    assert_eq!(ca.id, COMPATIBILITY_ID);
    assert_eq!(ca.fingerprint, one.tools().fingerprint());
    for allocation in [&ea.url, &ea.env_var, &ea.token, &ea.port.to_string()] {
        assert!(!ca.fingerprint.contains(allocation.as_str()));
    }
    assert!(
        !format!("{a:?}").contains(&ea.token),
        "Debug redacts the token"
    );
    one.close().await.unwrap();
    two.close().await.unwrap();
}

#[tokio::test]
async fn close_releases_the_port_and_refuses_later_attaches() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let ep = endpoint(&attachment);
    assert_eq!(provider.port().await, Some(ep.port));
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();

    provider.close().await.unwrap();
    assert_eq!(provider.port().await, None);
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", ep.port))
            .await
            .is_err(),
        "nothing listens on the old port"
    );
    assert!(
        client
            .call_tool(call("add", json!({"a": 1, "b": 2})))
            .await
            .is_err()
    );
    assert!(provider.attach_run(&RunId::new("later")).await.is_err());
    provider.close().await.unwrap(); // idempotent
    assert_eq!(calls.total(), 0);
}

#[tokio::test]
async fn the_server_starts_on_first_attach_only() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    assert_eq!(
        provider.port().await,
        None,
        "no I/O before the first attach"
    );
    let first = provider.attach_run(&RunId::new("a")).await.unwrap();
    let second = provider.attach_run(&RunId::new("b")).await.unwrap();
    let (a, b) = (endpoint(&first), endpoint(&second));
    assert_eq!(a.port, b.port, "one server per provider");
    assert_eq!(
        (a.env_var, a.token),
        (b.env_var, b.token),
        "one token per agent"
    );
    assert_ne!(a.url, b.url, "one slot per run");
    provider.close().await.unwrap();
}
