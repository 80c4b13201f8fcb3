//! One id per request: returned as `X-Request-Id`, shown on 5xx pages ("quote this id") and
//! written in the line that logs the failure (`web::request_log`), so a participant's report
//! finds the cause. Cheap on the survey's hot path: a per-process random prefix and a counter.
//! Also the client's address ([`client_addr`]), which only trusted proxies may name.

use std::net::IpAddr;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

use actix_web::http::header::{HeaderMap, HeaderName};

use crate::config::IpRange;

/// The response header carrying the request id.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// A request's id: 16 hex digits, the first 8 random per process (several `serve` processes
/// may share one log), the last 8 a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId(u64);

static PREFIX: LazyLock<u32> = LazyLock::new(rand::random);
static COUNTER: AtomicU32 = AtomicU32::new(0);

impl RequestId {
    pub(crate) fn next() -> RequestId {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RequestId((u64::from(*PREFIX) << 32) | u64::from(n))
    }

    /// The id as 16 ASCII hex digits (for the header, without allocating a string).
    pub(crate) fn hex(self) -> [u8; 16] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = DIGITS[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

tokio::task_local! {
    /// Set by `web::request_log` around the handling of each request.
    pub(crate) static CURRENT: RequestId;
}

/// The id of the request being handled on this task (`None` outside a request).
pub fn current() -> Option<RequestId> {
    CURRENT.try_with(|id| *id).ok()
}

/// The client's address: the TCP peer, or, when the peer is in `trusted` (the setting
/// `trusted_proxies`),
/// the address that proxy names. `X-Forwarded-For` is read right to left (each proxy appends
/// the address it received from), skipping further trusted proxies: the first address that is
/// not one is the client, and anything to its left is whatever the client chose to send.
/// `Forwarded` (RFC 7239) is read the same way, only when there is no `X-Forwarded-For`.
/// A hop that is not an address (`unknown`, an obfuscated name) ends the walk at the proxy
/// that reported it. Never the headers of an untrusted peer: anyone can send them.
pub fn client_addr(req: &actix_web::HttpRequest, trusted: &[IpRange]) -> String {
    match req.peer_addr() {
        Some(peer) => client_of(peer.ip(), trusted, req.headers()).to_string(),
        None => "unknown".into(),
    }
}

/// The scheme and host people reach this server at, for absolute links shown to them: the
/// configured public URL when there is one; else the request's own `Host` (what the browser
/// asked for) and the connection's scheme, or, when the peer is a trusted proxy, the
/// `X-Forwarded-Proto` / `X-Forwarded-Host` it set (the last value: the one it appended).
/// An untrusted peer's forwarded headers are ignored, as in [`client_addr`].
pub fn public_base(
    req: &actix_web::HttpRequest,
    trusted: &[IpRange],
    configured: Option<&str>,
) -> String {
    if let Some(url) = configured {
        return url.trim_end_matches('/').to_owned();
    }
    let header = |name: &str| {
        req.headers()
            .get_all(name)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .last()
            .map(str::to_owned)
    };
    let forwarded = |name: &str| {
        if proxied(req, trusted) {
            header(name)
        } else {
            None
        }
    };
    let host = forwarded("x-forwarded-host")
        .or_else(|| header("host"))
        .unwrap_or_else(|| req.app_config().host().to_owned());
    format!("{}://{host}", scheme(req, trusted))
}

/// The scheme the client used: the connection's own, or, when the peer is a trusted proxy, the
/// last `X-Forwarded-Proto` it set. actix's `connection_info().scheme()` believes that header
/// from anyone, so a client on plain HTTP could name its own cookies `__Host-` and `Secure`.
pub fn scheme(req: &actix_web::HttpRequest, trusted: &[IpRange]) -> &'static str {
    let said = proxied(req, trusted)
        .then(|| {
            req.headers()
                .get_all("x-forwarded-proto")
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .last()
        })
        .flatten();
    match said {
        Some(s) if s.eq_ignore_ascii_case("https") => "https",
        Some(s) if s.eq_ignore_ascii_case("http") => "http",
        _ if req.app_config().secure() => "https",
        _ => "http",
    }
}

fn proxied(req: &actix_web::HttpRequest, trusted: &[IpRange]) -> bool {
    req.peer_addr()
        .is_some_and(|p| trusted.iter().any(|r| r.contains(p.ip())))
}

fn client_of(peer: IpAddr, trusted: &[IpRange], headers: &HeaderMap) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|r| r.contains(ip));
    if !is_trusted(peer) {
        return peer.to_canonical();
    }
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_owned())
            .collect()
    };
    let mut hops = values("x-forwarded-for");
    if hops.is_empty() {
        hops = values("forwarded")
            .iter()
            .filter_map(|element| {
                element.split(';').find_map(|pair| {
                    let (k, v) = pair.trim().split_once('=')?;
                    k.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| v.trim().to_owned())
                })
            })
            .collect();
    }
    let mut client = peer.to_canonical();
    for hop in hops.iter().rev() {
        match node_addr(hop) {
            Some(ip) if is_trusted(ip) => client = ip,
            Some(ip) => return ip,
            None => break,
        }
    }
    client
}

/// The address of one hop: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]:4711`,
/// optionally in quotes (`Forwarded`).
fn node_addr(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    let ip = if let Some(rest) = hop.strip_prefix('[') {
        rest.split_once(']')?.0.parse().ok()?
    } else if let Ok(ip) = hop.parse::<IpAddr>() {
        ip
    } else {
        let (host, port) = hop.rsplit_once(':')?;
        port.parse::<u16>().ok()?;
        IpAddr::V4(host.parse().ok()?)
    };
    Some(ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn ranges(list: &str) -> Vec<IpRange> {
        IpRange::parse_list(list).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_peers() {
        let forged = headers(&[("x-forwarded-for", "203.0.113.9")]);
        assert_eq!(
            client_of(ip("198.51.100.1"), &[], &forged),
            ip("198.51.100.1")
        );
        let t = ranges("127.0.0.1");
        assert_eq!(
            client_of(ip("198.51.100.1"), &t, &forged),
            ip("198.51.100.1")
        );
        assert_eq!(client_of(ip("127.0.0.1"), &t, &forged), ip("203.0.113.9"));
        assert_eq!(
            client_of(ip("::ffff:127.0.0.1"), &t, &forged),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let t = ranges("127.0.0.1 10.0.0.0/8");
        // The client sent "1.1.1.1" itself; nginx appended what it saw.
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.7")]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("203.0.113.9"));
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "203.0.113.9:5555"),
        ]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("203.0.113.9"));
        let h = headers(&[("x-forwarded-for", "10.0.0.8, 10.0.0.7")]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("10.0.0.8"));
        let h = headers(&[("x-forwarded-for", "203.0.113.9, unknown")]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("127.0.0.1"));
        let h = headers(&[(
            "forwarded",
            "for=192.0.2.60;proto=https, for=\"[2001:db8::1]:4711\"",
        )]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("2001:db8::1"));
        // With both, X-Forwarded-For (what deploy/nginx.conf sets) wins.
        let h = headers(&[
            ("forwarded", "for=192.0.2.60"),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(client_of(ip("127.0.0.1"), &t, &h), ip("203.0.113.9"));
        assert_eq!(
            client_of(ip("127.0.0.1"), &t, &HeaderMap::new()),
            ip("127.0.0.1")
        );
    }
}
