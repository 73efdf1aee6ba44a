//! The ACP driver against the scripted fake agent (`support`): a turn's updates as events,
//! the stop reasons, the resident process and its replay, unknown sessions, MCP servers and
//! their secrets, permissions, cancellation, malformed messages, crashes, an unanswered
//! prompt, token rotation and per-turn mode.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cli_test_kit::{checkpoint, failed_kind, run};
use driver_acp::{AcpOptions, CommonOptions, Limits};
use driver_spi::{
    Action, ApprovalTicket, Approvals, CollectingSink, Driver, DriverError, DriverEvent,
    FailureKind, Permission, PermissionPolicy, PlanStatus, ProcessLifecycle as _,
    ResumeRejectReason, check_sequence,
};
use fake_cli::{LineRule, is_running};
use run_service::McpServer;

use crate::support::{
    ALLOW_ALWAYS, ALLOW_ONCE, CANCEL, CANCELLED, Fake, LOAD, NEW, PROMPT, REJECT_ONCE, REPLAYED,
    ask_permission, empty_load_agent, eventually, message, pid_of, resume, script,
    stdio_only_agent, stop, update, with_token,
};

/// A turn with every kind of update the driver translates.
fn rich_turn() -> LineRule {
    LineRule::when([PROMPT, "RICH"])
        .stdout(update(
            r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"thinking it over"}}"#,
        ))
        .stdout(update(
            r#"{"sessionUpdate":"plan","entries":[{"content":"look","priority":"high","status":"completed"},{"content":"answer","priority":"low","status":"in_progress"}]}"#,
        ))
        .stdout(update(
            r#"{"sessionUpdate":"tool_call","toolCallId":"call-7","title":"ls -la","kind":"execute","status":"in_progress","rawInput":{"command":"ls -la"}}"#,
        ))
        .stdout(update(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"call-7","status":"completed","rawOutput":"total 0"}"#,
        ))
        .stdout(message("all "))
        .stdout(message("done"))
        .stdout(stop("end_turn"))
}

#[tokio::test]
async fn a_new_sessions_turn_translates_every_update_and_ends_on_end_turn() {
    let fake = Fake::new([rich_turn()]);
    let driver = fake.driver(fake.resident());
    let (result, events) = run(&driver, fake.request("RICH")).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    assert_eq!(response.output, "all done");
    assert_eq!(check_sequence(&events), Ok(()));
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            DriverEvent::TextDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["all ", "done"]);
    assert!(events.contains(&DriverEvent::ReasoningDelta {
        delta: "thinking it over".into()
    }));
    let plan = events
        .iter()
        .find_map(|e| match e {
            DriverEvent::Plan { entries } => Some(entries),
            _ => None,
        })
        .expect("a plan event");
    assert_eq!(plan.len(), 2);
    assert_eq!(plan[0].content, "look");
    assert_eq!(plan[0].status, PlanStatus::Completed);
    assert_eq!(plan[1].status, PlanStatus::InProgress);
    assert!(
        events.iter().any(|e| matches!(e,
        DriverEvent::ToolCallStarted { call_id, name } if call_id == "call-7" && name == "ls -la"))
    );
    assert!(events.iter().any(|e| matches!(e,
        DriverEvent::ToolCallArguments { call_id, delta } if call_id == "call-7" && delta.contains("ls -la"))));
    assert!(events.iter().any(|e| matches!(e,
        DriverEvent::ToolCallResult { call_id, output, is_error: false } if call_id == "call-7" && output == "total 0")));
    assert!(matches!(events.last(), Some(DriverEvent::RunFinished)));

    // What the fake received: initialize, then session/new with the workspace as cwd, then
    // the prompt on the new session.
    let served = fake.served();
    assert!(served[0].contains(r#""method":"initialize""#), "{served:?}");
    assert!(served[0].contains(r#""protocolVersion":1"#));
    let new = fake.lines(&[NEW]);
    assert_eq!(new.len(), 1);
    let workspace = serde_json::to_string(fake.harness.workspace.to_str().unwrap()).unwrap();
    assert!(
        new[0].contains(&format!(r#""cwd":{workspace}"#)),
        "{}",
        new[0]
    );
    assert!(new[0].contains(r#""mcpServers":[]"#), "{}", new[0]);
    let prompt = fake.lines(&[PROMPT]);
    assert_eq!(prompt.len(), 1);
    assert!(prompt[0].contains(r#""text":"RICH""#));
    let session = checkpoint(&response).resume_id;
    assert!(prompt[0].contains(&format!(r#""sessionId":"{session}""#)));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_new_session_declares_the_requests_mcp_servers() {
    let fake = Fake::new([]);
    let driver = fake.driver(fake.resident());
    let mcp = McpServer::streamable_http("docs", "http://127.0.0.1:4102/mcp")
        .with_header("X-Tenant", "acme");
    let (result, _) = run(&driver, fake.request("one").with_mcp([mcp])).await;
    assert!(result.unwrap().is_clean());
    let new = fake.lines(&[NEW]);
    assert!(
        new[0].contains(r#""mcpServers":[{"type":"http","name":"docs","url":"http://127.0.0.1:4102/mcp","headers":[{"name":"X-Tenant","value":"acme"}]}]"#),
        "{}",
        new[0]
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn stop_reasons_other_than_end_turn_fail_the_turn() {
    let fake = Fake::new([
        LineRule::when([PROMPT, "LIMIT"])
            .stdout(message("partial"))
            .stdout(stop("max_tokens")),
        LineRule::when([PROMPT, "STOPPED"]).stdout(stop("cancelled")),
        LineRule::when([PROMPT, "REFUSED"]).stdout(stop("refusal")),
    ]);
    let driver = fake.driver(fake.resident());
    let (limit, events) = run(&driver, fake.request("LIMIT")).await;
    assert_eq!(failed_kind(&limit), Some(FailureKind::Limit), "{limit:?}");
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(matches!(events.last(), Some(DriverEvent::RunFailed { .. })));
    let (cancelled, _) = run(&driver, fake.request("STOPPED")).await;
    assert_eq!(
        failed_kind(&cancelled),
        Some(FailureKind::Other),
        "a cancelled stop is a failure: {cancelled:?}"
    );
    let (refused, _) = run(&driver, fake.request("REFUSED")).await;
    assert_eq!(failed_kind(&refused), Some(FailureKind::ModelProvider));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_second_turn_runs_on_the_same_process_and_a_new_one_loads_without_replay() {
    let fake = Fake::new([]);
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    let pid = pid_of(&first.output);
    let state = checkpoint(&first);

    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(pid_of(&second.output), pid, "the same process");
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert_eq!(
        fake.count(LOAD),
        0,
        "the loaded session is not loaded again"
    );
    assert_eq!(fake.harness.invocations().len(), 1, "one spawn");

    driver.close_processes().await.unwrap();
    assert!(!is_running(pid), "close ends the process");

    // A new process loads the stored session: the replay, before and after the load's
    // answer, is never the turn's.
    let (third, events) = run(&driver, resume(fake.request("three"), &state)).await;
    let third = third.unwrap();
    assert!(third.is_clean(), "{:?}", third.failure);
    assert_ne!(pid_of(&third.output), pid, "a new process");
    assert!(third.output.ends_with(": three"), "{}", third.output);
    assert!(!third.output.contains(REPLAYED), "{}", third.output);
    assert!(!format!("{events:?}").contains(REPLAYED), "{events:?}");
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(checkpoint(&third).resume_id, state.resume_id);
    let loads = fake.lines(&[LOAD]);
    assert_eq!(loads.len(), 1);
    assert!(loads[0].contains(&format!(r#""sessionId":"{}""#, state.resume_id)));
    let prompts = fake.lines(&[PROMPT, r#""text":"three""#]);
    assert!(prompts[0].contains(&state.resume_id));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_load_the_agent_refuses_as_unknown_is_resume_rejected() {
    let fake = Fake::new([LineRule::when([LOAD]).stdout(
        r#"{"jsonrpc":"2.0","id":${ID},"error":{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}}"#,
    )]);
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    driver.close_processes().await.unwrap();
    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    assert!(
        matches!(
            second,
            Err(DriverError::ResumeRejected {
                reason: ResumeRejectReason::UnknownSession
            })
        ),
        "{second:?}"
    );
    assert!(!format!("{events:?}").contains("TextDelta"), "{events:?}");
    assert_eq!(
        fake.count(r#""text":"two""#),
        0,
        "no prompt after the refusal"
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_empty_load_is_an_unknown_session_for_an_agent_registered_so() {
    let empty_load =
        || LineRule::when([LOAD]).stdout(r#"{"jsonrpc":"2.0","id":${ID},"result":{}}"#);
    // The agent registered with `empty_load_is_unknown`.
    let fake = Fake::of(empty_load_agent(), script([empty_load()]));
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    driver.close_processes().await.unwrap();
    let (second, _) = run(&driver, resume(fake.request("two"), &state)).await;
    assert!(
        matches!(
            second,
            Err(DriverError::ResumeRejected {
                reason: ResumeRejectReason::UnknownSession
            })
        ),
        "{second:?}"
    );
    driver.close_processes().await.unwrap();

    // The same answer from an agent not registered so is a loaded session.
    let fake = Fake::new([empty_load()]);
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    driver.close_processes().await.unwrap();
    let (second, _) = run(&driver, resume(fake.request("two"), &state)).await;
    assert!(second.unwrap().output.ends_with(": two"));
    driver.close_processes().await.unwrap();

    // And an agent registered so, whose load replays history, loads.
    let fake = Fake::of(empty_load_agent(), script([]));
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    driver.close_processes().await.unwrap();
    let (second, _) = run(&driver, resume(fake.request("two"), &state)).await;
    assert!(second.unwrap().output.ends_with(": two"));
    driver.close_processes().await.unwrap();
}

const TOKEN: &str = "token-aaaa-1111";

#[tokio::test]
async fn an_mcp_bearer_reaches_the_agent_only_in_session_new() {
    let fake = Fake::new([]);
    let options = fake.resident();
    let driver = fake.driver(options.clone());
    let request = with_token(fake.request("one"), TOKEN);
    let shown_request = format!("{request:?}");
    let (result, events) = run(&driver, request).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    let new = fake.lines(&[NEW]);
    assert_eq!(new.len(), 1);
    assert!(
        new[0].contains(&format!(
            r#""headers":[{{"name":"Authorization","value":"Bearer {TOKEN}"}}]"#
        )),
        "{}",
        new[0]
    );
    assert!(
        new[0].contains(r#""type":"http","name":"agent-ui""#),
        "{}",
        new[0]
    );
    for shown in [
        shown_request,
        format!("{events:?}"),
        format!("{response:?}"),
        format!("{options:?}"),
        format!("{driver:?}"),
        format!("{:?}", fake.harness.invocations()),
    ] {
        assert!(!shown.contains(TOKEN), "{shown}");
    }
    let prompt = fake.lines(&[PROMPT]);
    assert!(!prompt[0].contains(TOKEN));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_mcp_secret_header_reaches_the_agent_only_in_session_new() {
    const KEY: &str = "api-key-cccc-3333";
    let fake = Fake::new([]);
    let driver = fake.driver(fake.resident());
    let mcp = McpServer::streamable_http("docs", "http://127.0.0.1:4102/mcp")
        .with_secret_header("X-Api-Key", "DOCS_API_KEY");
    let service = run_service::ServiceRef::new("docs", "Docs")
        .with_mcp(mcp.clone())
        .with_secret_env(run_service::EnvBinding::new("DOCS_API_KEY", KEY));
    let request = fake
        .request("one")
        .with_runtime(driver_spi::RuntimePayload::from_services([service]))
        .with_mcp([mcp]);
    let shown_request = format!("{request:?}");
    let (result, events) = run(&driver, request).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    let new = fake.lines(&[NEW]);
    assert!(
        new[0].contains(&format!(
            r#""headers":[{{"name":"X-Api-Key","value":"{KEY}"}}]"#
        )),
        "{}",
        new[0]
    );
    for shown in [
        shown_request,
        format!("{events:?}"),
        format!("{response:?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    assert!(!fake.lines(&[PROMPT])[0].contains(KEY));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_mcp_transport_the_agent_lacks_is_refused_before_launch() {
    let fake = Fake::of(stdio_only_agent(), script([]));
    let driver = fake.driver(fake.resident());
    assert!(!driver.descriptor().capabilities.mcp_transports.is_empty());
    let (result, events) = run(&driver, with_token(fake.request("one"), TOKEN)).await;
    assert!(
        matches!(
            result,
            Err(DriverError::Unsupported(_) | DriverError::InvalidConfig(_))
        ),
        "{result:?}"
    );
    assert!(!format!("{result:?}").contains(TOKEN));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, DriverEvent::TextDelta { .. }))
    );
    assert!(fake.harness.invocations().is_empty(), "no process spawned");
    assert!(fake.served().is_empty());
}

#[tokio::test]
async fn a_plain_authorization_header_is_refused_before_launch() {
    let fake = Fake::new([]);
    let driver = fake.driver(fake.resident());
    let mcp = McpServer::streamable_http("docs", "http://127.0.0.1:4102/mcp")
        .with_header("Authorization", "Bearer plain-secret-9");
    let (result, _) = run(&driver, fake.request("one").with_mcp([mcp])).await;
    assert!(
        matches!(result, Err(DriverError::InvalidConfig(_))),
        "{result:?}"
    );
    assert!(!format!("{result:?}").contains("plain-secret-9"));
    assert!(fake.harness.invocations().is_empty(), "no process spawned");
}

const ALL: &[&str] = &["allow_always", "allow_once", "reject_once", "reject_always"];

/// A handler that counts the requests it is asked and answers each with `approve`.
fn counting(approve: bool, asked: &Arc<Mutex<Vec<String>>>) -> Approvals {
    let asked = asked.clone();
    Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        asked.lock().unwrap().push(ticket.request().tool.clone());
        let _ = if approve {
            ticket.approve()
        } else {
            ticket.deny("no")
        };
    }))
}

fn policy(permission: Permission) -> PermissionPolicy {
    PermissionPolicy::DEFAULT.with(Action::Commands, permission)
}

#[tokio::test]
async fn permission_requests_are_answered_under_the_policy() {
    let fake = Fake::new([
        ask_permission(LineRule::when([PROMPT, "RUN-TOOL"]), "rm -rf build", ALL),
        ask_permission(
            LineRule::when([PROMPT, "ALWAYS-ONLY"]),
            "rm -rf build",
            &["allow_always", "reject_once"],
        ),
    ]);
    let driver = fake.driver(fake.resident());
    let asked = Arc::new(Mutex::new(Vec::new()));

    // Allowed by the policy: allow_once (first, though always is allowed), not asked.
    let request = fake
        .request("RUN-TOOL")
        .with_permissions(policy(Permission::Allow))
        .with_approvals(counting(false, &asked));
    let (result, events) = run(&driver, request).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(fake.count(ALLOW_ONCE), 1, "{:?}", fake.served());
    assert_eq!(fake.count(ALLOW_ALWAYS), 0);
    assert!(
        asked.lock().unwrap().is_empty(),
        "an allowed action is not asked"
    );
    assert!(events.iter().any(|e| matches!(e,
        DriverEvent::ToolCallResult { call_id, output, .. } if call_id == "call-1" && output == "ran once")));
    // The answer goes to the agent's request, by its id (the prompt's, in the other direction).
    let answer = fake.lines(&[ALLOW_ONCE]).remove(0);
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert!(answer.get("method").is_none(), "{answer}");
    assert_eq!(
        answer["result"],
        serde_json::json!({"outcome": {"outcome": "selected", "optionId": "opt-allow-once"}})
    );

    // Denied by the policy: reject_once, not asked.
    let request = fake
        .request("RUN-TOOL")
        .with_permissions(policy(Permission::Deny))
        .with_approvals(counting(true, &asked));
    let (result, _) = run(&driver, request).await;
    assert!(result.unwrap().is_clean());
    assert_eq!(fake.count(REJECT_ONCE), 1);
    assert_eq!(fake.count(ALLOW_ONCE), 1, "nothing more allowed");
    assert!(
        asked.lock().unwrap().is_empty(),
        "a denied action is not asked"
    );

    // Asked: the host's handler decides; its yes is allow_once.
    let request = fake
        .request("RUN-TOOL")
        .with_permissions(policy(Permission::Ask))
        .with_approvals(counting(true, &asked));
    let (result, events) = run(&driver, request).await;
    assert!(result.unwrap().is_clean());
    assert_eq!(*asked.lock().unwrap(), ["rm -rf build"]);
    assert_eq!(fake.count(ALLOW_ONCE), 2);
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(events.iter().any(|e| matches!(
        e,
        DriverEvent::ApprovalRequested {
            action: Action::Commands,
            ..
        }
    )));

    // Asked, with no one-off allow offered: the host's yes never selects allow_always.
    let request = fake
        .request("ALWAYS-ONLY")
        .with_permissions(policy(Permission::Ask))
        .with_approvals(counting(true, &asked));
    let (result, _) = run(&driver, request).await;
    assert_eq!(asked.lock().unwrap().len(), 2, "asked again");
    assert!(failed_kind(&result).is_some(), "cancelled: {result:?}");
    assert_eq!(fake.count(ALLOW_ALWAYS), 0, "{:?}", fake.served());
    assert_eq!(fake.count(CANCELLED), 1);
    driver.close_processes().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_sends_cancel_then_answers_the_pending_permission_cancelled() {
    let fake = Fake::new([ask_permission(
        LineRule::when([PROMPT, "HOLD"]),
        "make deploy",
        ALL,
    )]);
    let driver = fake.driver(fake.resident());
    // A handler that keeps its tickets unanswered: the permission request stays pending.
    let tickets = Arc::new(Mutex::new(Vec::<ApprovalTicket>::new()));
    let kept = tickets.clone();
    let approvals = Approvals::new(Arc::new(move |t: ApprovalTicket| {
        kept.lock().unwrap().push(t);
    }));
    let request = fake
        .request("HOLD")
        .with_permissions(policy(Permission::Ask))
        .with_approvals(approvals);
    let sink = Arc::new(CollectingSink::new());
    let mut running = Box::pin(driver.run(request, sink.clone()));
    let asked = tokio::select! {
        result = &mut running => panic!("the run ended by itself: {result:?}"),
        asked = eventually(Duration::from_secs(20), || !tickets.lock().unwrap().is_empty()) => asked,
    };
    assert!(asked, "the host was asked");
    let pid = fake.harness.last().pid;
    assert!(is_running(pid));
    drop(running);

    assert!(
        eventually(Duration::from_secs(10), || fake.count(CANCELLED) == 1).await,
        "the pending request answered cancelled: {:?}",
        fake.served()
    );
    let served = fake.served();
    let cancel = served
        .iter()
        .position(|l| l.contains(CANCEL))
        .expect("session/cancel");
    let answered = served.iter().position(|l| l.contains(CANCELLED)).unwrap();
    assert!(
        cancel < answered,
        "cancel first, as ACP orders it: {served:?}"
    );
    assert!(
        !served
            .iter()
            .any(|l| l.contains(ALLOW_ONCE) || l.contains(REJECT_ONCE))
    );
    assert!(
        eventually(Duration::from_secs(10), || !is_running(pid)).await,
        "the process ended"
    );
}

#[tokio::test]
async fn malformed_and_unknown_messages_are_skipped_and_client_methods_refused() {
    let fake = Fake::new([LineRule::when([PROMPT, "NOISY"])
        .stdout("this is not JSON at all")
        .stdout(r#"{"jsonrpc":"2.0","method":"_vendor.ai/command","params":{"action":"workspace_info"}}"#)
        .stdout(update(r#"{"sessionUpdate":"some_future_kind","payload":{"x":1}}"#))
        .stdout(r#"{"jsonrpc":"2.0","id":"fs-1","method":"fs/read_text_file","params":{"sessionId":"${PARAM:sessionId}","path":"/etc/hostname"}}"#)
        .stdout(message("still "))
        .stdout(message("going"))
        .stdout(stop("end_turn"))]);
    let driver = fake.driver(fake.resident());
    let (result, events) = run(&driver, fake.request("NOISY")).await;
    let response = result.unwrap();
    assert!(response.is_clean(), "{:?}", response.failure);
    assert_eq!(response.output, "still going");
    assert_eq!(check_sequence(&events), Ok(()));
    // The refusal is written before the turn goes on; the fake records it when it reads it.
    let fs_answer = [r#""id":"fs-1""#];
    assert!(
        eventually(Duration::from_secs(10), || fake.lines(&fs_answer).len()
            == 1)
        .await,
        "{:?}",
        fake.served()
    );
    let refused = fake.lines(&fs_answer);
    let refused: serde_json::Value = serde_json::from_str(&refused[0]).unwrap();
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_known_update_of_a_broken_shape_fails_the_turn_naming_no_content() {
    let fake = Fake::new([LineRule::when([PROMPT, "BROKEN"])
        .stdout(update(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":42,"note":"SECRET-CONTENT-77"}}"#,
        ))
        .stdout(stop("end_turn"))]);
    let driver = fake.driver(fake.resident());
    let (result, _) = run(&driver, fake.request("BROKEN")).await;
    assert_eq!(
        failed_kind(&result),
        Some(FailureKind::Protocol),
        "{result:?}"
    );
    assert!(
        !format!("{result:?}").contains("SECRET-CONTENT-77"),
        "{result:?}"
    );
    assert!(
        !result
            .as_ref()
            .map_or_else(ToString::to_string, |r| format!("{r:?}"))
            .contains("SECRET-CONTENT-77")
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_crash_mid_prompt_fails_the_turn_and_the_next_turn_resumes_on_a_new_process() {
    let fake = Fake::new([LineRule::when([PROMPT, "CRASH"])
        .stdout(message("half an answer"))
        .exit(3)]);
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    let pid = pid_of(&first.output);
    let state = checkpoint(&first);

    let (crashed, events) = run(&driver, resume(fake.request("CRASH"), &state)).await;
    assert_eq!(
        failed_kind(&crashed),
        Some(FailureKind::Process),
        "{crashed:?}"
    );
    assert_eq!(check_sequence(&events), Ok(()), "{crashed:?} {events:?}");
    // What the agent sent before it crashed is the turn's.
    assert!(
        events.contains(&DriverEvent::text("half an answer")),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(DriverEvent::RunFailed { .. })));
    assert_eq!(
        fake.count(r#""text":"CRASH""#),
        1,
        "the prompt is not sent again"
    );
    assert!(eventually(Duration::from_secs(5), || !is_running(pid)).await);

    let (next, _) = run(&driver, resume(fake.request("three"), &state)).await;
    let next = next.unwrap();
    assert!(next.is_clean(), "{:?}", next.failure);
    assert_ne!(pid_of(&next.output), pid, "a new process");
    assert_eq!(
        fake.lines(&[LOAD, &state.resume_id]).len(),
        1,
        "it loaded the session"
    );
    assert_eq!(checkpoint(&next).resume_id, state.resume_id);
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_unanswered_prompt_fails_within_the_idle_timeout() {
    // One update, then nothing: the turn started and is never answered.
    let fake = Fake::new([LineRule::when([PROMPT, "SILENT"])
        .stdout(message("thinking"))
        .hang()]);
    let options: AcpOptions = fake
        .resident()
        .with_limits(Limits::default().with_idle_timeout(Duration::from_secs(2)));
    let driver = fake.driver(options);
    let started = Instant::now();
    let (result, events) = run(&driver, fake.request("SILENT")).await;
    let took = started.elapsed();
    assert!(failed_kind(&result).is_some(), "{result:?}");
    assert_eq!(
        failed_kind(&result),
        Some(FailureKind::Timeout),
        "{result:?}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(took >= Duration::from_secs(2), "took {took:?}");
    assert_eq!(check_sequence(&events), Ok(()), "{result:?} {events:?}");
    assert!(matches!(events.last(), Some(DriverEvent::RunFailed { .. })));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_rotated_bearer_starts_a_new_process_that_loads_with_the_new_token() {
    let fake = Fake::new([]);
    let driver = fake.driver(fake.resident());
    let (first, _) = run(&driver, with_token(fake.request("one"), "token-aaaa-1111")).await;
    let first = first.unwrap();
    let old = pid_of(&first.output);
    let state = checkpoint(&first);

    let rotated = with_token(resume(fake.request("two"), &state), "token-bbbb-2222");
    let (second, events) = run(&driver, rotated).await;
    let second = second.unwrap();
    assert!(second.is_clean(), "{:?}", second.failure);
    assert_ne!(pid_of(&second.output), old, "a new process");
    assert!(!format!("{events:?}").contains(REPLAYED));
    let loads = fake.lines(&[LOAD]);
    assert_eq!(loads.len(), 1, "{:?}", fake.served());
    assert!(loads[0].contains(&state.resume_id));
    assert!(loads[0].contains("Bearer token-bbbb-2222"), "{}", loads[0]);
    assert!(!loads[0].contains("token-aaaa"));
    assert_eq!(checkpoint(&second).resume_id, state.resume_id);
    for call in fake.harness.invocations() {
        assert!(!call.argv.join(" ").contains("token-"), "{:?}", call.argv);
    }
    driver.close_processes().await.unwrap();
    assert!(!is_running(old));
}

#[tokio::test]
async fn per_turn_mode_runs_each_turn_on_a_one_turn_process() {
    let fake = Fake::new([]);
    let driver = fake.driver(fake.per_turn());
    assert_eq!(driver.pool_stats(), None);
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    assert!(first.is_clean(), "{:?}", first.failure);
    let pid = pid_of(&first.output);
    assert!(
        eventually(Duration::from_secs(5), || !is_running(pid)).await,
        "the one-turn process ended with its turn"
    );
    assert_eq!(fake.harness.last().argv, ["--acp"]);
    let state = checkpoint(&first);
    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    let second_pid = pid_of(&second.output);
    assert_ne!(second_pid, pid, "a process of its own");
    assert!(!format!("{events:?}").contains(REPLAYED));
    assert_eq!(fake.lines(&[LOAD, &state.resume_id]).len(), 1);
    assert!(eventually(Duration::from_secs(5), || !is_running(second_pid)).await);
    assert_eq!(fake.harness.invocations().len(), 2);
}
