//! The host's endpoint policy: which network endpoints run services may point a runtime at.

use std::collections::BTreeSet;
use std::net::IpAddr;

use compat_fingerprint::ShortDigest;
use run_service::{ExposeSecret, McpServer, McpTransport, RunAttachment};

/// Which network endpoints the run services of an agent may hand to the runtime: service
/// URLs, the URLs of HTTP and SSE MCP servers (the host's own included), and the values of
/// secret bindings that point the runtime somewhere — a model base URL (the driver's
/// [`endpoint_vars`](driver_spi::Descriptor::endpoint_vars), any `*_BASE_URL`) or a proxy
/// (`HTTPS_PROXY`, `ALL_PROXY`, …) — since through those the runtime would send its model key
/// or all its traffic. A run whose services name an endpoint the policy refuses fails with
/// [`ThreadError::EndpointRefused`](crate::ThreadError::EndpointRefused) before anything
/// launches; every provider is detached.
///
/// The default is [`EndpointPolicy::any`]: validation checks syntax only, as before this
/// policy existed. A host whose providers are all local should use
/// [`loopback_only`](Self::loopback_only), so a compromised or misconfigured provider cannot
/// point the runtime (and the bearer it carries) at another machine.
///
/// ```
/// use agent::EndpointPolicy;
///
/// let local = EndpointPolicy::loopback_only();
/// assert!(local.allows("http://127.0.0.1:4101/mcp"));
/// assert!(local.allows("http://[::1]:8080/"));
/// assert!(!local.allows("https://tools.example.com/mcp"));
///
/// let listed = EndpointPolicy::hosts(["tools.example.com"]).with_loopback();
/// assert!(listed.allows("https://TOOLS.example.com/mcp"));
/// assert!(listed.allows("http://localhost:9/"));
/// assert!(!listed.allows("https://tools.example.com.evil.net/"));
/// assert!(!listed.allows("not a url"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointPolicy {
    rule: Rule,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Rule {
    #[default]
    Any,
    Listed {
        hosts: BTreeSet<String>,
        loopback: bool,
    },
}

impl EndpointPolicy {
    /// Any endpoint (the default).
    pub fn any() -> Self {
        Self { rule: Rule::Any }
    }

    /// Loopback endpoints only: `localhost`, `127.0.0.0/8` and `::1`.
    pub fn loopback_only() -> Self {
        Self {
            rule: Rule::Listed {
                hosts: BTreeSet::new(),
                loopback: true,
            },
        }
    }

    /// Exactly these host names or IP addresses (compared case-insensitively, without port);
    /// loopback is not implied (see [`with_loopback`](Self::with_loopback)).
    pub fn hosts<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self {
            rule: Rule::Listed {
                hosts: hosts
                    .into_iter()
                    .map(|h| h.as_ref().trim().to_ascii_lowercase())
                    .collect(),
                loopback: false,
            },
        }
    }

    /// Also allows loopback endpoints.
    pub fn with_loopback(mut self) -> Self {
        if let Rule::Listed { loopback, .. } = &mut self.rule {
            *loopback = true;
        }
        self
    }

    /// Whether `url` is allowed. A URL that does not parse, or has no host, is refused by
    /// every policy but [`any`](Self::any).
    pub fn allows(&self, url: &str) -> bool {
        let Rule::Listed { hosts, loopback } = &self.rule else {
            return true;
        };
        let Some(host) = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        else {
            return false;
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        (*loopback && is_loopback(bare)) || hosts.contains(bare)
    }

    /// The first endpoint of `attachments` and `host_mcp` the policy refuses, as a short
    /// digest of its URL (never the URL itself); for a secret binding that carries an endpoint
    /// (`endpoint_vars`, any `*_BASE_URL`, a proxy), a digest of the variable's name, since
    /// the value is secret.
    pub(crate) fn first_refused(
        &self,
        attachments: &[RunAttachment],
        host_mcp: &[McpServer],
        endpoint_vars: &[String],
    ) -> Option<ShortDigest> {
        if self.rule == Rule::Any {
            return None;
        }
        let services = || attachments.iter().flat_map(|a| a.services.iter());
        let service_urls =
            services().flat_map(|s| s.url.iter().chain(s.mcp.iter().filter_map(mcp_url)));
        let host_urls = host_mcp.iter().filter_map(mcp_url);
        if let Some(url) = service_urls.chain(host_urls).find(|url| !self.allows(url)) {
            return Some(ShortDigest::of_str(url));
        }
        services()
            .flat_map(|s| s.secret_env.iter())
            .filter(|b| {
                let name = b.name();
                runtime_env::is_endpoint_var(name, &[])
                    || endpoint_vars.iter().any(|v| v.eq_ignore_ascii_case(name))
            })
            .find(|b| !self.allows_endpoint_value(b.value().expose_secret()))
            .map(|b| ShortDigest::of_str(b.name()))
    }

    /// Whether a binding's endpoint value is allowed: a URL as [`allows`](Self::allows), a
    /// bare `host[:port]` (as proxies are often written) as if it were `http://host[:port]`,
    /// and `NO_PROXY`-style host lists never (they widen what bypasses a proxy).
    fn allows_endpoint_value(&self, value: &str) -> bool {
        let value = value.trim();
        if value.contains("://") {
            self.allows(value)
        } else {
            !value.contains(',') && self.allows(&format!("http://{value}"))
        }
    }
}

fn mcp_url(server: &McpServer) -> Option<&String> {
    match &server.transport {
        McpTransport::StreamableHttp { url, .. } | McpTransport::Sse { url, .. } => Some(url),
        _ => None,
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
