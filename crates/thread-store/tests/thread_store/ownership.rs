//! Schema version 4 added the owning credential namespace of each record: a database an older
//! build left at version 3 migrates forward on open, on SQLite and PostgreSQL alike, and keeps
//! every record, each read with no owner; records written afterwards keep theirs, and a list
//! of one namespace returns only its records.

use thread_store::{FinalizeRequest, ListQuery, Query, ThreadStore};

use crate::{PgSchema, record, runtime};

/// Writes an owned and an unowned record through `store`, both before the test turns the
/// schema back into version 3.
async fn write_before(store: &dyn ThreadStore) {
    for (key, owner) in [("old/owned", Some("user:alice")), ("old/unowned", None)] {
        let mut record = record(key, 1);
        record.namespace = owner.map(str::to_owned);
        store
            .finalize(&FinalizeRequest::new(record).rebind_key())
            .await
            .unwrap();
    }
}

/// After the migration: both old records are there, with no owner (version 3 had none), and
/// a record written now keeps its owner and is the only one alice's listing returns.
async fn check_after(store: &dyn ThreadStore) {
    for key in ["old/owned", "old/unowned"] {
        let old = store.resolve(&Query::key(key)).await.unwrap().unwrap();
        assert_eq!(old.namespace, None, "{key}: written before ownership");
        assert_eq!(crate::counter_of(&old), 1, "{key}: the record is intact");
    }
    let new = record("new", 2).owned_by("user:alice");
    store
        .finalize(&FinalizeRequest::new(new.clone()).rebind_key())
        .await
        .unwrap();
    assert_eq!(store.resolve(&Query::key("new")).await.unwrap(), Some(new));
    let page = store
        .list(&ListQuery::prefix("").namespace("user:alice"))
        .await
        .unwrap();
    let keys: Vec<&str> = page.records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["new"]);
    let page = store.list(&ListQuery::prefix("")).await.unwrap();
    assert_eq!(page.records.len(), 3, "every owner's and none");
}

#[test]
fn sqlite_schema_3_databases_migrate_to_ownership() {
    use thread_store::sqlite::{SqliteConfig, SqliteStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.sqlite3");
    let rt = runtime();
    rt.block_on(async {
        let store = SqliteStore::open(SqliteConfig::new(&path)).await.unwrap();
        write_before(&store).await;
    });
    // Turn the file back into schema version 3, as an older build left it.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "ALTER TABLE threads DROP COLUMN namespace; DELETE FROM schema_migrations WHERE version = 4;",
        )
        .unwrap();
    }
    rt.block_on(async {
        let store = SqliteStore::open(SqliteConfig::new(&path)).await.unwrap();
        check_after(&store).await;
    });
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(version, 4);
}

#[test]
fn postgres_schema_3_databases_migrate_to_ownership() {
    let schema = PgSchema::new("v3");
    runtime().block_on(async {
        let store = schema.store().await;
        write_before(&store).await;
        drop(store);
        // Turn the schema back into version 3, as an older build left it.
        let client = schema.raw_client().await;
        let s = &schema.name;
        client
            .batch_execute(&format!(
                "ALTER TABLE \"{s}\".threads DROP COLUMN namespace; \
                 DELETE FROM \"{s}\".schema_migrations WHERE version = 4;"
            ))
            .await
            .unwrap();
        let store = schema.store().await;
        check_after(&store).await;
        let version: i64 = client
            .query_one(
                &format!("SELECT MAX(version) FROM \"{s}\".schema_migrations"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, 4);
    });
}
