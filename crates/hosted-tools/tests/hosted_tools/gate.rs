//! The bearer gate: without the agent's token, HTTP 401 and no handler runs.

use std::sync::Arc;

use run_service::{RunId, RunServiceProvider};
use serde_json::json;

use crate::support::{
    Calls, INITIALIZE, call, connect, endpoint, events, provider, raw_post, ready_events,
};

#[tokio::test]
async fn missing_or_wrong_tokens_get_401_and_no_handler_runs() {
    let calls = Arc::new(Calls::default());
    let provider = provider(&calls);
    let other = crate::support::provider(&calls);
    let mut attachment = provider.attach_run(&RunId::new("r")).await.unwrap();
    let mut events = events(&mut attachment);
    let ep = endpoint(&attachment);
    let foreign = endpoint(&other.attach_run(&RunId::new("r")).await.unwrap());
    let path = ep
        .url
        .split_once(&format!("{}", ep.port))
        .unwrap()
        .1
        .to_owned();

    let tool_call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#;
    let wrong_auth = [
        None,
        Some("Bearer wrong".to_owned()),
        Some(format!("Bearer {}", foreign.token)),
        Some(format!("Basic {}", ep.token)),
        Some(ep.token.clone()),
        Some(format!("Bearer {}x", ep.token)),
        Some(format!("Bearer {}", &ep.token[..ep.token.len() - 1])),
    ];
    for auth in &wrong_auth {
        for body in [INITIALIZE, tool_call] {
            for path in [path.as_str(), "/mcp", "/elsewhere"] {
                assert_eq!(
                    raw_post(ep.port, path, auth.as_deref(), body).await,
                    401,
                    "{path} with {auth:?}"
                );
            }
        }
    }
    // The same real MCP client that works with the token fails without it.
    assert!(connect(&ep.url, None).await.is_err());
    assert!(connect(&ep.url, Some("wrong")).await.is_err());
    assert!(connect(&ep.url, Some(&foreign.token)).await.is_err());
    assert_eq!(calls.total(), 0, "no handler ran");
    assert!(ready_events(&mut events).is_empty(), "no call was reported");

    // With the token the gate opens: initialize succeeds (200), unknown paths are 404.
    let bearer = format!("Bearer {}", ep.token);
    assert_eq!(
        raw_post(ep.port, &path, Some(&bearer), INITIALIZE).await,
        200
    );
    assert_eq!(
        raw_post(ep.port, "/elsewhere", Some(&bearer), INITIALIZE).await,
        404
    );
    let client = connect(&ep.url, Some(&ep.token)).await.unwrap();
    client
        .call_tool(call("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(calls.total(), 1);
    client.cancel().await.unwrap();
    provider.close().await.unwrap();
    other.close().await.unwrap();
}
