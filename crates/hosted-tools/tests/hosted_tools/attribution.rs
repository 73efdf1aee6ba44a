//! Per-run attribution: a call reaches the events of the run whose URL it used, and is served
//! only while that run is attached; the bare endpoint serves nothing.

use std::sync::Arc;

use run_service::{RunId, RunServiceProvider};
use serde_json::json;

use crate::support::{
    Calls, call, connect, endpoint, events, next_event, provider, ready_events, text,
};

#[tokio::test]
async fn concurrent_runs_see_only_their_own_calls() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let (run_a, run_b) = (RunId::new("a"), RunId::new("b"));
    let mut att_a = provider.attach_run(&run_a).await.unwrap();
    let mut att_b = provider.attach_run(&run_b).await.unwrap();
    let (mut ev_a, mut ev_b) = (events(&mut att_a), events(&mut att_b));
    let (ep_a, ep_b) = (endpoint(&att_a), endpoint(&att_b));
    let client_a = connect(&ep_a.url, Some(&ep_a.token)).await.unwrap();
    let client_b = connect(&ep_b.url, Some(&ep_b.token)).await.unwrap();

    client_a
        .call_tool(call("add", json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    client_b
        .call_tool(call("add", json!({"a": 2, "b": 2})))
        .await
        .unwrap();
    let a: Vec<_> = [
        next_event(&mut ev_a).await.unwrap(),
        next_event(&mut ev_a).await.unwrap(),
        next_event(&mut ev_a).await.unwrap(),
    ]
    .into();
    let b: Vec<_> = [
        next_event(&mut ev_b).await.unwrap(),
        next_event(&mut ev_b).await.unwrap(),
        next_event(&mut ev_b).await.unwrap(),
    ]
    .into();
    assert_eq!(a[1].data["arguments"], json!({"a": 1, "b": 1}));
    assert_eq!(a[2].data["output"], "2");
    assert_eq!(b[1].data["arguments"], json!({"a": 2, "b": 2}));
    assert_eq!(b[2].data["output"], "4");
    assert_ne!(a[0].data["call_id"], b[0].data["call_id"]);
    assert!(ready_events(&mut ev_a).is_empty());
    assert!(ready_events(&mut ev_b).is_empty());

    // After run a detaches, its URL serves nothing: no handler runs outside a run.
    provider.detach_run(&run_a).await.unwrap();
    assert_eq!(next_event(&mut ev_a).await, None);
    let before = calls.total();
    let late = client_a
        .call_tool(call("add", json!({"a": 5, "b": 5})))
        .await;
    assert!(late.is_err(), "a detached run's URL is refused: {late:?}");
    assert!(
        ready_events(&mut ev_b).is_empty(),
        "run b never sees run a's calls"
    );

    // The bare endpoint serves nothing either.
    let base = ep_b.url.rsplit_once('/').unwrap().0.to_owned();
    assert!(connect(&base, Some(&ep_b.token)).await.is_err());
    assert_eq!(calls.total(), before, "no handler ran");
    assert_eq!(calls.total(), 2);

    for client in [client_a, client_b] {
        let _ = client.cancel().await;
    }
    provider.close().await.unwrap();
}

#[tokio::test]
async fn a_handler_knows_the_run_it_serves() {
    use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
    let whoami = HostedTool::new(
        "whoami",
        "Names the run.",
        json!({"type": "object"}),
        |call| async move { Ok(ToolOutput::text(call.run.as_str().to_owned())) },
    )
    .with_revision("1");
    let provider = HostedToolsProvider::new(ToolSet::new([whoami]).unwrap());
    let run = RunId::new("tenant-a-run-7");
    let attachment = provider.attach_run(&run).await.unwrap();
    let ep = endpoint(&attachment);
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    let result = client.call_tool(call("whoami", json!({}))).await.unwrap();
    assert_eq!(text(&result), "tenant-a-run-7");
    let _ = client.cancel().await;
    provider.close().await.unwrap();
}

/// A Thread keeps one endpoint across its turns, so a persistent runtime process (matched by
/// exact signature) is not replaced each turn; the slot still serves only the attached run,
/// and a run that overlaps the Thread's current one gets a slot of its own.
#[tokio::test]
async fn a_thread_keeps_its_endpoint_across_turns_and_serves_only_the_attached_run() {
    use hosted_tools::{HostedTool, HostedToolsProvider, ToolOutput, ToolSet};
    let whoami = HostedTool::new(
        "whoami",
        "Names the run and the Thread.",
        json!({"type": "object"}),
        |call| async move {
            Ok(ToolOutput::text(format!(
                "{}|{}",
                call.run.as_str(),
                call.thread.as_deref().unwrap_or("-")
            )))
        },
    )
    .with_revision("1");
    let provider = HostedToolsProvider::new(ToolSet::new([whoami]).unwrap());
    let turn = |n: u32| RunId::new(format!("turn-{n}"));

    let first = provider
        .attach_thread_run(&turn(1), "tenant-a/chat")
        .await
        .unwrap();
    let ep1 = endpoint(&first);
    assert!(
        !ep1.url.contains("tenant-a"),
        "the slot is a keyed digest, not the key: {}",
        ep1.url
    );
    // An overlapping run of the same Thread (it will lose the lease) never takes the slot.
    let overlap = provider
        .attach_thread_run(&turn(9), "tenant-a/chat")
        .await
        .unwrap();
    assert_ne!(endpoint(&overlap).url, ep1.url);
    provider.detach_run(&turn(9)).await.unwrap();

    let client = connect(&ep1.url, Some(&ep1.token)).await.unwrap();
    let result = client.call_tool(call("whoami", json!({}))).await.unwrap();
    assert_eq!(text(&result), "turn-1|tenant-a/chat");
    provider.detach_run(&turn(1)).await.unwrap();
    assert!(
        client.call_tool(call("whoami", json!({}))).await.is_err(),
        "between turns the Thread's slot serves nothing"
    );
    let _ = client.cancel().await;

    // The next turn gets the very same concrete endpoint, bound to the new run.
    let second = provider
        .attach_thread_run(&turn(2), "tenant-a/chat")
        .await
        .unwrap();
    let ep2 = endpoint(&second);
    assert_eq!(
        (&ep2.url, ep2.port, &ep2.env_var, &ep2.token),
        (&ep1.url, ep1.port, &ep1.env_var, &ep1.token)
    );
    assert_eq!(first.services[0].mcp, second.services[0].mcp);
    let client = connect(&ep2.url, Some(&ep2.token)).await.unwrap();
    let result = client.call_tool(call("whoami", json!({}))).await.unwrap();
    assert_eq!(text(&result), "turn-2|tenant-a/chat");

    // Another Thread, and a bare run, get endpoints of their own.
    let other = provider
        .attach_thread_run(&turn(3), "tenant-b/chat")
        .await
        .unwrap();
    let bare = provider.attach_run(&turn(4)).await.unwrap();
    assert_ne!(endpoint(&other).url, ep2.url);
    assert_ne!(endpoint(&bare).url, ep2.url);

    let _ = client.cancel().await;
    provider.close().await.unwrap();
}
