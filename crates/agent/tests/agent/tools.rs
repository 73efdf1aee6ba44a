//! Host-defined tools end to end: an agent with registered tools, the reference driver, a
//! real rmcp client using the URL and token the driver received, restarts over SQLite and
//! incompatibility on catalog changes. (Secret hygiene under TRACE logging is in
//! `tests/tool_token_traces.rs`, a binary of its own because a tracing subscriber is
//! process-global state.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent::tools::{HostedTool, ToolOutput};
use agent::{Agent, BuildError, SessionOutcome};
use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
use serde_json::json;

use test_support::host::SqliteFile;
use test_support::tools::{
    Decl, V1, call_lookup, call_lookup_result, connect, endpoint, lookup, raw_status,
    read_until_tool_events, service_events, text, tool_host,
};

#[tokio::test]
async fn a_real_mcp_client_calls_a_tool_with_the_url_and_token_from_the_driver_request() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = tool_host(file.open().await, &backend, lookup(&V1, &runs));

    backend.push_behavior(Behavior::Stall);
    let mut stream = agent.thread("t").stream("find order 42").unwrap();
    backend.wait_for_stalled(1).await;
    let ep = endpoint(&backend.last_request().unwrap());

    // No token, a wrong token: 401, and the handler never runs.
    assert_eq!(raw_status(&ep, None).await, 401);
    assert_eq!(raw_status(&ep, Some("Bearer wrong")).await, 401);
    assert!(connect(&ep.url, None).await.is_err());
    assert!(connect(&ep.url, Some("not-the-token")).await.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // The token from the driver's secret env opens the endpoint.
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "lookup_order");
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Looks up an order by id.")
    );
    let result = call_lookup(&client, "42").await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "order 42: shipped");
    let rejected = call_lookup(&client, "x9").await;
    assert_eq!(rejected.is_error, Some(true));
    assert_eq!(text(&rejected), "no order x9");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the handler ran for each call"
    );

    // Both calls appear in the run's own event stream: start, arguments, result.
    let seen = read_until_tool_events(&mut stream, 6).await;
    backend.release_stalled();
    let result = stream.result().await.unwrap();
    assert_eq!(result.session, SessionOutcome::Started);
    let tool_events = service_events(&seen);
    let names: Vec<_> = tool_events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "tool_call.started",
            "tool_call.arguments",
            "tool_call.result",
            "tool_call.started",
            "tool_call.arguments",
            "tool_call.result"
        ]
    );
    assert_eq!(tool_events[1].1["arguments"], json!({"id": "42"}));
    assert_eq!(tool_events[2].1["is_error"], false);
    assert_eq!(tool_events[2].1["output"], "order 42: shipped");
    assert_eq!(
        tool_events[5].1["is_error"], true,
        "handler errors are reported"
    );
    assert_eq!(tool_events[5].1["output"], "no order x9");
    // Sequence numbers stay dense across driver and service events.
    let all: Vec<_> = seen.iter().chain(&result.events).collect();
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }

    client.cancel().await.unwrap();
    agent.close().await;
}

#[tokio::test]
async fn restart_resumes_with_a_new_endpoint_that_serves_and_the_old_port_is_closed() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));

    let agent1 = tool_host(file.open().await, &backend, lookup(&V1, &runs));
    // The runtime calls the tool mid-run (the reference driver stalls as a CLI at work).
    backend.push_behavior(Behavior::Stall);
    let run = agent1.thread("t").stream("first").unwrap();
    backend.wait_for_stalled(1).await;
    let old = endpoint(&backend.last_request().unwrap());
    let client = connect(&old.url, Some(&old.token)).await.unwrap();
    assert_eq!(text(&call_lookup(&client, "1").await), "order 1: shipped");
    backend.release_stalled();
    let first = run.result().await.unwrap();
    assert_eq!(first.session, SessionOutcome::Started);
    // Between runs the server serves nothing: no run to attribute a call to.
    assert!(call_lookup_result(&client, "9").await.is_err());
    let _ = client.cancel().await;
    agent1.close().await;
    drop(agent1);

    let agent2 = tool_host(file.open().await, &backend, lookup(&V1, &runs));
    backend.push_behavior(Behavior::Stall);
    let run = agent2.thread("t").resume_only().stream("second").unwrap();
    backend.wait_for_stalled(1).await;
    let recorded = backend.last_request().unwrap();
    let new = endpoint(&recorded);
    assert_ne!(new.url, old.url, "the driver received the new URL");
    assert_ne!(new.env_var, old.env_var, "and the new env-var name");
    assert_ne!(new.token, old.token, "and the rotated token");
    assert!(
        recorded.expose_secret_env(&old.env_var).is_none(),
        "no stale credential"
    );

    // The new endpoint serves calls.
    let client = connect(&new.url, Some(&new.token)).await.unwrap();
    assert_eq!(text(&call_lookup(&client, "2").await), "order 2: shipped");
    client.cancel().await.unwrap();
    backend.release_stalled();
    let second = run.result().await.unwrap();
    assert_eq!(second.session, SessionOutcome::Resumed);

    // The old endpoint does not: its port refuses connections (and should the OS have handed
    // the same port to the new server, the old token is refused).
    if old.port != new.port {
        assert!(
            tokio::net::TcpStream::connect(("127.0.0.1", old.port))
                .await
                .is_err(),
            "the old port no longer answers"
        );
    }
    assert!(connect(&old.url, Some(&old.token)).await.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    agent2.close().await;
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", new.port))
            .await
            .is_err(),
        "Agent::close stopped the server"
    );
}

/// A Thread keeps its tool endpoint across turns within one agent, so the driver's persistent
/// runtime process (matched by exact signature, token included) is reused, not replaced on
/// every turn; between turns the endpoint serves nothing; another Thread gets its own.
#[tokio::test]
async fn turns_of_one_thread_reuse_the_endpoint_and_the_provider_process() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = tool_host(file.open().await, &backend, lookup(&V1, &runs));

    backend.push_behavior(Behavior::Stall);
    let run = agent.thread("t").stream("first").unwrap();
    backend.wait_for_stalled(1).await;
    let first = endpoint(&backend.last_request().unwrap());
    let client = connect(&first.url, Some(&first.token)).await.unwrap();
    assert_eq!(text(&call_lookup(&client, "1").await), "order 1: shipped");
    backend.release_stalled();
    run.result().await.unwrap();
    assert!(
        call_lookup_result(&client, "9").await.is_err(),
        "between turns the endpoint serves nothing"
    );
    let _ = client.cancel().await;

    backend.push_behavior(Behavior::Stall);
    let run = agent.thread("t").resume_only().stream("second").unwrap();
    backend.wait_for_stalled(1).await;
    let second = endpoint(&backend.last_request().unwrap());
    assert_eq!(second, first, "the same concrete endpoint on the next turn");
    let client = connect(&second.url, Some(&second.token)).await.unwrap();
    assert_eq!(text(&call_lookup(&client, "2").await), "order 2: shipped");
    backend.release_stalled();
    assert_eq!(run.result().await.unwrap().session, SessionOutcome::Resumed);
    let _ = client.cancel().await;

    let stats = backend.process_stats();
    assert_eq!(
        (stats.spawned, stats.reused, stats.replaced),
        (1, 1, 0),
        "{stats:?}"
    );

    // Another Thread's endpoint differs (and so does its process).
    backend.push_behavior(Behavior::Stall);
    let run = agent.thread("u").stream("other").unwrap();
    backend.wait_for_stalled(1).await;
    assert_ne!(endpoint(&backend.last_request().unwrap()).url, first.url);
    backend.release_stalled();
    run.result().await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    agent.close().await;
}

#[tokio::test]
async fn a_changed_schema_revision_or_description_makes_resume_only_incompatible() {
    let runs = Arc::new(AtomicUsize::new(0));
    let schema_changed = lookup(
        &Decl {
            revision: Some("1"),
            required: &[],
        },
        &runs,
    );
    let revision_changed = lookup(
        &Decl {
            revision: Some("2"),
            required: V1.required,
        },
        &runs,
    );
    let description_changed = HostedTool::new(
        "lookup_order",
        "Looks up an order.",
        lookup(&V1, &runs).input_schema().clone(),
        |_| async { Ok(ToolOutput::text("x")) },
    )
    .with_revision("1");
    for (what, changed) in [
        ("schema", schema_changed),
        ("revision", revision_changed),
        ("description", description_changed),
    ] {
        let file = SqliteFile::new();
        let backend = ReferenceBackend::new();
        let agent1 = tool_host(file.open().await, &backend, lookup(&V1, &runs));
        agent1.thread("t").run("first").await.unwrap();
        agent1.close().await;

        let agent2 = tool_host(file.open().await, &backend, changed);
        let before = backend.request_count();
        let err = agent2
            .thread("t")
            .resume_only()
            .run("second")
            .await
            .unwrap_err();
        let incompatibility = err
            .incompatibility()
            .unwrap_or_else(|| panic!("{what}: expected Incompatible, got {err}"));
        assert!(
            incompatibility.names_prefix("attachment.semantic:"),
            "{what}: {err}"
        );
        // Only the tool attachment changed.
        assert!(
            incompatibility
                .changes()
                .iter()
                .all(|c| c.name.as_str().starts_with("attachment.semantic:")),
            "{what}: {err}"
        );
        assert_eq!(
            backend.request_count(),
            before,
            "{what}: the driver never ran"
        );
        agent2.close().await;
    }
}

#[test]
fn tools_are_validated_when_the_agent_is_built() {
    let runs = Arc::new(AtomicUsize::new(0));
    let build = |tools: Vec<HostedTool>| {
        Agent::builder(Arc::new(ReferenceDriver::new()))
            .tools(tools)
            .build()
    };
    let no_revision = Decl {
        revision: None,
        required: &[],
    };
    match build(vec![lookup(&no_revision, &runs)]) {
        Err(BuildError::ToolWithoutRevision { tool }) => assert_eq!(tool, "lookup_order"),
        other => panic!("{other:?}"),
    }
    match build(vec![lookup(&V1, &runs), lookup(&V1, &runs)]) {
        Err(BuildError::DuplicateTool { tool }) => assert_eq!(tool, "lookup_order"),
        other => panic!("{other:?}"),
    }
    let bad_schema = HostedTool::new("t", "d", json!({"type": "array"}), |_| async {
        Ok(ToolOutput::text("x"))
    })
    .with_revision("1");
    assert!(matches!(
        build(vec![bad_schema]),
        Err(BuildError::InvalidTool(_))
    ));
    assert!(build(vec![lookup(&V1, &runs)]).is_ok());
}

#[tokio::test]
async fn the_tool_server_key_is_reserved_by_ordinary_duplicate_rules() {
    let backend = ReferenceBackend::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
        .store(Arc::new(thread_store::memory::MemoryStore::new()))
        .tool(lookup(&V1, &runs))
        .mcp_server(run_service::McpServer::streamable_http(
            agent::tools::SERVICE_ID,
            "http://127.0.0.1:9/mcp",
        ))
        .build()
        .unwrap();
    let err = agent.thread("t").run("hi").await.unwrap_err();
    assert!(
        matches!(err, agent::ThreadError::InvalidAttachment(_)),
        "{err}"
    );
    assert_eq!(backend.request_count(), 0, "nothing launched");
    agent.close().await;
}
