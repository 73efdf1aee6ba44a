//! The multi-host store: PostgreSQL through tokio-postgres, for hosts that outgrow one machine.
//!
//! - All tables live in one schema named in the [`PostgresConfig`], so several stores (or
//!   test runs) share a database without colliding.
//! - Migrations are numbered (`schema_migrations`) and applied inside one transaction that
//!   first takes `pg_advisory_xact_lock` on a key derived from the schema name, so any number of
//!   hosts can start at once and the schema is migrated exactly once.
//! - Lease expiry uses the server clock (`now()`), never the host clock, so hosts with skewed
//!   clocks agree. Fencing tokens come from one sequence, so they strictly increase.
//! - `finalize` runs one `READ COMMITTED` transaction that locks every held lease row with
//!   `SELECT … FOR UPDATE` (in target order, so two finalizers cannot deadlock on each other),
//!   compares owner and token and checks `expires_at > now()`, then writes. While those rows are
//!   locked no other host can take the leases over, so the check holds until commit.
//! - `delete` and `finalize` agree through the key's erase fence (see
//!   [`ThreadStore::delete`]). A delete takes `pg_advisory_xact_lock` on a key derived from
//!   the schema and the thread key, and a finalize that holds leases takes the shared form of
//!   the same lock before it reads the fence, so the two serialize per key while finalizes of
//!   one key never block each other. The delete also locks the leases table in `SHARE` mode
//!   before it draws its fence token, so every acquisition either committed before the delete
//!   (its token is below the fence) or starts after it (its token is above); deletes are rare,
//!   and lease operations wait for one only for the length of its short transaction.
//! - Only serialization failures (`40001`) and deadlocks (`40P01`) are retried, by replaying
//!   the whole transaction; a failed lease check is an answer, never retried.
//! - A pool (deadpool-postgres) keeps up to `pool_size` connections (16 by default), each
//!   with its statements prepared once and cached, so Threads on one host run their turns in
//!   parallel and the server merges their WAL flushes. Connections are opened lazily, and the
//!   connection tasks are spawned on the current Tokio runtime.
//! - A finalize costs three round trips: `BEGIN`, every statement of the write sent at once
//!   (pipelined; the server runs them in order, so the lease rows are locked before anything is
//!   written, and a failed check rolls the whole transaction back), then `COMMIT`.
//! - TLS follows libpq's `sslmode` ([`SslMode`]): `disable`, `prefer` (the default),
//!   `require`, `verify-ca` and `verify-full`, read from the connection string or set with
//!   [`PostgresConfig::ssl_mode`]. It runs on rustls with the ring provider; the verifying
//!   modes trust the platform's roots plus any [`RootCertificate`] the config adds. Client
//!   certificates (`sslcert`/`sslkey`) are not supported.
//!
//! A store in its own schema of a server's database (here the one the tests use,
//! `THREAD_STORE_POSTGRES_URL`, when it is set):
//!
//! ```
//! use thread_store::ThreadStore as _;
//! use thread_store::postgres::{PostgresConfig, PostgresStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let Ok(url) = std::env::var("THREAD_STORE_POSTGRES_URL") else {
//!     return Ok(()); // no server to talk to
//! };
//! # let schema = format!("ts_doc_example_{}", std::process::id());
//! // Creates the schema if needed and migrates it, once, however many hosts start at once.
//! let store = PostgresStore::connect(PostgresConfig::from_url(&url, &schema)?).await?;
//! assert_eq!(store.lease_holder("ticket-4711").await?, None);
//! # drop(store);
//! # let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
//! # tokio::spawn(connection);
//! # client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await?;
//! # Ok(()) }
//! ```
//!
//! With TLS verified against a private CA (`no_run`: it needs a server whose certificate
//! chains to that CA; `tests/thread_store/postgres_tls.rs` runs the handshake against one):
//!
//! ```no_run
//! use thread_store::postgres::{PostgresConfig, PostgresStore, RootCertificate};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The server's certificate must chain to the platform's roots or to the database CA, and
//! // name db.internal.example.
//! let ca = RootCertificate::from_pem(&std::fs::read("/etc/agent/db-ca.pem")?)?;
//! let mut config = PostgresConfig::from_url(
//!     "postgresql://agent@db.internal.example/threads?sslmode=verify-full",
//!     "agent_threads",
//! )?;
//! for root in ca {
//!     config = config.root_certificate(root);
//! }
//! let store = PostgresStore::connect(config).await?;
//! # drop(store);
//! # Ok(())
//! # }
//! ```

mod finalize;
mod schema;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row, Statement};

use self::finalize::finalize_once;
use self::schema::{Sql, key_lock_key, migrate, quote_ident};
use crate::LeaseHolder;
use crate::pg_tls::{Connector, TlsSettings};
pub use crate::pg_tls::{RootCertificate, SslMode};
use crate::record::check_name as check_lease_target_name;

use crate::row::{RowSource, StoredRow, decode_all, token_from_sql, token_to_sql};
use crate::store::{check_lease_args, is_storable_key, millis_until, prefix_successor, visible};
use crate::{
    FinalizeRequest, Lease, ListPage, ListQuery, Lookup, Query, StoreError, ThreadRecord,
    ThreadStore,
};

/// The newest schema version this build knows. A schema whose `schema_migrations` table records
/// a newer version is refused with [`StoreError::Corrupt`].
pub const SCHEMA_VERSION: i64 = crate::row::SCHEMA_VERSION;

/// How many times a transaction that hit a serialization failure or deadlock is replayed.
const MAX_ATTEMPTS: u32 = 8;

/// How to connect a [`PostgresStore`].
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    pg: tokio_postgres::Config,
    schema: String,
    pool_size: usize,
    tls: TlsSettings,
}

impl PostgresConfig {
    /// A store in `schema` of the database `pg` points to, with a pool of up to 16 connections.
    ///
    /// The schema name must be 1 to 63 characters of `a-z`, `0-9` and `_`, starting with a
    /// letter or `_`; it is created if missing. The TLS mode is the one `pg` asks for
    /// (`disable`, `prefer` or `require`); see [`ssl_mode`](Self::ssl_mode) for the verifying
    /// modes.
    pub fn new(pg: tokio_postgres::Config, schema: &str) -> Result<Self, StoreError> {
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !schema.as_bytes()[0].is_ascii_digit();
        if !valid {
            return Err(StoreError::invalid(
                "the schema name must be 1 to 63 characters of [a-z0-9_], not starting with a digit",
            ));
        }
        let tls = TlsSettings {
            mode: SslMode::from_pg(pg.get_ssl_mode()),
            ..TlsSettings::default()
        };
        Ok(Self {
            pg,
            schema: schema.to_owned(),
            pool_size: 16,
            tls,
        })
    }

    /// Parses a connection URL or key-value string (`postgresql://user@host:5432/db`). The
    /// message of a parse failure never repeats the string, which may hold a password.
    ///
    /// An `sslmode` parameter takes any of libpq's values but `allow` (see [`SslMode`]);
    /// without one the mode is `prefer`, as in libpq.
    pub fn from_url(url: &str, schema: &str) -> Result<Self, StoreError> {
        let (rest, mode) = crate::pg_tls::take_sslmode(url)?;
        let pg = rest
            .parse::<tokio_postgres::Config>()
            .map_err(|_| StoreError::invalid("the PostgreSQL connection string does not parse"))?;
        let config = Self::new(pg, schema)?;
        Ok(match mode {
            Some(mode) => config.ssl_mode(mode),
            None => config,
        })
    }

    /// Sets the TLS mode, overriding the connection string's `sslmode`.
    pub fn ssl_mode(mut self, mode: SslMode) -> Self {
        self.pg.ssl_mode(mode.to_pg());
        self.tls.mode = mode;
        self
    }

    /// The TLS mode the store will connect with.
    pub fn get_ssl_mode(&self) -> SslMode {
        self.tls.mode
    }

    /// Trusts `root` as a certificate authority for the server's certificate, like libpq's
    /// `sslrootcert`. As in libpq, once a root is configured, `prefer` and `require` verify
    /// the certificate chain too (the host name only under `verify-full`).
    pub fn root_certificate(mut self, root: RootCertificate) -> Self {
        self.tls.roots.push(root);
        self
    }

    /// Whether the verifying modes also trust the platform's root certificates (the default:
    /// yes; read through rustls-native-certs, which honours `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR`). Turn it off to trust only the configured
    /// [`root_certificate`](Self::root_certificate)s.
    pub fn system_roots(mut self, trust: bool) -> Self {
        self.tls.no_system_roots = !trust;
        self
    }

    /// Sets how many connections the store keeps (at least 1).
    pub fn pool_size(mut self, pool_size: usize) -> Self {
        self.pool_size = pool_size.max(1);
        self
    }
}

/// A [`ThreadStore`] in a PostgreSQL schema.
#[derive(Debug)]
pub struct PostgresStore {
    pool: Pool,
    sql: Sql,
    schema: String,
    retries: AtomicU64,
}

impl PostgresStore {
    /// Connects, creates the schema if needed and applies pending migrations.
    ///
    /// A TLS configuration that cannot be used (a root certificate that does not parse, a
    /// verifying mode with no trusted root at all) is [`StoreError::InvalidInput`]; a failed
    /// TLS handshake, like any connection failure, is [`StoreError::Unavailable`].
    pub async fn connect(config: PostgresConfig) -> Result<Self, StoreError> {
        let tls = crate::pg_tls::connector(&config.tls)?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match tls {
            Connector::Plain => Manager::from_config(config.pg.clone(), NoTls, manager_config),
            Connector::Rustls(make) => {
                Manager::from_config(config.pg.clone(), make, manager_config)
            }
        };
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::unavailable(format!("the connection pool: {e}")))?;
        let mut client = pool.get().await.map_err(|e| map_pool(&e))?;
        migrate(&mut client, &config.schema).await?;
        drop(client);
        Ok(Self {
            pool,
            sql: Sql::new(&config.schema),
            schema: config.schema,
            retries: AtomicU64::new(0),
        })
    }

    /// The schema this store lives in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// How many transactions this store has replayed after a serialization failure or a
    /// deadlock since it connected.
    pub fn retry_count(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
}

/// A failure inside a transaction attempt: a store answer, or a database error that may be
/// retryable.
enum Fail {
    Store(StoreError),
    Pg(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

fn is_retryable(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// Maps a tokio-postgres error. Server messages name relations and constraints; the detail
/// and hint fields, which can quote row values, are left out.
fn map_pg(e: &tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let text = format!("PostgreSQL error {}: {}", code.code(), db.message());
        if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED {
            return StoreError::corrupt(text);
        }
        return StoreError::unavailable(text);
    }
    if e.is_closed() {
        return StoreError::unavailable("the PostgreSQL connection is closed");
    }
    // The source says why (a refused certificate, a reset connection); tokio-postgres's own
    // text leaves it out. Neither carries the connection string or its password.
    match std::error::Error::source(e) {
        Some(source) => StoreError::unavailable(format!("PostgreSQL client error: {e}: {source}")),
        None => StoreError::unavailable(format!("PostgreSQL client error: {e}")),
    }
}

fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, StoreError> {
    row.try_get(index).map_err(|_| {
        StoreError::corrupt(format!(
            "column {index} does not hold the type this build stores"
        ))
    })
}

impl RowSource for Row {
    type Error = StoreError;
    fn text(&self, index: usize) -> Result<String, StoreError> {
        column(self, index)
    }
    fn int(&self, index: usize) -> Result<i64, StoreError> {
        column(self, index)
    }
    fn opt_text(&self, index: usize) -> Result<Option<String>, StoreError> {
        column(self, index)
    }
}

fn read_row(row: &Row) -> Result<StoredRow, StoreError> {
    StoredRow::read(row)
}

fn ttl_millis(ttl: Duration) -> f64 {
    // TTLs are at most MAX_LEASE_TTL, so the conversion is exact.
    ttl.as_millis() as f64
}

/// A pooled connection and the store's SQL, for one transaction attempt.
struct Conn<'a> {
    client: &'a mut Object,
    sql: &'a Sql,
}

impl Conn<'_> {
    /// The statement `pick` names, prepared on this connection (once: later calls hit its
    /// statement cache, with no round trip).
    async fn st(&self, pick: fn(&Sql) -> &str) -> Result<Statement, tokio_postgres::Error> {
        self.client.prepare_cached(pick(self.sql)).await
    }
}

/// A pool failure: the server refused or dropped a new connection, or the pool is closed.
fn map_pool(e: &PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => map_pg(e),
        other => StoreError::unavailable(format!("the PostgreSQL connection pool: {other}")),
    }
}

/// Runs `$body` (an expression using `$conn: &mut Conn` and returning `Result<T, Fail>`) on a
/// pooled connection, replaying it from the start after a serialization failure or deadlock.
/// A store answer or any other error ends the loop.
macro_rules! retrying {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let mut pooled = $store.pool.get().await.map_err(|e| map_pool(&e))?;
            let $conn = &mut Conn {
                client: &mut pooled,
                sql: &$store.sql,
            };
            let result: Result<_, Fail> = $body;
            match result {
                Ok(v) => break Ok(v),
                Err(Fail::Store(e)) => break Err(e),
                Err(Fail::Pg(e)) if is_retryable(&e) && attempt < MAX_ATTEMPTS => {
                    drop(pooled);
                    $store.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(attempt, "thread-store PostgreSQL transaction retried");
                    tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 2)).await;
                }
                Err(Fail::Pg(e)) => break Err(map_pg(&e)),
            }
        }
    }};
}

#[async_trait::async_trait]
impl ThreadStore for PostgresStore {
    async fn resolve(&self, query: &Query) -> Result<Option<ThreadRecord>, StoreError> {
        if let Lookup::Key(key) = &query.lookup
            && key.contains('\0')
        {
            // PostgreSQL text cannot hold NUL, so no such key was ever stored.
            return Ok(None);
        }
        let row: Option<StoredRow> = retrying!(self, |conn| async {
            let row = match &query.lookup {
                Lookup::Id(id) => {
                    conn.client
                        .query_opt(&conn.st(|s| &s.by_id).await?, &[&id.as_str()])
                        .await?
                }
                Lookup::Key(key) => {
                    conn.client
                        .query_opt(&conn.st(|s| &s.by_key).await?, &[key])
                        .await?
                }
            };
            Ok(row.map(|r| read_row(&r)).transpose()?)
        }
        .await)?;
        match row {
            Some(row) => {
                let record = row.decode()?;
                Ok(visible(&record, query.include_archived).then_some(record))
            }
            None => Ok(None),
        }
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        query.validate()?;
        let (after_key, after_id) = query.scan_start();
        let end = prefix_successor(&query.prefix);
        let limit = i64::from(query.limit) + 1;
        let rows: Vec<StoredRow> = retrying!(self, |conn| async {
            let page = match end {
                Some(_) => conn.st(|s| &s.page).await?,
                None => conn.st(|s| &s.page_unbounded).await?,
            };
            let rows = conn
                .client
                .query(
                    &page,
                    &[
                        &query.prefix,
                        &after_key,
                        &after_id,
                        &query.include_archived,
                        &limit,
                        &end,
                        &query.namespace,
                    ],
                )
                .await?;
            Ok(rows.iter().map(read_row).collect::<Result<Vec<_>, _>>()?)
        }
        .await)?;
        Ok(ListPage::from_fetched(decode_all(rows)?, query.limit))
    }

    async fn finalize(&self, request: &FinalizeRequest) -> Result<(), StoreError> {
        request.validate()?;
        let row = StoredRow::encode(&request.record)?;
        let key_lock = key_lock_key(&self.schema, &request.record.key);
        retrying!(self, |conn| finalize_once(conn, request, &row, key_lock)
            .await)
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        check_lease_args(target, owner, ttl)?;
        let ttl = ttl_millis(ttl);
        let row = retrying!(self, |conn| async {
            let st = conn.st(|s| &s.acquire).await?;
            Ok(conn.client.query_opt(&st, &[&target, &owner, &ttl]).await?)
        }
        .await)?;
        match row {
            Some(row) => Ok(Lease {
                target: target.to_owned(),
                owner: owner.to_owned(),
                token: token_from_sql(column(&row, 0)?)?,
            }),
            None => Err(StoreError::busy(target)),
        }
    }

    async fn lease_holder(&self, target: &str) -> Result<Option<LeaseHolder>, StoreError> {
        check_lease_target_name("lease target", target)?;
        // Expiry is the server's clock, as when the lease was taken.
        let sql = format!(
            "SELECT owner, (extract(epoch FROM expires_at - now()) * 1000)::int8 \
             FROM {}.leases WHERE target = $1 AND expires_at > now()",
            quote_ident(&self.schema)
        );
        let row = retrying!(self, |conn| {
            conn.client
                .query_opt(sql.as_str(), &[&target])
                .await
                .map_err(Fail::from)
        })?;
        match row {
            Some(row) => {
                let owner: String = column(&row, 0)?;
                let millis: i64 = column(&row, 1)?;
                Ok(Some(LeaseHolder {
                    owner,
                    expires_in: millis_until(millis, 0),
                }))
            }
            None => Ok(None),
        }
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        check_lease_args(&lease.target, &lease.owner, ttl)?;
        let ttl = ttl_millis(ttl);
        let token = token_to_sql(lease.token)?;
        let changed = retrying!(self, |conn| async {
            let st = conn.st(|s| &s.renew).await?;
            Ok(conn
                .client
                .execute(&st, &[&lease.target, &lease.owner, &token, &ttl])
                .await?)
        }
        .await)?;
        if changed == 0 {
            return Err(StoreError::lease_lost(&lease.target));
        }
        Ok(lease.clone())
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let Ok(token) = i64::try_from(lease.token) else {
            return Ok(());
        };
        if lease.target.contains('\0') || lease.owner.contains('\0') {
            return Ok(());
        }
        retrying!(self, |conn| async {
            let st = conn.st(|s| &s.release).await?;
            conn.client
                .execute(&st, &[&lease.target, &lease.owner, &token])
                .await?;
            Ok(())
        }
        .await)
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        if !is_storable_key(key) {
            return Ok(0);
        }
        let key_lock = key_lock_key(&self.schema, key);
        let lock_leases = format!(
            "LOCK TABLE {}.leases IN SHARE MODE",
            quote_ident(&self.schema)
        );
        retrying!(self, |conn| async {
            let key_lock_st = conn.st(|s| &s.key_lock).await?;
            let erase = conn.st(|s| &s.erase).await?;
            let prune_fences = conn.st(|s| &s.prune_fences).await?;
            let delete_bindings = conn.st(|s| &s.delete_bindings).await?;
            let delete_threads = conn.st(|s| &s.delete_threads).await?;
            let tx = conn.client.transaction().await?;
            // In this order (the key, then the leases table): a finalize of this key holds the
            // shared key lock before it touches leases, so the two cannot deadlock.
            tx.execute(&key_lock_st, &[&key_lock]).await?;
            tx.batch_execute(&lock_leases).await?;
            tx.execute(&erase, &[&key]).await?;
            tx.execute(&prune_fences, &[]).await?;
            tx.execute(&delete_bindings, &[&key]).await?;
            let removed = tx.execute(&delete_threads, &[&key]).await?;
            tx.commit().await?;
            Ok(removed)
        }
        .await)
    }
}
