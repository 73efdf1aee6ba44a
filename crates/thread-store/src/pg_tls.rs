//! TLS for the PostgreSQL store: libpq's `sslmode` meanings, carried out with rustls (ring).
//!
//! - [`SslMode`] is libpq's `sslmode` minus `allow`. tokio-postgres itself only parses
//!   `disable`, `prefer` and `require`, so [`take_sslmode`] lifts the parameter out of a
//!   connection string before tokio-postgres sees it, and the store maps the verifying modes to
//!   tokio-postgres's `require` (TLS or nothing) with a verifying rustls configuration.
//! - [`connector`] builds the one rustls client configuration a store uses for all its
//!   connections, with the ring provider set explicitly (no process-wide default is needed).

use std::borrow::Cow;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// Whether and how a [`PostgresStore`](crate::postgres::PostgresStore) protects its
/// connections with TLS, with the meanings of libpq's `sslmode`.
///
/// | mode | TLS | server certificate |
/// |---|---|---|
/// | `disable` | never | — |
/// | `prefer` (default) | when the server offers it, else plain | not verified* |
/// | `require` | always, or the connection fails | not verified* |
/// | `verify-ca` | always | chain verified against the trusted roots; host name not checked |
/// | `verify-full` | always | chain verified and the host name must match the certificate |
///
/// \* As in libpq, `prefer` and `require` verify the chain (like `verify-ca`) once root
/// certificates are configured with
/// [`PostgresConfig::root_certificate`](crate::postgres::PostgresConfig::root_certificate):
/// libpq does the same when its root certificate file exists. Without them, `prefer` and
/// `require` encrypt the connection but do not authenticate the server, so they protect
/// against passive eavesdropping only, not against an active man in the middle; use
/// `verify-full` across any network you do not control.
///
/// libpq's `allow` (plain first, TLS only if the server insists) is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it (libpq's default).
    #[default]
    Prefer,
    /// TLS always, without verifying the server certificate (unless roots are configured).
    Require,
    /// TLS always, with the certificate chain verified but not the host name.
    VerifyCa,
    /// TLS always, with the certificate chain and the host name verified.
    VerifyFull,
}

impl SslMode {
    /// Parses a libpq `sslmode` value (`disable`, `prefer`, `require`, `verify-ca`,
    /// `verify-full`). `allow` and unknown values are refused with
    /// [`StoreError::InvalidInput`].
    pub fn parse(value: &str) -> Result<Self, StoreError> {
        match value {
            "disable" => Ok(Self::Disable),
            "prefer" => Ok(Self::Prefer),
            "require" => Ok(Self::Require),
            "verify-ca" => Ok(Self::VerifyCa),
            "verify-full" => Ok(Self::VerifyFull),
            "allow" => Err(StoreError::invalid(
                "sslmode=allow is not supported; use disable, prefer, require, verify-ca or verify-full",
            )),
            _ => Err(StoreError::invalid(
                "sslmode must be one of disable, prefer, require, verify-ca, verify-full",
            )),
        }
    }

    /// The libpq spelling of this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// The tokio-postgres mode that carries this one out: the verifying modes are `require`
    /// with a verifying TLS configuration.
    pub(crate) fn to_pg(self) -> tokio_postgres::config::SslMode {
        match self {
            Self::Disable => tokio_postgres::config::SslMode::Disable,
            Self::Prefer => tokio_postgres::config::SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }

    /// The mode a caller-built tokio-postgres configuration asks for. A mode this build does
    /// not know is taken as `require`, the stricter reading.
    pub(crate) fn from_pg(mode: tokio_postgres::config::SslMode) -> Self {
        match mode {
            tokio_postgres::config::SslMode::Disable => Self::Disable,
            tokio_postgres::config::SslMode::Prefer => Self::Prefer,
            _ => Self::Require,
        }
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A certificate authority the store trusts for the PostgreSQL server's certificate, in
/// addition to (or, with
/// [`PostgresConfig::system_roots(false)`](crate::postgres::PostgresConfig::system_roots),
/// instead of) the platform's roots: what libpq reads from `sslrootcert`.
#[derive(Clone, PartialEq, Eq)]
pub struct RootCertificate(CertificateDer<'static>);

impl RootCertificate {
    /// A root from its DER encoding. It is checked when the store connects: one that does not
    /// parse as an X.509 certificate fails
    /// [`PostgresStore::connect`](crate::postgres::PostgresStore::connect) with
    /// [`StoreError::InvalidInput`].
    pub fn from_der(der: impl Into<Vec<u8>>) -> Self {
        Self(CertificateDer::from(der.into()))
    }

    /// Every `CERTIFICATE` block of a PEM file (other blocks are ignored). Text that holds no
    /// certificate, or a damaged block, is [`StoreError::InvalidInput`].
    pub fn from_pem(pem: &[u8]) -> Result<Vec<Self>, StoreError> {
        let roots = CertificateDer::pem_slice_iter(pem)
            .map(|cert| cert.map(Self))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| StoreError::invalid("a root certificate PEM block does not decode"))?;
        if roots.is_empty() {
            return Err(StoreError::invalid(
                "the root certificate PEM text holds no CERTIFICATE block",
            ));
        }
        Ok(roots)
    }

    /// The DER encoding.
    pub fn as_der(&self) -> &[u8] {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for RootCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootCertificate")
            .field("der_len", &self.0.len())
            .finish()
    }
}

/// The TLS part of a [`PostgresConfig`](crate::postgres::PostgresConfig).
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsSettings {
    pub(crate) mode: SslMode,
    pub(crate) roots: Vec<RootCertificate>,
    pub(crate) no_system_roots: bool,
}

/// How a connection is made: plain, or through one shared rustls configuration.
#[derive(Clone)]
pub(crate) enum Connector {
    Plain,
    Rustls(MakeRustlsConnect),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain => "Plain",
            Self::Rustls(_) => "Rustls",
        })
    }
}

/// Builds the connector for `settings`. Loading the platform roots happens here, once per
/// store, and only for a mode that verifies.
pub(crate) fn connector(settings: &TlsSettings) -> Result<Connector, StoreError> {
    let verify = match settings.mode {
        SslMode::Disable => return Ok(Connector::Plain),
        SslMode::Prefer | SslMode::Require if settings.roots.is_empty() => Verify::Nothing,
        SslMode::Prefer | SslMode::Require | SslMode::VerifyCa => Verify::Chain,
        SslMode::VerifyFull => Verify::ChainAndName,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match verify {
        Verify::Nothing => Arc::new(NoVerification(Arc::clone(&provider))),
        Verify::Chain | Verify::ChainAndName => {
            let roots = trust_anchors(settings)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .map_err(|_| {
                        StoreError::invalid("the TLS certificate verifier cannot be built")
                    })?;
            if verify == Verify::Chain {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| StoreError::invalid("the TLS protocol versions cannot be configured"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Connector::Rustls(MakeRustlsConnect::new(config)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    Nothing,
    Chain,
    ChainAndName,
}

/// The configured roots, plus the platform's unless they were turned off.
fn trust_anchors(settings: &TlsSettings) -> Result<RootCertStore, StoreError> {
    let mut store = RootCertStore::empty();
    for root in &settings.roots {
        store.add(root.0.clone()).map_err(|_| {
            StoreError::invalid("a configured root certificate is not a usable X.509 trust anchor")
        })?;
    }
    if !settings.no_system_roots {
        // Unreadable platform certificates are skipped; only an empty result matters.
        let native = rustls_native_certs::load_native_certs();
        store.add_parsable_certificates(native.certs);
    }
    if store.is_empty() {
        return Err(StoreError::invalid(format!(
            "sslmode={} needs a trusted root certificate, and none is configured or found on \
             the platform",
            settings.mode
        )));
    }
    Ok(store)
}

/// `prefer`/`require` without roots: any certificate is accepted, but the handshake
/// signatures are still checked, so the session keys belong to whoever holds that
/// certificate's key.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the full webpki verification, except that a certificate issued for another
/// host name is accepted. webpki checks the chain (and validity, key usage) before the name,
/// so a name error means the chain itself verified.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Lifts every `sslmode` parameter out of a connection string (URL or key-value form, read
/// the way tokio-postgres reads them) and returns the rest with the last mode given. A string
/// this reader cannot follow is returned unchanged, for tokio-postgres to report.
pub(crate) fn take_sslmode(s: &str) -> Result<(Cow<'_, str>, Option<SslMode>), StoreError> {
    for prefix in ["postgres://", "postgresql://"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            return take_from_url(s, s.len() - rest.len());
        }
    }
    take_from_key_value(s)
}

fn take_from_url(s: &str, start: usize) -> Result<(Cow<'_, str>, Option<SslMode>), StoreError> {
    // tokio-postgres: credentials end at the first '@', the query starts at the next '?'.
    let after_credentials = s[start..].find('@').map_or(start, |at| start + at + 1);
    let Some(question) = s[after_credentials..].find('?') else {
        return Ok((Cow::Borrowed(s), None));
    };
    let query_start = after_credentials + question + 1;
    let mut rest = &s[query_start..];
    let mut kept: Vec<&str> = Vec::new();
    let mut mode = None;
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else {
            return Ok((Cow::Borrowed(s), None));
        };
        let end = rest[eq + 1..]
            .find('&')
            .map_or(rest.len(), |amp| eq + 1 + amp);
        let (key, value) = (&rest[..eq], &rest[eq + 1..end]);
        if percent_decode(key).as_deref() == Some("sslmode") {
            let value = percent_decode(value)
                .ok_or_else(|| StoreError::invalid("the sslmode value does not decode"))?;
            mode = Some(SslMode::parse(&value)?);
        } else {
            kept.push(&rest[..end]);
        }
        rest = rest.get(end + 1..).unwrap_or("");
    }
    if mode.is_none() {
        return Ok((Cow::Borrowed(s), None));
    }
    let mut out = s[..query_start].to_owned();
    out.push_str(&kept.join("&"));
    Ok((Cow::Owned(out), mode))
}

/// Percent-decodes a URL component into UTF-8; `None` when it is not valid UTF-8 afterwards.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(0));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn take_from_key_value(s: &str) -> Result<(Cow<'_, str>, Option<SslMode>), StoreError> {
    let mut it = s.char_indices().peekable();
    let mut mode = None;
    let mut cut: Vec<(usize, usize)> = Vec::new();
    loop {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(key_start, _)) = it.peek() else {
            break;
        };
        let mut key_end = key_start;
        while let Some((i, c)) = it.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key_end = i + c.len_utf8();
        }
        let key = &s[key_start..key_end];
        if key.is_empty() {
            return Ok((Cow::Borrowed(s), None));
        }
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if it.next_if(|(_, c)| *c == '=').is_none() {
            return Ok((Cow::Borrowed(s), None));
        }
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        let value_end;
        if it.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match it.next() {
                    Some((i, '\'')) => {
                        value_end = i + 1;
                        break;
                    }
                    Some((_, '\\')) => {
                        if let Some((_, c)) = it.next() {
                            value.push(c);
                        }
                    }
                    Some((_, c)) => value.push(c),
                    None => return Ok((Cow::Borrowed(s), None)),
                }
            }
        } else {
            let mut end = None;
            while let Some((i, c)) = it.next_if(|(_, c)| !c.is_whitespace()) {
                end = Some(i + c.len_utf8());
                if c == '\\' {
                    if let Some((j, c2)) = it.next() {
                        value.push(c2);
                        end = Some(j + c2.len_utf8());
                    }
                } else {
                    value.push(c);
                }
            }
            match end {
                Some(end) if !value.is_empty() => value_end = end,
                _ => return Ok((Cow::Borrowed(s), None)),
            }
        }
        if key == "sslmode" {
            mode = Some(SslMode::parse(&value)?);
            cut.push((key_start, value_end));
        }
    }
    if cut.is_empty() {
        return Ok((Cow::Borrowed(s), None));
    }
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    for (start, end) in cut {
        out.push_str(&s[from..start]);
        out.push(' ');
        from = end;
    }
    out.push_str(&s[from..]);
    Ok((Cow::Owned(out), mode))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn take(s: &str) -> (String, Option<SslMode>) {
        let (rest, mode) = take_sslmode(s).unwrap();
        (rest.into_owned(), mode)
    }

    #[test]
    fn urls_lose_only_their_sslmode() {
        assert_eq!(
            take("postgresql://u:p@h:5432/db?sslmode=verify-full"),
            (
                "postgresql://u:p@h:5432/db?".to_owned(),
                Some(SslMode::VerifyFull)
            )
        );
        assert_eq!(
            take("postgres://h/db?application_name=x&sslmode=verify-ca&connect_timeout=3"),
            (
                "postgres://h/db?application_name=x&connect_timeout=3".to_owned(),
                Some(SslMode::VerifyCa)
            )
        );
        assert_eq!(
            take("postgresql://h/db?ssl%6Dode=require&sslmode=disable"),
            ("postgresql://h/db?".to_owned(), Some(SslMode::Disable))
        );
        // A '?' in the password is part of the credentials, as tokio-postgres reads it.
        assert_eq!(
            take("postgresql://u:a?b@h/db"),
            ("postgresql://u:a?b@h/db".to_owned(), None)
        );
        assert_eq!(
            take("postgresql://h/db"),
            ("postgresql://h/db".to_owned(), None)
        );
    }

    #[test]
    fn key_value_strings_lose_only_their_sslmode() {
        assert_eq!(
            take("host=h sslmode = 'verify-full' dbname=d"),
            ("host=h   dbname=d".to_owned(), Some(SslMode::VerifyFull))
        );
        assert_eq!(
            take("sslmode=require password='a b\\' sslmode=x'"),
            (
                "  password='a b\\' sslmode=x'".to_owned(),
                Some(SslMode::Require)
            )
        );
        assert_eq!(take("host=h dbname"), ("host=h dbname".to_owned(), None));
    }

    #[test]
    fn unknown_modes_are_refused_without_echoing_the_string() {
        for s in [
            "postgresql://u:secret@h/db?sslmode=allow",
            "postgresql://u:secret@h/db?sslmode=secret",
            "host=h password=secret sslmode=secret",
        ] {
            let err = take_sslmode(s).unwrap_err();
            assert!(matches!(err, StoreError::InvalidInput { .. }));
            assert!(!err.to_string().contains("secret"), "{err}");
        }
    }

    #[test]
    fn pem_roots_decode_and_empty_text_is_refused() {
        assert!(RootCertificate::from_pem(b"no certificate here").is_err());
        let garbled = b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        assert!(RootCertificate::from_pem(garbled).is_err());
    }
}
