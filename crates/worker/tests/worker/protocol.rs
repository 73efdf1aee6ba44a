//! The protocol, served in process: every method, the error codes, malformed, oversized and
//! interleaved messages.

use std::collections::BTreeMap;

use driver_spi::{Approvals, PermissionPolicy, Request};
use run_service::RunId;
use serde_json::{Value, json};
use worker_protocol::{
    CONFIGURE, DriverConfig, EVENT, SCRIPT, SEND_TOOL_DENIED, SEND_TOOL_RESULT, START_TASK, STOP,
    WireRequest, codes,
};

use crate::support::{Pipe, profile, reference};

fn config_wire(config: &DriverConfig) -> Value {
    config.to_wire()
}

pub(crate) fn start_params(driver: u64, task: &str, prompt: &str) -> Value {
    let request = Request::new(RunId::new(task), prompt, profile());
    start_params_of(driver, task, &request)
}

fn start_params_of(driver: u64, task: &str, request: &Request) -> Value {
    json!({
        "driver": driver,
        "task_id": task,
        "attempt": 1,
        "request": WireRequest::from_request(request).to_wire(),
    })
}

pub(crate) fn error_code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}

/// Configures driver 1 (the reference runtime with `script`) on a fresh pipe.
pub(crate) async fn configured(base: &std::path::Path, script: &[&str]) -> Pipe {
    let mut pipe = Pipe::new(worker::MAX_LINE);
    let params = json!({"driver": 1, "config": config_wire(&reference(base, script))});
    pipe.request(json!(1), CONFIGURE, params).await;
    let answer = pipe.answer(&json!(1), &mut Vec::new()).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    pipe
}

/// Reads until `count` tasks ended; each task's events by handle.
async fn events_until_terminals(pipe: &mut Pipe, count: usize) -> BTreeMap<u64, Vec<Value>> {
    let mut tasks: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    let mut ended = 0;
    while ended < count {
        let message = pipe.next().await;
        assert_eq!(message["method"], EVENT, "{message}");
        let params = &message["params"];
        let handle = params["handle"].as_u64().expect("a handle");
        if params["event"]["type"] != "driver" {
            ended += 1;
        }
        tasks.entry(handle).or_default().push(params.clone());
    }
    tasks
}

fn assert_numbered_with_one_terminal(events: &[Value]) {
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event["seq"].as_u64(), Some(n as u64), "{events:?}");
    }
    let terminals = events
        .iter()
        .filter(|e| e["event"]["type"] != "driver")
        .count();
    assert_eq!(terminals, 1, "{events:?}");
    assert_ne!(
        events.last().map(|e| &e["event"]["type"]),
        Some(&json!("driver"))
    );
}

#[tokio::test]
async fn a_task_answers_its_handle_then_streams_numbered_events_to_one_terminal() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    pipe.request(json!(2), START_TASK, start_params(1, "t1", "hello"))
        .await;
    let answer = pipe.next().await;
    let handle = answer["result"]["handle"]
        .as_u64()
        .expect("the answer comes first");
    let tasks = events_until_terminals(&mut pipe, 1).await;
    let events = &tasks[&handle];
    assert_numbered_with_one_terminal(events);
    assert_eq!(events[0]["event"]["event"]["type"], "run_started");
    let last = events.last().expect("events");
    assert_eq!(last["event"]["type"], "completed");
    assert_eq!(
        last["event"]["response"]["output"],
        "reference turn 1: hello"
    );
}

#[tokio::test]
async fn interleaved_tasks_keep_their_own_order() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    for n in 0..6 {
        pipe.request(
            json!(10 + n),
            START_TASK,
            start_params(1, &format!("t{n}"), "hi"),
        )
        .await;
    }
    let mut others = Vec::new();
    for n in 0..6 {
        let answer = pipe.answer(&json!(10 + n), &mut others).await;
        assert!(answer["result"]["handle"].is_u64(), "{answer}");
    }
    let ended = others
        .iter()
        .filter(|m| m["params"]["event"]["type"] == "completed")
        .count();
    let mut tasks = events_until_terminals(&mut pipe, 6 - ended).await;
    for message in others {
        let params = message["params"].clone();
        let handle = params["handle"].as_u64().expect("a handle");
        tasks.entry(handle).or_default().insert(0, params);
    }
    for events in tasks.values_mut() {
        events.sort_by_key(|e| e["seq"].as_u64());
        assert_numbered_with_one_terminal(events);
    }
    assert_eq!(tasks.len(), 6);
}

#[tokio::test]
async fn stop_ends_a_task_with_one_stopped_event_and_tool_outcomes_are_refused() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &["stall"]).await;
    pipe.request(json!(2), START_TASK, start_params(1, "t1", "wait"))
        .await;
    let handle = pipe.next().await["result"]["handle"]
        .as_u64()
        .expect("a handle");
    let mut others = Vec::new();
    // The same task id again, while it runs.
    pipe.request(json!(3), START_TASK, start_params(1, "t1", "again"))
        .await;
    let answer = pipe.answer(&json!(3), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::DUPLICATE_TASK));
    let result = json!({"handle": handle, "call_id": "c", "output": "x"});
    pipe.request(json!(4), SEND_TOOL_RESULT, result).await;
    let answer = pipe.answer(&json!(4), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::TOOL_NOT_AWAITED));
    let denied = json!({"handle": handle, "call_id": "c", "reason": "no"});
    pipe.request(json!(5), SEND_TOOL_DENIED, denied).await;
    let answer = pipe.answer(&json!(5), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::TOOL_NOT_AWAITED));
    pipe.request(json!(6), STOP, json!({"handle": handle}))
        .await;
    let answer = pipe.answer(&json!(6), &mut others).await;
    assert_eq!(answer["result"], json!({"stopped": true}));
    // Stopped once: a second stop finds no task.
    pipe.request(json!(7), STOP, json!({"handle": handle}))
        .await;
    let answer = pipe.answer(&json!(7), &mut others).await;
    assert_eq!(answer["result"], json!({"stopped": false}));
    let mut events: Vec<Value> = others.into_iter().map(|m| m["params"].clone()).collect();
    if !events.iter().any(|e| e["event"]["type"] == "stopped") {
        events.extend(
            events_until_terminals(&mut pipe, 1)
                .await
                .remove(&handle)
                .unwrap_or_default(),
        );
    }
    assert_numbered_with_one_terminal(&events);
    assert_eq!(
        events.last().map(|e| e["event"]["type"].clone()),
        Some(json!("stopped"))
    );
}

#[tokio::test]
async fn each_refusal_has_its_code_and_the_worker_lives_on() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = Pipe::new(1024);
    let mut others = Vec::new();
    // Not JSON.
    pipe.send_line(b"{not json").await;
    let answer = pipe.next().await;
    assert_eq!(error_code(&answer), Some(codes::PARSE_ERROR));
    assert_eq!(answer["id"], Value::Null);
    assert!(!answer.to_string().contains("not json"), "never echoed");
    // Over the size limit.
    pipe.send_line(&vec![b'x'; 4096]).await;
    assert_eq!(error_code(&pipe.next().await), Some(codes::INVALID_REQUEST));
    // JSON that is no message.
    pipe.send_line(br#"{"jsonrpc":"2.0","id":5,"method":7}"#)
        .await;
    assert_eq!(error_code(&pipe.next().await), Some(codes::INVALID_REQUEST));
    // Another method.
    pipe.request(json!(6), "runtime.other", json!({})).await;
    assert_eq!(
        error_code(&pipe.answer(&json!(6), &mut others).await),
        Some(codes::METHOD_NOT_FOUND)
    );
    // Params of the wrong shape.
    pipe.request(json!(7), STOP, json!({"handle": "one"})).await;
    assert_eq!(
        error_code(&pipe.answer(&json!(7), &mut others).await),
        Some(codes::INVALID_PARAMS)
    );
    // A configuration that cannot be built: a bad namespace.
    let mut bad = reference(base.path(), &[]).to_wire();
    bad["env"]["namespace"] = json!("not a namespace");
    pipe.request(json!(8), CONFIGURE, json!({"driver": 1, "config": bad}))
        .await;
    assert_eq!(
        error_code(&pipe.answer(&json!(8), &mut others).await),
        Some(codes::CONFIG_REJECTED)
    );
    // An unknown runtime of the registry.
    let registry = json!({"kind": "registry", "env": crate::support::wire_env(base.path()), "runtime": "nope"});
    pipe.request(
        json!(9),
        CONFIGURE,
        json!({"driver": 1, "config": registry}),
    )
    .await;
    assert_eq!(
        error_code(&pipe.answer(&json!(9), &mut others).await),
        Some(codes::CONFIG_REJECTED)
    );
    // A plain variable whose name looks like a credential: secrets never cross as plain
    // variables, the worker's environment refuses it as the host's does.
    let mut credential = json!({"kind": "registry", "env": crate::support::wire_env(base.path()), "runtime": "codex"});
    credential["env"]["vars"] = json!({"OPENAI_API_KEY": "sk-not-here"});
    pipe.request(
        json!(13),
        CONFIGURE,
        json!({"driver": 1, "config": credential}),
    )
    .await;
    assert_eq!(
        error_code(&pipe.answer(&json!(13), &mut others).await),
        Some(codes::CONFIG_REJECTED)
    );
    // A driver no configure built.
    pipe.request(json!(10), START_TASK, start_params(4, "t", "hi"))
        .await;
    assert_eq!(
        error_code(&pipe.answer(&json!(10), &mut others).await),
        Some(codes::NOT_CONFIGURED)
    );
    // A tool outcome for no task.
    let result = json!({"handle": 99, "call_id": "c", "output": "x"});
    pipe.request(json!(11), SEND_TOOL_RESULT, result).await;
    assert_eq!(
        error_code(&pipe.answer(&json!(11), &mut others).await),
        Some(codes::UNKNOWN_HANDLE)
    );
    // And it still serves.
    let params = json!({"driver": 1, "config": reference(base.path(), &[]).to_wire()});
    pipe.request(json!(12), CONFIGURE, params).await;
    assert_eq!(
        pipe.answer(&json!(12), &mut others).await["result"],
        json!({})
    );
    assert!(others.is_empty(), "{others:?}");
}

/// Starts task `t1` (request id 2) of driver 1 on a tool the policy asks the host about, and
/// reads until the worker asks: its handle, the `runtime.approve` request, and the events'
/// params before it.
pub(crate) async fn awaiting_approval(pipe: &mut Pipe) -> (u64, Value, Vec<Value>) {
    let policy: PermissionPolicy = "write=ask".parse().expect("a policy");
    let request = Request::new(RunId::new("t1"), "/tool write Write notes.txt", profile())
        .with_permissions(policy)
        .with_approvals(Approvals::approve_all());
    pipe.request(json!(2), START_TASK, start_params_of(1, "t1", &request))
        .await;
    let handle = pipe.next().await["result"]["handle"]
        .as_u64()
        .expect("a handle");
    let mut events = Vec::new();
    let ask = loop {
        let message = pipe.next().await;
        if message["method"] == "runtime.approve" {
            break message;
        }
        events.push(message["params"].clone());
    };
    (handle, ask, events)
}

#[tokio::test]
async fn an_approval_names_its_attempt_and_a_mismatched_answer_denies() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    let (handle, ask, mut events) = awaiting_approval(&mut pipe).await;
    assert_eq!(ask["params"]["handle"], handle);
    assert_eq!(ask["params"]["attempt"], 1);
    assert_eq!(ask["params"]["call_id"], "call-1");
    let id = ask["id"].clone();
    // An answer for attempt 2 is refused: the worker denies.
    let wrong = json!({"approval_id": ask["params"]["approval_id"], "attempt": 2, "decision": {"decision": "approve"}});
    pipe.send_line(
        json!({"jsonrpc": "2.0", "id": id, "result": wrong})
            .to_string()
            .as_bytes(),
    )
    .await;
    // A duplicate (right this time) finds no pending request and is dropped.
    let right = json!({"approval_id": ask["params"]["approval_id"], "attempt": 1, "decision": {"decision": "approve"}});
    pipe.send_line(
        json!({"jsonrpc": "2.0", "id": id, "result": right})
            .to_string()
            .as_bytes(),
    )
    .await;
    let rest = events_until_terminals(&mut pipe, 1)
        .await
        .remove(&handle)
        .unwrap_or_default();
    events.extend(rest);
    assert_numbered_with_one_terminal(&events);
    let result = events
        .iter()
        .find(|e| e["event"]["event"]["type"] == "tool_call_result")
        .expect("a tool result");
    assert_eq!(result["event"]["event"]["is_error"], true, "{result}");
    let resolved = events
        .iter()
        .find(|e| e["event"]["event"]["type"] == "approval_resolved")
        .expect("resolved");
    assert_eq!(resolved["event"]["event"]["outcome"], "denied");
}

#[tokio::test]
async fn script_reaches_the_reference_driver_only() {
    let base = tempfile::tempdir().expect("tempdir");
    let mut pipe = configured(base.path(), &[]).await;
    let mut others = Vec::new();
    pipe.request(json!(2), SCRIPT, json!({"driver": 1, "script": ["stall"]}))
        .await;
    let answer = pipe.answer(&json!(2), &mut others).await;
    assert_eq!(answer["result"]["performed"], 0, "{answer}");
    assert_eq!(
        answer["result"]["materialization"],
        Value::Null,
        "no run yet"
    );
    pipe.request(json!(3), SCRIPT, json!({"driver": 9})).await;
    let answer = pipe.answer(&json!(3), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::NOT_CONFIGURED));
    let registry = json!({"kind": "registry", "env": crate::support::wire_env(base.path()), "runtime": "codex"});
    pipe.request(
        json!(4),
        CONFIGURE,
        json!({"driver": 2, "config": registry}),
    )
    .await;
    assert_eq!(
        pipe.answer(&json!(4), &mut others).await["result"],
        json!({})
    );
    pipe.request(json!(5), SCRIPT, json!({"driver": 2})).await;
    let answer = pipe.answer(&json!(5), &mut others).await;
    assert_eq!(error_code(&answer), Some(codes::NOT_SCRIPTABLE));
    // The scripted stall holds the next task until it is stopped.
    pipe.request(json!(6), START_TASK, start_params(1, "t1", "wait"))
        .await;
    let handle = pipe.answer(&json!(6), &mut others).await["result"]["handle"].clone();
    pipe.request(json!(7), STOP, json!({"handle": handle}))
        .await;
    assert_eq!(
        pipe.answer(&json!(7), &mut others).await["result"],
        json!({"stopped": true})
    );
}
