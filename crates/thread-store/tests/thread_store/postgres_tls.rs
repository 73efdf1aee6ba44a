//! TLS: the PostgreSQL store honours `sslmode` against a server whose certificate this test
//! generates.
//!
//! The test makes a CA and a server certificate for the URL's host with rcgen, writes them
//! into the server's data directory (so the server must run on this machine) owned by the
//! server's user with mode 0600, points `ssl_cert_file`/`ssl_key_file` at them with
//! `ALTER SYSTEM` and reloads. It then connects the store in each mode and reads,
//! from a separate plain session, whether the store's own backend is encrypted
//! (`pg_stat_ssl`, found by a unique `application_name`). At the end it puts the three
//! settings back as `postgresql.auto.conf` had them and reloads again; plain connections
//! (every other test) work throughout, since a server with `ssl = on` still accepts them.
//! A session-level advisory lock keeps two runs of this test from reconfiguring the server
//! under each other. It needs a superuser role (ALTER SYSTEM) and a test process that may chown (root).

use std::net::{IpAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use thread_store::StoreError;
use thread_store::postgres::{PostgresConfig, PostgresStore, RootCertificate, SslMode};
use tokio_postgres::Client;
use tokio_postgres::config::Host;

use crate::{PgSchema, postgres_url, runtime};

const CERT_FILE: &str = "thread_store_tls_test.crt";
const KEY_FILE: &str = "thread_store_tls_test.key";
/// The advisory lock that serializes runs of this test (any fixed key).
const LOCK_KEY: i64 = 0x7473_5f74_6c73_0001;
const SETTINGS: [&str; 3] = ["ssl", "ssl_cert_file", "ssl_key_file"];

/// A CA and a server certificate it signed.
struct Pki {
    ca_pem: String,
    leaf_pem: String,
    key_pem: String,
}

fn pki(hosts: Vec<String>) -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "thread-store TLS test CA");
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();

    let key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(hosts).unwrap();
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "thread-store TLS test server");
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = leaf.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        leaf_pem: leaf.pem(),
        key_pem: key.serialize_pem(),
    }
}

async fn plain_client(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Writes `pem` to `path` for the server: owned by the owner of the data directory `dir`
/// (the server's user), mode 0600, as PostgreSQL requires of a key file it owns. The server
/// must be on this machine and the test must be allowed to chown (root in CI).
fn write_server_file(dir: &str, path: &str, pem: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
    let owner = std::fs::metadata(dir).unwrap_or_else(|e| {
        panic!("the TLS test writes into the server's data directory {dir}, which must be on this machine: {e}")
    });
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(pem.as_bytes()).unwrap();
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .unwrap();
    std::os::unix::fs::chown(path, Some(owner.uid()), Some(owner.gid())).unwrap_or_else(|e| {
        panic!("the TLS test must be able to give {path} to the server's user (run as root): {e}")
    });
}

fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// What `postgresql.auto.conf` holds for the three settings (None: not set there).
async fn auto_conf(client: &Client) -> Vec<(String, Option<String>)> {
    let rows = client
        .query(
            "SELECT name, setting FROM pg_file_settings \
             WHERE sourcefile LIKE '%postgresql.auto.conf' AND name = ANY($1) ORDER BY seqno",
            &[&SETTINGS.to_vec()],
        )
        .await
        .unwrap();
    SETTINGS
        .iter()
        .map(|name| {
            let value = rows
                .iter()
                .filter(|row| row.get::<_, String>(0) == *name)
                .map(|row| row.get::<_, String>(1))
                .next_back();
            ((*name).to_owned(), value)
        })
        .collect()
}

async fn apply(client: &Client, settings: &[(String, Option<String>)]) {
    for (name, value) in settings {
        let sql = match value {
            Some(value) => format!("ALTER SYSTEM SET {name} = {}", quote(value)),
            None => format!("ALTER SYSTEM RESET {name}"),
        };
        client.batch_execute(&sql).await.unwrap();
    }
    client
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .unwrap();
}

/// Waits until new sessions see `cert_file` as the server certificate (the postmaster
/// reloads asynchronously, and reloads its TLS context with the settings).
async fn await_reload(url: &str, ssl: &str, cert_file: &str) {
    let start = Instant::now();
    loop {
        let client = plain_client(url).await;
        let row = client
            .query_one(
                "SELECT current_setting('ssl'), current_setting('ssl_cert_file')",
                &[],
            )
            .await
            .unwrap();
        if row.get::<_, String>(0) == ssl && row.get::<_, String>(1) == cert_file {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the server did not reload its TLS settings within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the backend of the session named `app` is encrypted (None: no such session).
async fn encrypted(admin: &Client, app: &str) -> Option<bool> {
    let rows = admin
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    assert!(rows.len() <= 1, "one store connection per application name");
    rows.first().map(|row| row.get(0))
}

/// The test URL with `sslmode` and an `application_name` added.
fn url_with(url: &str, sslmode: Option<&str>, app: &str) -> String {
    let mut params = vec![format!("application_name={app}")];
    if let Some(mode) = sslmode {
        params.push(format!("sslmode={mode}"));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}{}", params.join("&"))
    } else {
        format!("{url} {}", params.join(" "))
    }
}

/// The first host of the test URL and an IP address it resolves to.
fn host_and_ip(pg: &tokio_postgres::Config) -> (String, IpAddr) {
    let Some(Host::Tcp(host)) = pg.get_hosts().first() else {
        panic!("the TLS test needs a TCP host in THREAD_STORE_POSTGRES_URL");
    };
    let ip = pg.get_hostaddrs().first().copied().unwrap_or_else(|| {
        (host.as_str(), 5432)
            .to_socket_addrs()
            .unwrap()
            .next()
            .unwrap()
            .ip()
    });
    (host.clone(), ip)
}

/// Connects a store with `config` named `app` and reports whether its session is encrypted.
async fn connect_and_check(
    admin: &Client,
    config: PostgresConfig,
    app: &str,
) -> Result<bool, StoreError> {
    let store = PostgresStore::connect(config).await?;
    let ssl = encrypted(admin, app)
        .await
        .expect("the store's session is visible in pg_stat_activity");
    drop(store);
    Ok(ssl)
}

/// The checks, on a server that serves the certificate from `pki`.
async fn check_modes(url: String, schema: String, pki: Pki) {
    let admin = plain_client(&url).await;
    let ca = RootCertificate::from_pem(pki.ca_pem.as_bytes()).unwrap();
    assert_eq!(ca.len(), 1);
    let app = |case: &str| format!("ts_tls_{case}_{}", std::process::id());
    let from_url = |mode: Option<&str>, case: &str| {
        PostgresConfig::from_url(&url_with(&url, mode, &app(case)), &schema).unwrap()
    };

    // require: encrypted, the certificate is not checked (libpq's meaning). Before TLS
    // support the store could only connect in the clear, so this connect failed.
    let config = from_url(Some("require"), "require");
    assert_eq!(config.get_ssl_mode(), SslMode::Require);
    assert_eq!(
        connect_and_check(&admin, config, &app("require")).await,
        Ok(true),
        "sslmode=require gives an encrypted session"
    );

    // prefer, explicitly and as the default: encrypted, since the server offers TLS.
    let config = from_url(None, "default");
    assert_eq!(config.get_ssl_mode(), SslMode::Prefer);
    assert_eq!(
        connect_and_check(&admin, config, &app("default")).await,
        Ok(true)
    );
    let config = from_url(Some("prefer"), "prefer");
    assert_eq!(
        connect_and_check(&admin, config, &app("prefer")).await,
        Ok(true)
    );

    // disable: in the clear, on the same server.
    let config = from_url(Some("disable"), "disable");
    assert_eq!(
        connect_and_check(&admin, config, &app("disable")).await,
        Ok(false)
    );

    // verify-full with the generated CA as the only root: encrypted and verified.
    let config = from_url(Some("verify-full"), "verify_full")
        .system_roots(false)
        .root_certificate(ca[0].clone());
    assert_eq!(config.get_ssl_mode(), SslMode::VerifyFull);
    assert_eq!(
        connect_and_check(&admin, config, &app("verify_full")).await,
        Ok(true)
    );

    // verify-full without that CA: the platform roots do not vouch for the test server.
    let config = from_url(Some("verify-full"), "verify_full_unknown_ca");
    let err = connect_and_check(&admin, config, &app("verify_full_unknown_ca"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }), "{err:?}");
    assert!(err.to_string().contains("certificate"), "{err}");

    // A root that did not issue the certificate upgrades require to a chain check, as a
    // root certificate file does in libpq.
    let stranger = pki_stranger();
    let config = from_url(Some("require"), "require_wrong_root")
        .system_roots(false)
        .root_certificate(stranger);
    let err = connect_and_check(&admin, config, &app("require_wrong_root"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }), "{err:?}");

    // Through a name the certificate does not carry (host for TLS, hostaddr for TCP):
    // verify-ca accepts the chain, verify-full refuses the name.
    let parsed: tokio_postgres::Config = url.parse().unwrap();
    let (_, ip) = host_and_ip(&parsed);
    let other_name = |case: &str| {
        let mut pg = tokio_postgres::Config::new();
        pg.host("wrong-name.invalid")
            .hostaddr(ip)
            .port(parsed.get_ports().first().copied().unwrap_or(5432))
            .application_name(app(case));
        if let Some(user) = parsed.get_user() {
            pg.user(user);
        }
        if let Some(password) = parsed.get_password() {
            pg.password(password);
        }
        if let Some(db) = parsed.get_dbname() {
            pg.dbname(db);
        }
        PostgresConfig::new(pg, &schema)
            .unwrap()
            .system_roots(false)
            .root_certificate(ca[0].clone())
    };
    let config = other_name("verify_ca").ssl_mode(SslMode::VerifyCa);
    assert_eq!(
        connect_and_check(&admin, config, &app("verify_ca")).await,
        Ok(true)
    );
    let config = other_name("verify_full_wrong_name").ssl_mode(SslMode::VerifyFull);
    let err = connect_and_check(&admin, config, &app("verify_full_wrong_name"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }), "{err:?}");
}

/// A CA that issued nothing the server presents.
fn pki_stranger() -> RootCertificate {
    let other = pki(vec!["localhost".to_owned()]);
    RootCertificate::from_pem(other.ca_pem.as_bytes())
        .unwrap()
        .remove(0)
}

#[test]
fn postgres_tls_sslmodes_against_a_server_with_a_generated_certificate() {
    let schema = PgSchema::new("tls");
    let url = postgres_url();
    runtime().block_on(async {
        let parsed: tokio_postgres::Config = url.parse().unwrap();
        let (host, ip) = host_and_ip(&parsed);
        let mut names = vec![host, "localhost".to_owned(), ip.to_string()];
        names.sort();
        names.dedup();
        let pki = pki(names);

        let admin = plain_client(&url).await;
        admin
            .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
            .await
            .unwrap();
        let row = admin.query_one("SHOW data_directory", &[]).await.unwrap();
        let dir: String = row.get(0);
        let (cert_path, key_path) = (format!("{dir}/{CERT_FILE}"), format!("{dir}/{KEY_FILE}"));
        write_server_file(&dir, &cert_path, &pki.leaf_pem);
        write_server_file(&dir, &key_path, &pki.key_pem);

        let before = auto_conf(&admin).await;
        let ours: Vec<(String, Option<String>)> = vec![
            ("ssl".to_owned(), Some("on".to_owned())),
            ("ssl_cert_file".to_owned(), Some(cert_path.clone())),
            ("ssl_key_file".to_owned(), Some(key_path)),
        ];
        apply(&admin, &ours).await;
        await_reload(&url, "on", &cert_path).await;

        // Panics in the checks surface after the settings are put back.
        let outcome = tokio::spawn(check_modes(url.clone(), schema.name.clone(), pki)).await;

        apply(&admin, &before).await;
        admin
            .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
            .await
            .unwrap();
        if let Err(e) = outcome {
            std::panic::resume_unwind(e.into_panic());
        }
    });
}

#[test]
fn sslmode_from_the_connection_string() {
    let cases = [
        ("postgresql://u@h/db", SslMode::Prefer),
        ("postgresql://u@h/db?sslmode=disable", SslMode::Disable),
        ("postgresql://u@h/db?sslmode=require", SslMode::Require),
        ("postgresql://u@h/db?sslmode=verify-ca", SslMode::VerifyCa),
        (
            "postgresql://u@h/db?connect_timeout=5&sslmode=verify-full",
            SslMode::VerifyFull,
        ),
        ("host=h user=u sslmode=verify-full", SslMode::VerifyFull),
    ];
    for (url, mode) in cases {
        let config = PostgresConfig::from_url(url, "s").unwrap();
        assert_eq!(config.get_ssl_mode(), mode, "{url}");
    }
    let config = PostgresConfig::from_url("postgresql://u@h/db?sslmode=require", "s")
        .unwrap()
        .ssl_mode(SslMode::Disable);
    assert_eq!(config.get_ssl_mode(), SslMode::Disable);

    let err =
        PostgresConfig::from_url("postgresql://u:hunter2@h/db?sslmode=allow", "s").unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }));
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn a_verifying_mode_with_no_root_at_all_is_refused_before_connecting() {
    let config = PostgresConfig::from_url("postgresql://u@127.0.0.1:1/db?sslmode=verify-full", "s")
        .unwrap()
        .system_roots(false);
    let err = runtime()
        .block_on(PostgresStore::connect(config))
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");

    let config = PostgresConfig::from_url("postgresql://u@127.0.0.1:1/db?sslmode=verify-ca", "s")
        .unwrap()
        .root_certificate(RootCertificate::from_der(b"not a certificate".to_vec()));
    let err = runtime()
        .block_on(PostgresStore::connect(config))
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
}
