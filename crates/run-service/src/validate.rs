//! Validation of one effective run's attachments, before anything launches.

use std::collections::BTreeMap;
use std::fmt;

use compat_fingerprint::ShortDigest;

use crate::{EnvBinding, McpServer, McpTransport, RunAttachment, ServiceRef};

/// The documented size limits, in bytes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Limits;

impl Limits {
    /// Longest compatibility id.
    pub const COMPATIBILITY_ID: usize = 128;
    /// Longest compatibility fingerprint.
    pub const COMPATIBILITY_FINGERPRINT: usize = 256;
    /// Longest service id, service name or MCP server key.
    pub const IDENTIFIER: usize = 128;
    /// Longest environment variable name.
    pub const ENV_NAME: usize = 128;
    /// Longest URL, command, argument, working directory, reuse key, header or metadata entry.
    pub const TEXT: usize = 4096;
}

/// Which field failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// [`RunServiceCompatibility::id`](crate::RunServiceCompatibility::id).
    CompatibilityId,
    /// [`RunServiceCompatibility::fingerprint`](crate::RunServiceCompatibility::fingerprint).
    CompatibilityFingerprint,
    /// [`ServiceRef::id`].
    ServiceId,
    /// [`ServiceRef::name`].
    ServiceName,
    /// A URL (service or MCP).
    Url,
    /// A command or one of its arguments (service or stdio MCP).
    Command,
    /// [`ServiceRef::cwd`].
    Cwd,
    /// [`ServiceRef::reuse_key`].
    ReuseKey,
    /// A metadata key or value.
    Metadata,
    /// A secret env binding name.
    SecretEnvName,
    /// A stdio MCP environment variable name or value.
    McpEnv,
    /// An MCP server key.
    McpKey,
    /// An MCP HTTP header name or value.
    McpHeader,
    /// An MCP bearer-token env-var name.
    BearerTokenEnvVar,
    /// The env-var name of an MCP secret header (its header name is [`Field::McpHeader`]).
    HeaderEnvVar,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CompatibilityId => "compatibility id",
            Self::CompatibilityFingerprint => "compatibility fingerprint",
            Self::ServiceId => "service id",
            Self::ServiceName => "service name",
            Self::Url => "url",
            Self::Command => "command",
            Self::Cwd => "cwd",
            Self::ReuseKey => "reuse key",
            Self::Metadata => "metadata",
            Self::SecretEnvName => "secret env name",
            Self::McpEnv => "mcp env",
            Self::McpKey => "mcp server key",
            Self::McpHeader => "mcp header",
            Self::BearerTokenEnvVar => "bearer-token env var",
            Self::HeaderEnvVar => "secret-header env var",
        })
    }
}

/// Why a field failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The value is empty.
    Empty,
    /// The value is only whitespace.
    WhitespaceOnly,
    /// The value is longer than its [`Limits`] entry.
    TooLong,
    /// The value contains a control character (including NUL).
    ControlCharacter,
    /// A compatibility tuple lacks this part (both `id` and `fingerprint` are required).
    MissingPart,
    /// A compatibility part starts or ends with whitespace (` com.example.ui` and
    /// `com.example.ui` would be different identities that look the same).
    SurroundingWhitespace,
    /// Two attachments of one run claim the same compatibility id.
    DuplicateCompatibilityId,
    /// Two services of one run share an id.
    DuplicateServiceId,
    /// Not a valid environment variable name (`[A-Za-z_][A-Za-z0-9_]*`).
    InvalidEnvName,
    /// The same secret env name is bound twice in one run.
    DuplicateSecretEnv,
    /// Two MCP servers of one run share a key.
    DuplicateMcpKey,
    /// A credential-carrying header (`Authorization`, `Proxy-Authorization`, `Cookie`,
    /// `X-Api-Key`, `Api-Key`, `X-Auth-Token`, `Private-Token`, …) was given inline; name a
    /// bearer-token env var or make it a secret header
    /// ([`McpServer::with_secret_header`]) instead.
    CredentialInHeader,
    /// A URL carries a credential: userinfo (`https://user:pw@host`) or a credential query
    /// parameter (`?token=`, `?access_token=`, `?api_key=`, `?key=`, `?sig=`, …).
    CredentialInUrl,
    /// A command argument carries a credential (`--token x`, `--api-key=x`, `--password x`,
    /// …); pass it through a secret env binding instead.
    CredentialInArgument,
    /// A plain (non-secret) env value, header value or metadata entry is named like a
    /// credential (`*_TOKEN`, `*_API_KEY`, `*_SECRET`, `*_PASSWORD`, `auth`, …) or shaped
    /// like one (a bearer credential, a key such as `sk-…` or `ghp_…`, a JWT, a URL password:
    /// the patterns of `redaction::redact`); use a secret env binding.
    CredentialInPlainValue,
    /// An MCP server's bearer-token variable is not bound by the same attachment (for a
    /// provider's server) or by the host for that server (for a host-declared one). Without
    /// this rule a server could name the runtime's own credential (`OPENAI_API_KEY`) and
    /// receive the model key.
    UnboundBearerVar,
    /// Not a valid HTTP header name (an RFC 9110 token: ASCII letters, digits and
    /// ``!#$%&'*+-.^_`|~``).
    InvalidHeaderName,
    /// A header is given twice for one MCP server: plain and secret, twice as a secret in
    /// different case, or as a secret `Authorization` beside a bearer-token variable (which
    /// is an `Authorization` header too). Header names compare case-insensitively.
    DuplicateHeader,
    /// An MCP server's secret-header variable is not bound by the same attachment (for a
    /// provider's server) or by the host for that server (for a host-declared one): the rule
    /// of [`Reason::UnboundBearerVar`], for the same reason.
    UnboundHeaderVar,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "is empty",
            Self::WhitespaceOnly => "is whitespace only",
            Self::TooLong => "is too long",
            Self::ControlCharacter => "contains a control character",
            Self::MissingPart => "is missing (a compatibility tuple needs both id and fingerprint)",
            Self::SurroundingWhitespace => "starts or ends with whitespace",
            Self::DuplicateCompatibilityId => "is claimed by two attachments of one run",
            Self::DuplicateServiceId => "is used by two services of one run",
            Self::InvalidEnvName => "is not a valid environment variable name",
            Self::DuplicateSecretEnv => "is bound twice in one run",
            Self::DuplicateMcpKey => "is declared by two MCP servers of one run",
            Self::CredentialInHeader => {
                "carries a credential inline; use a bearer-token env var or a secret header"
            }
            Self::CredentialInUrl => {
                "carries a credential (userinfo or a credential query parameter)"
            }
            Self::CredentialInArgument => {
                "passes a credential as an argument; use a secret env binding"
            }
            Self::CredentialInPlainValue => {
                "is named or shaped like a credential but given as a plain value; use a secret env binding"
            }
            Self::UnboundBearerVar => {
                "names a bearer-token variable its own attachment (or the host, for a host server) does not bind"
            }
            Self::InvalidHeaderName => "is not a valid HTTP header name",
            Self::DuplicateHeader => {
                "is given twice for one MCP server (plain and secret, or beside the bearer token)"
            }
            Self::UnboundHeaderVar => {
                "names a secret-header variable its own attachment (or the host, for a host server) does not bind"
            }
        })
    }
}

/// Where in the run a failing field sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Location {
    Attachment { attachment: usize },
    Service { attachment: usize, service: usize },
    HostMcp { server: usize },
}

impl Location {
    /// Position in run order: attachments and their services first, host servers last.
    fn order(&self) -> (usize, usize, usize) {
        match *self {
            Self::Attachment { attachment } => (0, attachment, 0),
            Self::Service {
                attachment,
                service,
            } => (0, attachment, service + 1),
            Self::HostMcp { server } => (1, server, 0),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Attachment { attachment } => write!(f, "attachment {attachment}"),
            Self::Service {
                attachment,
                service,
            } => write!(f, "attachment {attachment}, service {service}"),
            Self::HostMcp { server } => write!(f, "host MCP server {server}"),
        }
    }
}

/// A run's attachments are invalid. Nothing was launched.
///
/// The message names the position, the field, the reason, the value's length and, unless
/// the value may be a credential, a short digest of it: it never reproduces the value, which
/// may be a secret or a provider string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {field} {reason} ({len} bytes{})", digest.map(|d| format!(", digest {d}")).unwrap_or_default())]
pub struct ValidationError {
    location: Location,
    field: Field,
    reason: Reason,
    len: usize,
    digest: Option<ShortDigest>,
}

impl ValidationError {
    fn new(location: Location, field: Field, reason: Reason, value: &str) -> Self {
        // A digest under a public context lets anyone test guesses of the value offline: for
        // a value that may be a credential (a 48-bit digest of a token is close to the token
        // itself), none is given.
        let credential = matches!(
            reason,
            Reason::CredentialInHeader
                | Reason::CredentialInUrl
                | Reason::CredentialInArgument
                | Reason::CredentialInPlainValue
        );
        let digest = (!credential).then(|| ShortDigest::of_str(value));
        Self {
            location,
            field,
            reason,
            len: value.len(),
            digest,
        }
    }

    /// The field that failed.
    pub fn field(&self) -> Field {
        self.field
    }

    /// Why it failed.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The length in bytes of the offending value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the offending value was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A short digest of the offending value, to correlate without revealing it; `None` when
    /// the value may be a credential.
    pub fn digest(&self) -> Option<ShortDigest> {
        self.digest
    }

    /// The index of the attachment, if the field belongs to one.
    pub fn attachment(&self) -> Option<usize> {
        match self.location {
            Location::Attachment { attachment } | Location::Service { attachment, .. } => {
                Some(attachment)
            }
            Location::HostMcp { .. } => None,
        }
    }
}

fn check_text(
    at: Location,
    field: Field,
    value: &str,
    max: usize,
    required: bool,
) -> Result<(), ValidationError> {
    let fail = |reason| Err(ValidationError::new(at, field, reason, value));
    if value.is_empty() {
        return if required {
            fail(Reason::Empty)
        } else {
            Ok(())
        };
    }
    if value.len() > max {
        return fail(Reason::TooLong);
    }
    if has_control(value) {
        return fail(Reason::ControlCharacter);
    }
    if required && value.starts_with(char::is_whitespace) && value.trim().is_empty() {
        return fail(Reason::WhitespaceOnly);
    }
    Ok(())
}

/// Whether `value` has a control character (`char::is_control`). Scans eight bytes at a time
/// for any byte below 0x20, equal to 0x7f, or non-ASCII, and decodes chars only then (C1
/// controls are two UTF-8 bytes).
fn has_control(value: &str) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let bytes = value.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    let mut suspicious = false;
    for chunk in &mut chunks {
        // chunks_exact yields 8-byte slices; a failed conversion would only mean "look closer".
        let w = <[u8; 8]>::try_from(chunk).map_or(HI, u64::from_le_bytes);
        let below_space = w.wrapping_sub(LO * 0x20) & !w & HI;
        let x = w ^ (LO * 0x7f);
        let del = x.wrapping_sub(LO) & !x & HI;
        suspicious |= (below_space | del | (w & HI)) != 0;
    }
    suspicious |= chunks
        .remainder()
        .iter()
        .any(|&b| !(0x20..0x7f).contains(&b));
    suspicious && value.chars().any(char::is_control)
}

fn check_env_name(at: Location, field: Field, name: &str) -> Result<(), ValidationError> {
    let mut bytes = name.bytes();
    let valid = name.len() <= Limits::ENV_NAME
        && bytes
            .next()
            .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric());
    if valid {
        Ok(())
    } else {
        Err(ValidationError::new(
            at,
            field,
            Reason::InvalidEnvName,
            name,
        ))
    }
}

const CREDENTIAL_HEADERS: [&str; 11] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "private-token",
    "x-access-token",
    "x-goog-api-key",
    "x-amz-security-token",
    "authentication",
];

/// Query parameters that carry credentials, lower case.
const CREDENTIAL_QUERY_KEYS: [&str; 13] = [
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "api_key",
    "apikey",
    "api-key",
    "key",
    "sig",
    "signature",
    "password",
    "secret",
    "client_secret",
];

/// Argument flags that carry credentials, lower case and without leading dashes.
const CREDENTIAL_FLAGS: [&str; 10] = [
    "token",
    "api-key",
    "apikey",
    "api_key",
    "password",
    "passwd",
    "secret",
    "access-token",
    "auth-token",
    "client-secret",
];

/// Name suffixes of credential variables (as runtime-env's child environment treats them).
const CREDENTIAL_SUFFIXES: [&str; 7] = [
    "_TOKEN",
    "_API_KEY",
    "_APIKEY",
    "_SECRET",
    "_PASSWORD",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
];

fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    CREDENTIAL_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || upper.ends_with("_AUTH")
        || matches!(
            upper.as_str(),
            "TOKEN"
                | "API_KEY"
                | "APIKEY"
                | "SECRET"
                | "PASSWORD"
                | "AUTH"
                | "AUTHORIZATION"
                | "CREDENTIAL"
                | "CREDENTIALS"
                | "COOKIE"
                | "PASSWD"
                | "PASSPHRASE"
        )
}

/// Whether a URL carries userinfo or a credential query parameter.
fn url_carries_credential(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    if authority.contains('@') {
        return true;
    }
    let Some((_, query)) = url.split_once('?') else {
        return false;
    };
    let query = query.split('#').next().unwrap_or_default();
    query.split('&').any(|pair| {
        let key = pair
            .split('=')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        CREDENTIAL_QUERY_KEYS.contains(&key.as_str())
    })
}

/// Whether argument `i` of `args` is a credential flag with its value (`--token=x`, or
/// `--token` followed by a value).
fn argument_carries_credential(args: &[String], i: usize) -> bool {
    let Some(flag) = args[i]
        .strip_prefix("--")
        .or_else(|| args[i].strip_prefix('-'))
    else {
        return false;
    };
    let (name, inline) = match flag.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (flag, None),
    };
    let name = name.to_ascii_lowercase();
    if !CREDENTIAL_FLAGS.contains(&name.as_str()) {
        return false;
    }
    inline.is_some_and(|v| !v.is_empty()) || args.get(i + 1).is_some_and(|v| !v.starts_with('-'))
}

fn check_url(at: Location, url: &str) -> Result<(), ValidationError> {
    check_text(at, Field::Url, url, Limits::TEXT, true)?;
    if url_carries_credential(url) {
        return Err(ValidationError::new(
            at,
            Field::Url,
            Reason::CredentialInUrl,
            url,
        ));
    }
    Ok(())
}

fn check_args(at: Location, args: &[String]) -> Result<(), ValidationError> {
    for (i, arg) in args.iter().enumerate() {
        check_text(at, Field::Command, arg, Limits::TEXT, false)?;
        if argument_carries_credential(args, i) {
            return Err(ValidationError::new(
                at,
                Field::Command,
                Reason::CredentialInArgument,
                arg,
            ));
        }
    }
    Ok(())
}

/// Validates every attachment of one effective run plus the host's own MCP servers, before
/// anything launches.
///
/// Checks, in order: compatibility tuples (both parts present, not whitespace-only, within
/// [`Limits`], no control characters, ids unique across the run); service ids (non-empty,
/// unique across the run) and every text field (within limits, no control characters); secret
/// env names (valid, unique across the run); MCP declarations (keys unique across attachments
/// and host servers, valid env-var names, no inline credential headers, secret headers with
/// valid names and none given twice); and that a provider's server takes its bearer and
/// secret-header variables only from its own attachment's bindings.
pub fn validate_run(
    attachments: &[RunAttachment],
    host_mcp: &[McpServer],
) -> Result<(), ValidationError> {
    // Uniqueness is checked after the per-field checks, by sorting: cheaper than hashing for
    // the few dozen names a run has, and the reported duplicate is still the later one.
    let mut compat_ids = Vec::new();
    let mut service_ids = Vec::new();
    let mut secret_names = Vec::new();
    let mut mcp_keys = Vec::new();
    for (a, attachment) in attachments.iter().enumerate() {
        let at = Location::Attachment { attachment: a };
        if let Some(compat) = &attachment.resume_compatibility {
            for (field, value, max) in [
                (Field::CompatibilityId, &compat.id, Limits::COMPATIBILITY_ID),
                (
                    Field::CompatibilityFingerprint,
                    &compat.fingerprint,
                    Limits::COMPATIBILITY_FINGERPRINT,
                ),
            ] {
                if value.is_empty() {
                    return Err(ValidationError::new(at, field, Reason::MissingPart, value));
                }
                check_text(at, field, value, max, true)?;
                if value.trim() != value.as_str() {
                    return Err(ValidationError::new(
                        at,
                        field,
                        Reason::SurroundingWhitespace,
                        value,
                    ));
                }
            }
            compat_ids.push((compat.id.as_str(), at));
        }
        let bound: Vec<&str> = attachment
            .services
            .iter()
            .flat_map(|s| s.secret_env.iter().map(EnvBinding::name))
            .collect();
        for (s, service) in attachment.services.iter().enumerate() {
            let at = Location::Service {
                attachment: a,
                service: s,
            };
            check_service(at, service)?;
            service_ids.push((service.id.as_str(), at));
            for binding in &service.secret_env {
                check_env_name(at, Field::SecretEnvName, binding.name())?;
                secret_names.push((binding.name(), at));
            }
            if let Some(mcp) = &service.mcp {
                check_mcp(at, mcp)?;
                check_vars_bound(at, mcp, &bound)?;
                mcp_keys.push((mcp.name.as_str(), at));
            }
        }
    }
    for (m, mcp) in host_mcp.iter().enumerate() {
        let at = Location::HostMcp { server: m };
        check_mcp(at, mcp)?;
        mcp_keys.push((mcp.name.as_str(), at));
    }
    for (names, field, reason) in [
        (
            &mut compat_ids,
            Field::CompatibilityId,
            Reason::DuplicateCompatibilityId,
        ),
        (
            &mut service_ids,
            Field::ServiceId,
            Reason::DuplicateServiceId,
        ),
        (
            &mut secret_names,
            Field::SecretEnvName,
            Reason::DuplicateSecretEnv,
        ),
        (&mut mcp_keys, Field::McpKey, Reason::DuplicateMcpKey),
    ] {
        if let Some((name, at)) = first_duplicate(names) {
            return Err(ValidationError::new(at, field, reason, name));
        }
    }
    Ok(())
}

/// Checks that every host-declared MCP server's bearer-token variable and secret-header
/// variables are ones the host bound for it (`bound`: the names of the host's own secret
/// bindings). A provider's servers are held to the same rule by [`validate_run`], against
/// their attachment's bindings.
///
/// ```
/// use run_service::{McpServer, Reason, check_host_bearers};
///
/// let docs = McpServer::streamable_http("docs", "http://127.0.0.1:9/mcp")
///     .with_bearer_token_env("DOCS_TOKEN");
/// assert!(check_host_bearers(std::slice::from_ref(&docs), &["DOCS_TOKEN"]).is_ok());
/// let err = check_host_bearers(&[docs], &[]).unwrap_err();
/// assert_eq!(err.reason(), Reason::UnboundBearerVar);
/// ```
///
/// # Errors
/// [`Reason::UnboundBearerVar`] or [`Reason::UnboundHeaderVar`] for the first server whose
/// variable is not bound.
pub fn check_host_bearers(host_mcp: &[McpServer], bound: &[&str]) -> Result<(), ValidationError> {
    for (m, mcp) in host_mcp.iter().enumerate() {
        check_vars_bound(Location::HostMcp { server: m }, mcp, bound)?;
    }
    Ok(())
}

/// Checks that an HTTP server's bearer-token and secret-header variables are all in `bound`.
fn check_vars_bound(at: Location, mcp: &McpServer, bound: &[&str]) -> Result<(), ValidationError> {
    let (bearer, env_headers) = match &mcp.transport {
        McpTransport::StreamableHttp {
            bearer_token_env_var,
            env_headers,
            ..
        }
        | McpTransport::Sse {
            bearer_token_env_var,
            env_headers,
            ..
        } => (bearer_token_env_var, env_headers),
        _ => return Ok(()),
    };
    let bearer = bearer
        .iter()
        .map(|var| (var, Field::BearerTokenEnvVar, Reason::UnboundBearerVar));
    let headers = env_headers
        .values()
        .map(|var| (var, Field::HeaderEnvVar, Reason::UnboundHeaderVar));
    for (var, field, reason) in bearer.chain(headers) {
        if !bound.contains(&var.as_str()) {
            return Err(ValidationError::new(at, field, reason, var));
        }
    }
    Ok(())
}

/// Whether a plain value is shaped like a credential: the redactor's token patterns (a
/// bearer credential, `sk-…`, `ghp_…`, a JWT, a URL password, `token=…`) change it.
fn shaped_like_credential(value: &str) -> bool {
    matches!(redaction::redact(value), std::borrow::Cow::Owned(_))
}

/// The earliest-positioned repeat of a name: equal names sort by their position in the run.
fn first_duplicate<'a>(names: &mut [(&'a str, Location)]) -> Option<(&'a str, Location)> {
    names.sort_unstable_by(|x, y| x.0.cmp(y.0).then_with(|| x.1.order().cmp(&y.1.order())));
    names
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1])
        .min_by_key(|(_, at)| at.order())
}

fn check_service(at: Location, s: &ServiceRef) -> Result<(), ValidationError> {
    check_text(at, Field::ServiceId, &s.id, Limits::IDENTIFIER, true)?;
    check_text(at, Field::ServiceName, &s.name, Limits::IDENTIFIER, false)?;
    if let Some(url) = &s.url {
        check_url(at, url)?;
    }
    for (field, value) in [
        (Field::Command, &s.command),
        (Field::Cwd, &s.cwd),
        (Field::ReuseKey, &s.reuse_key),
    ] {
        if let Some(v) = value {
            check_text(at, field, v, Limits::TEXT, true)?;
        }
    }
    check_args(at, &s.args)?;
    for (k, v) in &s.metadata {
        check_text(at, Field::Metadata, k, Limits::IDENTIFIER, true)?;
        check_text(at, Field::Metadata, v, Limits::TEXT, false)?;
        if (is_credential_name(k) && !v.is_empty()) || shaped_like_credential(v) {
            return Err(ValidationError::new(
                at,
                Field::Metadata,
                Reason::CredentialInPlainValue,
                v,
            ));
        }
    }
    Ok(())
}

fn check_mcp(at: Location, mcp: &McpServer) -> Result<(), ValidationError> {
    check_text(at, Field::McpKey, &mcp.name, Limits::IDENTIFIER, true)?;
    match &mcp.transport {
        McpTransport::Stdio { command, args, env } => {
            check_text(at, Field::Command, command, Limits::TEXT, true)?;
            check_args(at, args)?;
            for (name, value) in env {
                check_env_name(at, Field::McpEnv, name)?;
                check_text(at, Field::McpEnv, value, Limits::TEXT, false)?;
                if (is_credential_name(name) && !value.is_empty()) || shaped_like_credential(value)
                {
                    return Err(ValidationError::new(
                        at,
                        Field::McpEnv,
                        Reason::CredentialInPlainValue,
                        value,
                    ));
                }
            }
        }
        McpTransport::StreamableHttp {
            url,
            headers,
            bearer_token_env_var,
            env_headers,
        }
        | McpTransport::Sse {
            url,
            headers,
            bearer_token_env_var,
            env_headers,
        } => {
            check_url(at, url)?;
            for (name, value) in headers {
                check_text(at, Field::McpHeader, name, Limits::IDENTIFIER, true)?;
                if CREDENTIAL_HEADERS
                    .iter()
                    .any(|h| name.eq_ignore_ascii_case(h))
                {
                    return Err(ValidationError::new(
                        at,
                        Field::McpHeader,
                        Reason::CredentialInHeader,
                        value,
                    ));
                }
                check_text(at, Field::McpHeader, value, Limits::TEXT, false)?;
                if shaped_like_credential(value) {
                    return Err(ValidationError::new(
                        at,
                        Field::McpHeader,
                        Reason::CredentialInPlainValue,
                        value,
                    ));
                }
            }
            if let Some(var) = bearer_token_env_var {
                check_env_name(at, Field::BearerTokenEnvVar, var)?;
            }
            check_secret_headers(at, headers, bearer_token_env_var.is_some(), env_headers)?;
        }
    }
    Ok(())
}

/// The secret headers of an HTTP server: valid header and variable names, and no header
/// given twice (plain and secret, twice in different case, or a secret `Authorization`
/// beside the bearer).
fn check_secret_headers(
    at: Location,
    plain: &BTreeMap<String, String>,
    bearer: bool,
    env_headers: &BTreeMap<String, String>,
) -> Result<(), ValidationError> {
    let mut seen: Vec<String> = Vec::with_capacity(env_headers.len());
    for (name, var) in env_headers {
        check_text(at, Field::McpHeader, name, Limits::IDENTIFIER, true)?;
        if !is_header_name(name) {
            return Err(ValidationError::new(
                at,
                Field::McpHeader,
                Reason::InvalidHeaderName,
                name,
            ));
        }
        check_env_name(at, Field::HeaderEnvVar, var)?;
        let lower = name.to_ascii_lowercase();
        let twice = plain.keys().any(|h| h.eq_ignore_ascii_case(name))
            || (bearer && lower == "authorization")
            || seen.contains(&lower);
        if twice {
            return Err(ValidationError::new(
                at,
                Field::McpHeader,
                Reason::DuplicateHeader,
                name,
            ));
        }
        seen.push(lower);
    }
    Ok(())
}

/// Whether `name` is an HTTP field name: an RFC 9110 token.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::has_control;

    #[test]
    fn control_characters_are_found_anywhere() {
        for bad in [
            "\0",
            "\x1f",
            "\x7f",
            "\u{85}",
            "\u{9f}",
            "abcdefgh\n",
            "abcdefghijklmno\t",
            "é\u{1b}",
        ] {
            assert!(has_control(bad), "{bad:?}");
        }
        for good in [
            "",
            "a",
            "http://127.0.0.1:4101/mcp",
            "é ü ß 日本",
            "~~~~~~~~~~~~~~~~",
            " ",
        ] {
            assert!(!has_control(good), "{good:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0xc0de),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn word_scan_agrees_with_char_is_control(s in "\\PC{0,20}[\\x00-\\x{a0}]?\\PC{0,20}") {
            prop_assert_eq!(has_control(&s), s.chars().any(char::is_control));
        }
    }
}
