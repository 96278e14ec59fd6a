//! wasi:http for plugins, with the call's network grant enforced on every
//! outgoing request (wasmtime-wasi-http's `send_request` hook):
//!
//! - only `http` and `https`;
//! - the host must be in the grant (`*`: any public host);
//! - every address the name resolves to is checked: loopback, private,
//!   link-local (169.254.169.254, the cloud metadata address, among them),
//!   carrier-grade NAT, multicast, unspecified, IPv6 unique-local and
//!   link-local are refused unless the grant lists that address literally
//!   (tests grant `127.0.0.1`);
//! - plain `http` connects to the address that was checked, so a second
//!   DNS answer cannot swap in another (for `https` the name must be kept
//!   for TLS, so a rebinding race remains: docs/security.md);
//! - connect, first-byte and between-bytes timeouts, none past the call's
//!   deadline, and a cap on the response body.
//!
//! Redirects are the plugin's to follow, so each hop comes back here.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// The most bytes of one response body a plugin may read.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 32 << 20;

/// Whether a credential (`what`) may be sent to `url`: refused over plain
/// http to a host other than this machine, where anyone on the way could
/// read it. The refusal says what to do instead.
pub(crate) fn credential_may_go_to(url: &str, what: &str) -> Result<(), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let host = uri.host().unwrap_or("").trim_matches(['[', ']']);
    if uri.scheme_str() == Some("http") && !matches!(host, "localhost" | "127.0.0.1" | "::1") {
        return Err(format!(
            "refusing to send {what} over plain http to {host}: anyone on the way could read \
             it; use https, or a server on this machine"
        ));
    }
    Ok(())
}

/// A `Host` header's name without the port: `localhost:8080` → `localhost`,
/// `[::1]:80` → `::1` (for the HTTP front ends' DNS-rebinding checks).
pub(crate) fn host_name(header: &str) -> String {
    if let Some(rest) = header.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_owned();
    }
    header.split(':').next().unwrap_or("").to_owned()
}

/// Whether the request's `Host` header (without its port) is one of
/// `allowed`, case-insensitively: the HTTP front ends' DNS-rebinding check.
#[cfg_attr(
    all(not(feature = "mcp"), not(test)),
    expect(dead_code, reason = "the HTTP front ends come with `mcp`")
)]
pub(crate) fn host_allowed(headers: &http::HeaderMap, allowed: &[String]) -> bool {
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name)
        .unwrap_or_default();
    allowed.iter().any(|h| h.eq_ignore_ascii_case(&host))
}

/// Equal, in a time that does not depend on where the inputs differ (tokens,
/// secrets).
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "the HTTP front ends come with `mcp`")
)]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `bytes` random bytes from the kernel, as hex: tokens, secrets, ids.
#[cfg_attr(
    not(feature = "mcp"),
    expect(dead_code, reason = "the HTTP front ends come with `mcp`")
)]
pub(crate) fn random_hex(bytes: usize) -> String {
    use std::io::Read as _;
    let mut buf = vec![0u8; bytes];
    if let Err(err) = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)) {
        // Without the kernel's randomness, a value hashed from what this
        // process alone knows at this instant; said loudly.
        tracing::warn!(%err, "cannot read /dev/urandom; a secret is made from the time instead");
        let seed = format!(
            "{:?}{}{:p}",
            std::time::SystemTime::now(),
            std::process::id(),
            &buf
        );
        let hex = blake3::hash(seed.as_bytes()).to_hex().to_string();
        return hex.chars().cycle().take(bytes * 2).collect();
    }
    hex::encode(buf)
}

/// Timeouts of one request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30);
const BETWEEN_BYTES_TIMEOUT: Duration = Duration::from_secs(30);

/// What one call may reach: the effective grant's hosts.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetPolicy {
    hosts: Arc<[String]>,
}

impl NetPolicy {
    pub(crate) fn new(hosts: &[String]) -> Self {
        Self {
            hosts: hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }

    fn any_public(&self) -> bool {
        self.hosts.iter().any(|h| h == "*")
    }

    fn lists(&self, name: &str) -> bool {
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let name = name.strip_suffix('.').unwrap_or(name);
        self.hosts
            .iter()
            .any(|h| h.strip_suffix('.').unwrap_or(h).eq_ignore_ascii_case(name))
    }

    /// The address to connect to for `host:port`, or why not.
    async fn check(&self, host: &str, port: u16) -> Result<std::net::SocketAddr, Error> {
        if self.hosts.is_empty() || !(self.any_public() || self.lists(host)) {
            tracing::info!(host, "outgoing request refused: host not granted");
            return Err(Error::HttpRequestDenied);
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<std::net::SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![(ip, port).into()],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|_| Error::DnsError {
                    rcode: Some("lookup failed".to_owned()),
                    info_code: None,
                })?
                .collect(),
        };
        let Some(first) = addrs.first().copied() else {
            return Err(Error::DnsError {
                rcode: Some("no address".to_owned()),
                info_code: None,
            });
        };
        for addr in &addrs {
            let ip = addr.ip();
            if !is_public(ip) && !self.lists(&ip.to_string()) {
                tracing::info!(host, %ip, "outgoing request refused: private address");
                return Err(Error::DestinationIpProhibited);
            }
        }
        Ok(first)
    }
}

/// True for addresses on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let o = v6.octets();
            let embedded = |a: u8, b: u8, c: u8, d: u8| is_public(IpAddr::V4([a, b, c, d].into()));
            // Forms that carry an IPv4 address: judge that address.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
                return embedded(o[12], o[13], o[14], o[15]); // ::a.b.c.d (compatible)
            }
            if s[0] == 0x64 && s[1] == 0xff9b {
                return embedded(o[12], o[13], o[14], o[15]); // NAT64 64:ff9b::/96, /48
            }
            if s[0] == 0x2002 {
                return embedded(o[2], o[3], o[4], o[5]); // 6to4
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || (s[0] == 0x2001 && s[1] == 0x0000)
                || (s[0] == 0x2001 && s[1] == 0x0db8))
        }
    }
}

/// The hooks of one call's wasi:http.
#[derive(Debug)]
pub(crate) struct NetHooks {
    pub(crate) policy: NetPolicy,
    /// The call's deadline: no request waits past it.
    pub(crate) deadline: Instant,
}

/// A timeout the guest `asked` for (if any), at most `cap` and at most
/// the time `left` before the call's deadline.
fn bounded(asked: Option<Duration>, cap: Duration, left: Duration) -> Option<Duration> {
    let wanted = asked.map_or(cap, |t| t.min(cap));
    Some(wanted.min(left).max(Duration::from_millis(1)))
}

impl WasiHttpHooks for NetHooks {
    fn is_supported_scheme(&mut self, scheme: &http::uri::Scheme) -> bool {
        *scheme == http::uri::Scheme::HTTP || *scheme == http::uri::Scheme::HTTPS
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), Error>> + Send>,
                    ),
                    Error,
                >,
            > + Send,
    > {
        drop(fut);
        let policy = self.policy.clone();
        let deadline = self.deadline;
        let send = async move {
            let uri = request.uri().clone();
            let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
            let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?.to_owned();
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let addr = policy.check(&host, port).await?;
            if !https {
                // Connect to the checked address; the Host header keeps the name.
                let mut parts = uri.into_parts();
                parts.authority = Some(
                    addr.to_string()
                        .parse()
                        .map_err(|_| Error::HttpRequestUriInvalid)?,
                );
                *request.uri_mut() =
                    http::Uri::from_parts(parts).map_err(|_| Error::HttpRequestUriInvalid)?;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let options = RequestOptions {
                connect_timeout: bounded(
                    options.and_then(|o| o.connect_timeout),
                    CONNECT_TIMEOUT,
                    left,
                ),
                first_byte_timeout: bounded(
                    options.and_then(|o| o.first_byte_timeout),
                    FIRST_BYTE_TIMEOUT,
                    left,
                ),
                between_bytes_timeout: bounded(
                    options.and_then(|o| o.between_bytes_timeout),
                    BETWEEN_BYTES_TIMEOUT,
                    left,
                ),
            };
            let (response, io) =
                wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            let response = response.map(|body| {
                Capped {
                    inner: body.boxed_unsync(),
                    left: MAX_RESPONSE_BYTES,
                }
                .boxed_unsync()
            });
            Ok((
                response,
                Box::new(io) as Box<dyn Future<Output = Result<(), Error>> + Send>,
            ))
        };
        // Name lookup included: nothing waits past the deadline.
        Box::new(async move {
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::timeout(left, send)
                .await
                .unwrap_or(Err(Error::ConnectionTimeout))
        })
    }
}

/// A response body that fails once it passes its byte budget.
struct Capped {
    inner: WasiBody,
    left: u64,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            let n = data.len() as u64;
            if n > self.left {
                return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(
                    MAX_RESPONSE_BYTES,
                )))));
            }
            self.left -= n;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_judged_without_their_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        let allowed = ["localhost".to_owned(), "::1".to_owned()];
        let with = |host: &'static str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::HOST, http::HeaderValue::from_static(host));
            host_allowed(&headers, &allowed)
        };
        assert!(with("LocalHost:8080") && with("[::1]:9"));
        assert!(!with("evil.example") && !host_allowed(&http::HeaderMap::new(), &allowed));
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::a00:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::7f00:1",
            "fec0::1",
            "2001::1",
            "192.0.0.8",
        ] {
            assert!(
                !is_public(ip.parse().unwrap()),
                "{ip} must not count as public"
            );
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "192.0.78.9",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn hosts_and_addresses_are_checked() {
        let rt = runtime();
        let check = |hosts: &[&str], host: &str| {
            let policy = NetPolicy::new(&hosts.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
            rt.block_on(policy.check(host, 80))
        };
        assert!(matches!(
            check(&[], "93.184.216.34"),
            Err(Error::HttpRequestDenied)
        ));
        assert!(matches!(
            check(&["example.com"], "other.com"),
            Err(Error::HttpRequestDenied)
        ));
        assert!(check(&["*"], "93.184.216.34").is_ok());
        assert!(
            check(&["93.184.216.34."], "93.184.216.34").is_ok(),
            "a trailing dot is the same name"
        );
        assert!(matches!(
            check(&["*"], "127.0.0.1"),
            Err(Error::DestinationIpProhibited)
        ));
        assert!(matches!(
            check(&["*"], "localhost"),
            Err(Error::DestinationIpProhibited)
        ));
        assert!(matches!(
            check(&["*"], "169.254.169.254"),
            Err(Error::DestinationIpProhibited)
        ));
        assert!(
            check(&["127.0.0.1"], "127.0.0.1").is_ok(),
            "listed literally: allowed"
        );
        assert!(
            matches!(
                check(&["localhost"], "localhost"),
                Err(Error::DestinationIpProhibited)
            ),
            "a name is not an address grant"
        );
        assert!(matches!(
            check(&["127.0.0.1", "*"], "10.0.0.1"),
            Err(Error::DestinationIpProhibited)
        ));
    }
}
