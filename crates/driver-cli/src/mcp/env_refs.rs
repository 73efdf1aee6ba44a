//! [`EnvRefs`]: one CLI's environment-reference syntax, and the stdio fields and headers of
//! a server written in it.

use std::collections::BTreeMap;

use run_service::{McpServer, McpTransport};
use serde_json::{Map, Value};

use crate::mcp::{McpEntry, McpRefError, is_env_var_name};

/// One CLI's environment-reference syntax: a reference is `open` + name + `close`, and a plain
/// value containing `refused` is refused, because the CLI would expand it and a request could
/// pull another variable (an API key) into a URL or header.
///
/// ```
/// use driver_cli::EnvRefs;
///
/// use std::collections::BTreeMap;
///
/// let refs = EnvRefs::new("${", "}", "${");
/// let secret = BTreeMap::from([("X-Api-Key".to_owned(), "UI_KEY".to_owned())]);
/// let headers = refs.headers(&BTreeMap::new(), Some("UI_TOKEN"), &secret)?;
/// assert_eq!(headers["Authorization"], "Bearer ${UI_TOKEN}");
/// assert_eq!(headers["X-Api-Key"], "${UI_KEY}");
/// assert!(refs.plain("url", "http://x/${HOME}").is_err());
/// # Ok::<(), driver_cli::McpRefError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvRefs {
    open: &'static str,
    close: &'static str,
    refused: &'static str,
}

impl EnvRefs {
    /// References written `{open}NAME{close}`; plain values must not contain `refused`.
    pub const fn new(open: &'static str, close: &'static str, refused: &'static str) -> Self {
        Self {
            open,
            close,
            refused,
        }
    }

    /// `server`'s transport in this syntax: a stdio server's command, arguments and
    /// environment with each of its `secret_env` names forwarded by reference, or an HTTP
    /// server's URL and headers with its bearer and its secret headers as references.
    ///
    /// # Errors
    /// [`McpRefError`] for a value with the refused syntax, an invalid variable name, a plain
    /// `Authorization` header, a header given twice or an unknown transport.
    pub fn entry(
        &self,
        server: &McpServer,
        secret_env: &BTreeMap<&str, Vec<&str>>,
    ) -> Result<McpEntry, McpRefError> {
        match &server.transport {
            McpTransport::Stdio { command, args, env } => {
                let secrets = secret_env.get(server.name.as_str());
                let secrets = secrets.map_or(&[][..], Vec::as_slice);
                Ok(McpEntry::Stdio(self.stdio(command, args, env, secrets)?))
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
            } => Ok(McpEntry::Http {
                sse: matches!(server.transport, McpTransport::Sse { .. }),
                headers: self.headers(headers, bearer_token_env_var.as_deref(), env_headers)?,
                url: self.plain("url", url)?,
            }),
            _ => Err(McpRefError::UnknownTransport),
        }
    }

    /// `value` as a plain JSON string.
    ///
    /// # Errors
    /// [`McpRefError::Expansion`] naming `field` when it contains the refused syntax.
    pub fn plain(&self, field: &'static str, value: &str) -> Result<Value, McpRefError> {
        if value.contains(self.refused) {
            return Err(McpRefError::Expansion { field });
        }
        Ok(Value::String(value.to_owned()))
    }

    /// The reference to variable `name`.
    ///
    /// # Errors
    /// [`McpRefError::InvalidVarName`] naming `field` when `name` is not a variable name.
    pub(crate) fn var_ref(&self, field: &'static str, name: &str) -> Result<String, McpRefError> {
        if !is_env_var_name(name) {
            return Err(McpRefError::InvalidVarName {
                field,
                len: name.len(),
            });
        }
        Ok(format!("{}{name}{}", self.open, self.close))
    }

    /// The `{"command", "args", "env"}` of a stdio server: `env` holds the plain variables,
    /// then each of `secret_names` as a reference to the same name, forwarded from the CLI's
    /// environment.
    ///
    /// # Errors
    /// [`McpRefError`] for an invalid variable name or a value with the refused syntax.
    pub fn stdio(
        &self,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        secret_names: &[&str],
    ) -> Result<Map<String, Value>, McpRefError> {
        let mut vars = Map::new();
        for (name, value) in env {
            if !is_env_var_name(name) {
                return Err(McpRefError::InvalidVarName {
                    field: "env",
                    len: name.len(),
                });
            }
            vars.insert(name.clone(), self.plain("env", value)?);
        }
        for name in secret_names {
            vars.insert(
                (*name).to_owned(),
                Value::String(self.var_ref("env", name)?),
            );
        }
        let args = args
            .iter()
            .map(|a| self.plain("arg", a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut entry = Map::new();
        entry.insert("command".to_owned(), self.plain("command", command)?);
        entry.insert("args".to_owned(), Value::Array(args));
        entry.insert("env".to_owned(), Value::Object(vars));
        Ok(entry)
    }

    /// The headers of an HTTP or SSE server: the plain ones, then the bearer as
    /// `"Authorization": "Bearer <reference>"`, then each secret header (`env_headers`: header
    /// name → variable) as `"Name": "<reference>"`. Only variable names are written.
    ///
    /// # Errors
    /// [`McpRefError::PlainAuthorization`] for a plain `Authorization` header (any case),
    /// [`McpRefError::Expansion`] for a name or value with the refused syntax,
    /// [`McpRefError::InvalidVarName`] for an invalid bearer or secret-header variable,
    /// [`McpRefError::DuplicateHeader`] for a header given twice (names compare
    /// case-insensitively; the bearer is an `Authorization` header).
    pub fn headers(
        &self,
        headers: &BTreeMap<String, String>,
        bearer_token_env_var: Option<&str>,
        env_headers: &BTreeMap<String, String>,
    ) -> Result<Map<String, Value>, McpRefError> {
        let mut out = Map::new();
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("authorization") {
                return Err(McpRefError::PlainAuthorization);
            }
            out.insert(self.header_name(name)?, self.plain("header", value)?);
        }
        if let Some(var) = bearer_token_env_var {
            let reference = self.var_ref("bearer_token_env_var", var)?;
            out.insert(
                "Authorization".to_owned(),
                Value::String(format!("Bearer {reference}")),
            );
        }
        for (name, var) in env_headers {
            let name = self.header_name(name)?;
            if out.keys().any(|h| h.eq_ignore_ascii_case(&name)) {
                return Err(McpRefError::DuplicateHeader);
            }
            let reference = self.var_ref("env_headers", var)?;
            out.insert(name, Value::String(reference));
        }
        Ok(out)
    }

    /// A header name, refused when it holds the refused syntax.
    fn header_name(&self, name: &str) -> Result<String, McpRefError> {
        if name.contains(self.refused) {
            return Err(McpRefError::Expansion { field: "header" });
        }
        Ok(name.to_owned())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_reference_syntax_is_the_callers() {
        let cursor = EnvRefs::new("${env:", "}", "${");
        let gemini = EnvRefs::new("${", "}", "$");
        assert_eq!(cursor.var_ref("env", "T").unwrap(), "${env:T}");
        assert_eq!(gemini.var_ref("env", "T").unwrap(), "${T}");
        assert!(cursor.plain("url", "http://x/$T").is_ok());
        assert_eq!(
            gemini.plain("url", "http://x/$T"),
            Err(McpRefError::Expansion { field: "url" })
        );
    }

    #[test]
    fn stdio_and_headers_keep_only_names() {
        let refs = EnvRefs::new("${", "}", "${");
        let env = BTreeMap::from([("MODE".to_owned(), "ro".to_owned())]);
        let stdio = refs
            .stdio("/bin/s", &["--x".to_owned()], &env, &["TOKEN"])
            .unwrap();
        assert_eq!(
            Value::Object(stdio),
            json!({"command": "/bin/s", "args": ["--x"], "env": {"MODE": "ro", "TOKEN": "${TOKEN}"}})
        );
        let plain = BTreeMap::from([("authorization".to_owned(), "x".to_owned())]);
        let none = BTreeMap::new();
        assert_eq!(
            refs.headers(&plain, None, &none),
            Err(McpRefError::PlainAuthorization)
        );
        let named = BTreeMap::from([("X-${A}".to_owned(), "x".to_owned())]);
        assert_eq!(
            refs.headers(&named, None, &none),
            Err(McpRefError::Expansion { field: "header" })
        );
        assert!(matches!(
            refs.stdio("s", &[], &BTreeMap::new(), &["NOT-A-NAME"]),
            Err(McpRefError::InvalidVarName { field: "env", .. })
        ));
    }

    #[test]
    fn secret_headers_are_written_as_references_only() {
        let refs = EnvRefs::new("${env:", "}", "${");
        let plain = BTreeMap::from([("X-Tenant".to_owned(), "t1".to_owned())]);
        let secret = BTreeMap::from([
            ("X-Api-Key".to_owned(), "DOCS_API_KEY".to_owned()),
            ("Cookie".to_owned(), "DOCS_COOKIE".to_owned()),
        ]);
        let headers = refs.headers(&plain, Some("DOCS_TOKEN"), &secret).unwrap();
        assert_eq!(
            Value::Object(headers),
            json!({
                "X-Tenant": "t1",
                "Authorization": "Bearer ${env:DOCS_TOKEN}",
                "X-Api-Key": "${env:DOCS_API_KEY}",
                "Cookie": "${env:DOCS_COOKIE}"
            })
        );
        // Without a bearer, a secret Authorization (another scheme) is the reference alone.
        let basic = BTreeMap::from([("Authorization".to_owned(), "DOCS_BASIC".to_owned())]);
        let headers = refs.headers(&BTreeMap::new(), None, &basic).unwrap();
        assert_eq!(headers["Authorization"], "${env:DOCS_BASIC}");
    }

    #[test]
    fn a_secret_header_given_twice_or_badly_named_is_refused() {
        let refs = EnvRefs::new("${", "}", "${");
        let none = BTreeMap::new();
        let secret = |name: &str, var: &str| BTreeMap::from([(name.to_owned(), var.to_owned())]);
        let plain = secret("x-api-key", "plain-value");
        assert_eq!(
            refs.headers(&plain, None, &secret("X-Api-Key", "K")),
            Err(McpRefError::DuplicateHeader)
        );
        assert_eq!(
            refs.headers(&none, Some("T"), &secret("authorization", "K")),
            Err(McpRefError::DuplicateHeader)
        );
        let twice = BTreeMap::from([
            ("X-Key".to_owned(), "A".to_owned()),
            ("x-key".to_owned(), "B".to_owned()),
        ]);
        assert_eq!(
            refs.headers(&none, None, &twice),
            Err(McpRefError::DuplicateHeader)
        );
        assert_eq!(
            refs.headers(&none, None, &secret("X-${HOME}", "K")),
            Err(McpRefError::Expansion { field: "header" })
        );
        assert!(matches!(
            refs.headers(&none, None, &secret("X-Key", "A}B")),
            Err(McpRefError::InvalidVarName {
                field: "env_headers",
                ..
            })
        ));
    }
}
