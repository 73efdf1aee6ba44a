//! Two tenants, one store: `agentctl --namespace user:alice` and `--namespace user:bob` as real
//! processes on one SQLite file, with the reference runtime (its sessions on disk in each
//! namespace). Bob's run, resume-only run and explain on Alice's Thread exit 6 naming her
//! namespace only by a digest, and change nothing; Alice resumes. `threads list`, `show` and
//! `delete` keep to the namespace unless `--all-namespaces`. A record stored before ownership
//! is refused to Bob (exit 6, not archived) and claimed by Alice's resume.

use std::path::Path;
use std::process::Output;

use thread_store::sqlite::{SqliteConfig, SqliteStore};
use thread_store::{FinalizeRequest, ListQuery, Query, ThreadRecord, ThreadStore};

use crate::support::{agentctl, text};

const ALICE: &str = "user:alice";
const BOB: &str = "user:bob";
const KEY: &str = "alice/chat-1";
/// The exit code of another namespace's Thread.
const FOREIGN: i32 = 6;

/// `agentctl run` of `namespace` on `key`, with `extra` flags.
fn run(root: &Path, namespace: &str, key: &str, extra: &[&str], prompt: &str) -> Output {
    in_namespace(
        root,
        &["run", "--thread", key],
        namespace,
        &[extra, &[prompt]].concat(),
    )
}

/// `agentctl threads explain` of `namespace` on `key`.
fn explain(root: &Path, namespace: &str, key: &str, extra: &[&str]) -> Output {
    in_namespace(root, &["threads", "explain", key], namespace, extra)
}

/// `agentctl <command>` in `namespace` and the test's workspace, then `rest`.
fn in_namespace(root: &Path, command: &[&str], namespace: &str, rest: &[&str]) -> Output {
    let ws = root.to_str().unwrap();
    let args = [
        command,
        &["--namespace", namespace, "--workspace", ws],
        rest,
    ]
    .concat();
    agentctl(root, &args)
}

/// The keys `threads list --json` with `scope` prints, and their owners.
fn listed(root: &Path, scope: &[&str]) -> Vec<(String, Option<String>)> {
    let out = agentctl(root, &[&["threads", "list", "--json"][..], scope].concat());
    assert!(out.status.success(), "{out:?}");
    text(&out.stdout)
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let owner = row["namespace"].as_str().map(str::to_owned);
            (row["key"].as_str().unwrap().to_owned(), owner)
        })
        .collect()
}

fn owned(key: &str, owner: Option<&str>) -> (String, Option<String>) {
    (key.to_owned(), owner.map(str::to_owned))
}

/// Exit 6, saying so, naming Alice's namespace by digest only; the runtime never answered.
fn assert_refused(out: &Output) {
    assert_eq!(out.status.code(), Some(FOREIGN), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("another credential namespace"), "{stderr}");
    assert!(!stderr.contains(ALICE), "{stderr}");
    assert!(!text(&out.stdout).contains("reference turn"), "{out:?}");
}

async fn open(root: &Path) -> SqliteStore {
    SqliteStore::open(SqliteConfig::new(root.join("threads.sqlite3")))
        .await
        .unwrap()
}

/// The key's record, and every record under it (active and archived).
async fn records(root: &Path, key: &str) -> (ThreadRecord, Vec<ThreadRecord>) {
    let store = open(root).await;
    let record = store.resolve(&Query::key(key)).await.unwrap().unwrap();
    let all = store
        .list(&ListQuery::prefix(key).including_archived())
        .await
        .unwrap()
        .records;
    (record, all)
}

#[tokio::test(flavor = "multi_thread")]
async fn another_namespace_is_refused_and_sees_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    let first = run(root, ALICE, KEY, &[], "hello");
    assert!(first.status.success(), "{first:?}");
    assert!(text(&first.stdout).contains("session started"));
    let (before, _) = records(root, KEY).await;
    assert_eq!(before.namespace.as_deref(), Some(ALICE));

    // Bob: a run, a resume-only run and explain are refused; nothing changes.
    assert_refused(&run(root, BOB, KEY, &[], "mine now"));
    assert_refused(&run(root, BOB, KEY, &["--resume-only"], "mine now"));
    assert_refused(&explain(root, BOB, KEY, &[]));
    let json = explain(root, BOB, KEY, &["--json"]);
    assert_refused(&json);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["would"], "refuse");
    let (after, all) = records(root, KEY).await;
    assert_eq!(after, before, "alice's record is untouched");
    assert_eq!(all, vec![before.clone()], "nothing archived");

    // Alice resumes her conversation: the same record, one turn on.
    let again = run(root, ALICE, KEY, &["--resume-only"], "again");
    assert!(again.status.success(), "{again:?}");
    assert!(text(&again.stdout).contains("session resumed"), "{again:?}");
    assert!(
        text(&again.stdout).contains("[earlier: hello]"),
        "{again:?}"
    );
    let (after, _) = records(root, KEY).await;
    assert_eq!((after.id.clone(), after.turns), (before.id.clone(), 2));

    // Listing: each namespace its own, every one with --all-namespaces, owners shown.
    let mine = run(root, BOB, "bob/chat-1", &[], "hello");
    assert!(mine.status.success(), "{mine:?}");
    assert_eq!(
        listed(root, &["--namespace", ALICE]),
        [owned(KEY, Some(ALICE))]
    );
    assert_eq!(
        listed(root, &["--namespace", BOB]),
        [owned("bob/chat-1", Some(BOB))]
    );
    assert!(
        listed(root, &[]).is_empty(),
        "the default namespace owns nothing"
    );
    assert_eq!(
        listed(root, &["--all-namespaces"]),
        [owned(KEY, Some(ALICE)), owned("bob/chat-1", Some(BOB))]
    );
    let table = agentctl(root, &["threads", "list", "--all-namespaces"]);
    let table = text(&table.stdout);
    assert!(table.lines().next().unwrap().contains("OWNER"), "{table}");
    assert!(table.contains(&format!("{ALICE:<16}  {KEY}")), "{table}");
    let both = agentctl(
        root,
        &["threads", "list", "--namespace", BOB, "--all-namespaces"],
    );
    assert_eq!(both.status.code(), Some(2), "{both:?}");

    // Show and delete keep to the namespace too.
    let show = agentctl(root, &["threads", "show", KEY, "--namespace", BOB]);
    assert_refused(&show);
    let show = agentctl(root, &["threads", "show", KEY, "--namespace", ALICE]);
    assert!(show.status.success(), "{show:?}");
    assert!(text(&show.stdout).contains(&format!("owner         {ALICE}")));
    let show = agentctl(
        root,
        &["threads", "show", KEY, "--all-namespaces", "--json"],
    );
    let value: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(value["namespace"], ALICE);
    let delete = agentctl(root, &["threads", "delete", KEY, "--namespace", BOB]);
    assert_refused(&delete);
    let (after, _) = records(root, KEY).await;
    assert_eq!(after.id, before.id, "not deleted");
    let target = format!("{}{KEY}", agent::THREAD_LEASE_PREFIX);
    let store = open(root).await;
    assert_eq!(
        store.lease_holder(&target).await.unwrap(),
        None,
        "no lease left"
    );
    let delete = agentctl(
        root,
        &["threads", "delete", "bob/chat-1", "--namespace", BOB],
    );
    assert!(delete.status.success(), "{delete:?}");
    let delete = agentctl(root, &["threads", "delete", KEY, "--all-namespaces"]);
    assert!(delete.status.success(), "{delete:?}");
    assert!(listed(root, &["--all-namespaces"]).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_without_an_owner_is_claimed_by_the_namespace_that_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let key = "legacy/1";
    let first = run(root, ALICE, key, &[], "hello");
    assert!(first.status.success(), "{first:?}");
    // As an older build wrote it: no owner.
    let (mut record, _) = records(root, key).await;
    record.namespace = None;
    let store = open(root).await;
    store
        .finalize(&FinalizeRequest::new(record.clone()))
        .await
        .unwrap();
    drop(store);

    assert!(
        listed(root, &["--namespace", ALICE]).is_empty(),
        "unclaimed"
    );
    assert_eq!(listed(root, &["--all-namespaces"]), [owned(key, None)]);
    let show = agentctl(root, &["threads", "show", key, "--namespace", ALICE]);
    assert_eq!(show.status.code(), Some(FOREIGN), "{show:?}");
    let explained = explain(root, BOB, key, &[]);
    assert!(explained.status.success(), "{explained:?}");
    assert!(
        text(&explained.stdout).starts_with(&format!("resume and claim: record {}", record.id)),
        "{explained:?}"
    );

    // Bob's namespace does not hold the session: refused, the record as it was.
    for extra in [&[][..], &["--resume-only"]] {
        let refused = run(root, BOB, key, extra, "mine now");
        assert_eq!(refused.status.code(), Some(FOREIGN), "{refused:?}");
        assert!(
            text(&refused.stderr).contains("no owning namespace"),
            "{refused:?}"
        );
        let (after, all) = records(root, key).await;
        assert_eq!(after, record);
        assert_eq!(all, vec![record.clone()], "nothing archived");
    }

    // Alice's does: her resume claims it.
    let again = run(root, ALICE, key, &[], "again");
    assert!(again.status.success(), "{again:?}");
    assert!(text(&again.stdout).contains("session resumed"), "{again:?}");
    let (after, _) = records(root, key).await;
    assert_eq!(after.id, record.id);
    assert_eq!(after.namespace.as_deref(), Some(ALICE));
    assert_eq!(
        listed(root, &["--namespace", ALICE]),
        [owned(key, Some(ALICE))]
    );
    assert_refused(&run(root, BOB, key, &[], "mine now"));
}
