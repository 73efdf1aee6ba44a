//! The PostgreSQL schema: migrations under an advisory lock, the advisory-lock keys, and the
//! text of every statement the store prepares.

use tokio_postgres::Client;

use super::map_pg;
use crate::StoreError;
use crate::row::{COLUMNS, check_schema_version, columns_of};

/// The advisory-lock key of a schema's migrations: stable across builds and hosts.
pub(super) fn migration_lock_key(schema: &str) -> i64 {
    let digest = compat_fingerprint::Fingerprint::of(
        compat_fingerprint::Kind::new("agent-sdk 2026-11-30 thread-store pg-migration-lock v1"),
        |e| {
            e.str(schema);
        },
    );
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest.as_bytes()[..8]);
    i64::from_be_bytes(bytes)
}

/// The advisory-lock key that serializes a delete of `key` with finalizes of it.
pub(super) fn key_lock_key(schema: &str, key: &str) -> i64 {
    let digest = compat_fingerprint::Fingerprint::of(
        compat_fingerprint::Kind::new("agent-sdk 2026-11-30 thread-store pg-key-lock v1"),
        |e| {
            e.str(schema);
            e.str(key);
        },
    );
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest.as_bytes()[..8]);
    i64::from_be_bytes(bytes)
}

pub(super) fn migrations(schema: &str) -> Vec<String> {
    let s = quote_ident(schema);
    vec![
        format!(
            "CREATE TABLE {s}.threads (
            id TEXT COLLATE \"C\" PRIMARY KEY,
            key TEXT COLLATE \"C\" NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
            format BIGINT NOT NULL,
            driver_type TEXT NOT NULL,
            agent TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            scheme_version BIGINT NOT NULL,
            components TEXT NOT NULL,
            codec TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        );
        CREATE INDEX threads_by_key ON {s}.threads (key, id);
        CREATE TABLE {s}.bindings (
            key TEXT COLLATE \"C\" PRIMARY KEY,
            record_id TEXT NOT NULL
        );
        CREATE TABLE {s}.leases (
            target TEXT COLLATE \"C\" PRIMARY KEY,
            owner TEXT NOT NULL,
            token BIGINT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL
        );
        CREATE SEQUENCE {s}.lease_tokens AS BIGINT MINVALUE 1;"
        ),
        // 2: erase fences: the fencing token each delete of a key took.
        format!(
            "CREATE TABLE {s}.erased_keys (
            key TEXT COLLATE \"C\" PRIMARY KEY,
            fence BIGINT NOT NULL
        );"
        ),
        // 3: the turn count of each record (0 for records written before it).
        format!("ALTER TABLE {s}.threads ADD COLUMN turns BIGINT NOT NULL DEFAULT 0;"),
        // 4: the credential namespace owning each record (NULL for records written before it).
        format!("ALTER TABLE {s}.threads ADD COLUMN namespace TEXT COLLATE \"C\";"),
    ]
}

pub(super) fn quote_ident(schema: &str) -> String {
    // The schema name is validated to [a-z0-9_]; quoting keeps keywords usable.
    format!("\"{schema}\"")
}

pub(super) async fn migrate(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    let s = quote_ident(schema);
    let tx = client.transaction().await.map_err(|e| map_pg(&e))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&migration_lock_key(schema)],
    )
    .await
    .map_err(|e| map_pg(&e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.schema_migrations (
             version BIGINT PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(|e| map_pg(&e))?;
    let row = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0)::BIGINT FROM {s}.schema_migrations"),
            &[],
        )
        .await
        .map_err(|e| map_pg(&e))?;
    let current: i64 = row.try_get(0).map_err(|_| {
        StoreError::corrupt("the schema_migrations table does not hold integer versions")
    })?;
    check_schema_version("PostgreSQL", current)?;
    for (index, sql) in migrations(schema).iter().enumerate() {
        let version = i64::try_from(index).unwrap_or(i64::MAX).saturating_add(1);
        if version <= current {
            continue;
        }
        tx.batch_execute(sql).await.map_err(|e| map_pg(&e))?;
        tx.execute(
            &format!("INSERT INTO {s}.schema_migrations (version) VALUES ($1)"),
            &[&version],
        )
        .await
        .map_err(|e| map_pg(&e))?;
    }
    tx.commit().await.map_err(|e| map_pg(&e))
}

/// The SQL text of every statement, with the schema filled in.
#[derive(Debug)]
pub(super) struct Sql {
    pub(super) acquire: String,
    pub(super) renew: String,
    pub(super) release: String,
    pub(super) lock_leases: String,
    pub(super) binding_exists: String,
    pub(super) archive: String,
    pub(super) upsert: String,
    pub(super) bind: String,
    pub(super) bind_new: String,
    pub(super) release_many: String,
    pub(super) renew_many: String,
    pub(super) by_id: String,
    pub(super) by_key: String,
    pub(super) page: String,
    pub(super) page_unbounded: String,
    pub(super) delete_bindings: String,
    pub(super) delete_threads: String,
    pub(super) key_lock: String,
    pub(super) key_lock_shared: String,
    pub(super) erase: String,
    pub(super) prune_fences: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Self {
        let s = quote_ident(schema);
        let t_columns = columns_of("t");
        Self {
            acquire: format!(
                "INSERT INTO {s}.leases AS l (target, owner, token, expires_at) \
                 VALUES ($1, $2, nextval('{s}.lease_tokens'), now() + $3::float8 * interval '1 millisecond') \
                 ON CONFLICT (target) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token, \
                 expires_at = EXCLUDED.expires_at \
                 WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner \
                 RETURNING token"
            ),
            renew: format!(
                "UPDATE {s}.leases SET expires_at = now() + $4::float8 * interval '1 millisecond' \
                 WHERE target = $1 AND owner = $2 AND token = $3 AND expires_at > now()"
            ),
            release: format!(
                "DELETE FROM {s}.leases WHERE target = $1 AND owner = $2 AND token = $3"
            ),
            lock_leases: format!(
                "SELECT target, owner, token, expires_at > now(), \
                 (SELECT fence FROM {s}.erased_keys WHERE key = $2) FROM {s}.leases \
                 WHERE target = ANY($1::text[]) ORDER BY target FOR UPDATE OF leases"
            ),
            binding_exists: format!("SELECT 1 FROM {s}.bindings WHERE key = $1 FOR UPDATE"),
            archive: format!("UPDATE {s}.threads SET status = 'archived' WHERE id = $1"),
            upsert: format!(
                "INSERT INTO {s}.threads AS t ({COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
                 ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, format = EXCLUDED.format, \
                 driver_type = EXCLUDED.driver_type, agent = EXCLUDED.agent, \
                 fingerprint = EXCLUDED.fingerprint, scheme_version = EXCLUDED.scheme_version, \
                 components = EXCLUDED.components, codec = EXCLUDED.codec, state = EXCLUDED.state, \
                 created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, \
                 turns = EXCLUDED.turns, namespace = EXCLUDED.namespace \
                 WHERE t.key = EXCLUDED.key \
                 RETURNING 1"
            ),
            bind: format!(
                "INSERT INTO {s}.bindings (key, record_id) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET record_id = EXCLUDED.record_id"
            ),
            bind_new: format!("INSERT INTO {s}.bindings (key, record_id) VALUES ($1, $2)"),
            release_many: format!(
                "DELETE FROM {s}.leases l \
                 USING unnest($1::text[], $2::text[], $3::bigint[]) AS h(target, owner, token) \
                 WHERE l.target = h.target AND l.owner = h.owner AND l.token = h.token"
            ),
            // now() is the transaction's start, so the new expiry is at least `ttl` after the
            // caller sent the finalize: a host's local deadline read before it is never late.
            renew_many: format!(
                "UPDATE {s}.leases l SET expires_at = now() + $4::float8 * interval '1 millisecond' \
                 FROM unnest($1::text[], $2::text[], $3::bigint[]) AS h(target, owner, token) \
                 WHERE l.target = h.target AND l.owner = h.owner AND l.token = h.token"
            ),
            by_id: format!("SELECT {COLUMNS} FROM {s}.threads WHERE id = $1"),
            by_key: format!(
                "SELECT {t_columns} FROM {s}.bindings b JOIN {s}.threads t ON t.id = b.record_id \
                 WHERE b.key = $1"
            ),
            // The scan seeks to the page's start and stops at the prefix's successor ($6),
            // so a page costs the same wherever it sits (see `ListQuery::scan_start`); the two
            // bounds select exactly the prefix's keys, so no `starts_with` filter is needed
            // (it also skews the planner's row estimate towards a bitmap scan and a sort).
            page: format!(
                "SELECT {COLUMNS} FROM {s}.threads \
                 WHERE (key, id) > ($2, $3) AND key < $6 AND $1::text IS NOT NULL \
                 AND ($4 OR status = 'active') AND ($7::text IS NULL OR namespace = $7) \
                 ORDER BY key, id LIMIT $5"
            ),
            // A prefix with no successor: $6 is NULL, bound only so both take one parameter list.
            page_unbounded: format!(
                "SELECT {COLUMNS} FROM {s}.threads \
                 WHERE (key, id) > ($2, $3) AND starts_with(key, $1) AND $6::text IS NULL \
                 AND ($4 OR status = 'active') AND ($7::text IS NULL OR namespace = $7) \
                 ORDER BY key, id LIMIT $5"
            ),
            delete_bindings: format!("DELETE FROM {s}.bindings WHERE key = $1"),
            delete_threads: format!("DELETE FROM {s}.threads WHERE key = $1"),
            key_lock: "SELECT pg_advisory_xact_lock($1)".to_owned(),
            key_lock_shared: "SELECT pg_advisory_xact_lock_shared($1)".to_owned(),
            erase: format!(
                "INSERT INTO {s}.erased_keys (key, fence) VALUES ($1, nextval('{s}.lease_tokens')) \
                 ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence"
            ),
            prune_fences: format!(
                "DELETE FROM {s}.erased_keys e WHERE NOT EXISTS (SELECT 1 FROM {s}.leases l \
                 WHERE l.expires_at > now() AND l.token < e.fence)"
            ),
        }
    }
}
