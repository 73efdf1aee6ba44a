//! Property: any record a caller can build round-trips deep-equal through every adapter.

use std::sync::Arc;

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use thread_store::memory::MemoryStore;
use thread_store::{
    Compatibility, FinalizeRequest, Query, RecordId, RecordStatus, SessionState, SystemClock,
    ThreadRecord, ThreadStore, Timestamp,
};

use crate::{PgSchema, open_sqlite, runtime};

fn records() -> impl Strategy<Value = ThreadRecord> {
    let names = "[a-zA-Z0-9/é🧵 _%.:-]{1,40}";
    let text = "\\PC{0,24}";
    let components = proptest::collection::btree_map(
        "[a-z][a-z0-9._:-]{0,20}".prop_map(|n| ComponentName::new(n).unwrap()),
        any::<[u8; 32]>().prop_map(Fingerprint::from_bytes),
        0..4,
    );
    let state = (
        any::<String>(),
        proptest::option::of(any::<String>()),
        proptest::collection::btree_map(any::<String>(), any::<String>(), 0..5),
    )
        .prop_map(|(resume_id, display_id, data)| SessionState {
            resume_id,
            display_id,
            data,
        });
    (
        (names, text, text, text, any::<bool>()),
        (any::<[u8; 32]>(), any::<u32>(), components),
        state,
        (
            any::<i64>(),
            any::<i64>(),
            0..=i64::MAX as u64,
            proptest::option::of(names),
        ),
    )
        .prop_map(
            |(
                (key, driver_type, agent, codec, active),
                (fp, scheme, comps),
                state,
                (c, u, turns, namespace),
            )| {
                ThreadRecord {
                    id: RecordId::generate(),
                    key,
                    status: if active {
                        RecordStatus::Active
                    } else {
                        RecordStatus::Archived
                    },
                    driver_type,
                    agent,
                    compatibility: Compatibility {
                        fingerprint: Fingerprint::from_bytes(fp),
                        scheme_version: scheme,
                        components: comps.into_iter().collect::<Breakdown>(),
                    },
                    session_codec: codec,
                    state,
                    created_at: Timestamp::from_millis(c),
                    updated_at: Timestamp::from_millis(u),
                    turns,
                    namespace,
                }
            },
        )
}

fn check_round_trips(rt: &tokio::runtime::Runtime, stores: &[Arc<dyn ThreadStore>], cases: u32) {
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7468_7265_6164),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&records(), |record| {
            rt.block_on(async {
                for store in stores {
                    let mut request = FinalizeRequest::new(record.clone());
                    if record.status == RecordStatus::Active {
                        request = request.rebind_key();
                    }
                    store.finalize(&request).await.unwrap();
                    let back = store
                        .resolve(&Query::id(record.id.clone()).including_archived())
                        .await
                        .unwrap();
                    prop_assert_eq!(back.as_ref(), Some(&record), "through {:?}", store);
                    if record.status == RecordStatus::Active {
                        let by_key = store.resolve(&Query::key(&record.key)).await.unwrap();
                        prop_assert_eq!(by_key.as_ref(), Some(&record));
                    }
                }
                Ok(())
            })
        })
        .unwrap();
}

#[test]
fn records_round_trip_through_memory_and_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let sqlite = rt.block_on(open_sqlite(
        &dir.path().join("prop.db"),
        Arc::new(SystemClock),
    ));
    check_round_trips(&rt, &[Arc::new(MemoryStore::new()), Arc::new(sqlite)], 64);
}

#[test]
fn records_round_trip_through_postgres() {
    let schema = PgSchema::new("prop");
    let rt = runtime();
    let store = rt.block_on(schema.store());
    check_round_trips(&rt, &[Arc::new(store)], 32);
}
