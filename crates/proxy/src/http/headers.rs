//! Proxy header hygiene: hop-by-hop stripping (RFC 9110 section 7.6.1) and
//! X-Forwarded-* headers.

use std::net::IpAddr;

use coxswain_ir::IpCidr;
use http::HeaderMap;
use http::header::{CONNECTION, HeaderName, HeaderValue, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Whether a comma-separated header (`Connection`, `TE`) lists `token`, in
/// any of its values, case-insensitively.
pub fn lists_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Removes hop-by-hop headers, including those named by `Connection`.
/// `TE: trailers` survives on requests (it is end-to-end in meaning).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, is_request: bool) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    let keeps_trailers = is_request && lists_token(headers, TE, "trailers");
    for name in [CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE] {
        headers.remove(name);
    }
    headers.remove(KEEP_ALIVE);
    headers.remove(PROXY_CONNECTION);
    if keeps_trailers {
        headers.insert(TE, HeaderValue::from_static("trailers"));
    }
}

/// Whose X-Forwarded-* headers are believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardedTrust {
    /// Peers (load balancers, other proxies) whose X-Forwarded-For,
    /// X-Forwarded-Proto and X-Forwarded-Host are kept.
    pub trusted_cidrs: Vec<IpCidr>,
    /// Believe the headers from any peer, as Envoy does with
    /// `xff_num_trusted_hops` > 0: for gateways that only ever sit behind
    /// their own load balancer. 0: trust nobody.
    pub trusted_hops: u32,
}

impl ForwardedTrust {
    pub fn trusts(&self, peer: IpAddr) -> bool {
        self.trusted_hops > 0 || self.trusted_cidrs.iter().any(|c| c.contains(peer))
    }
}

/// Sets the X-Forwarded-* headers for the upstream request. From a trusted
/// peer, X-Forwarded-For gets the peer appended and the peer's proto and
/// host are kept; from anyone else (the default) whatever the client sent
/// is replaced: X-Forwarded-For is the peer alone, X-Forwarded-Proto our
/// scheme, X-Forwarded-Host removed.
pub fn add_forwarded(
    headers: &mut HeaderMap,
    peer: IpAddr,
    scheme: &'static str,
    trust: &ForwardedTrust,
) {
    if !trust.trusts(peer) {
        headers.remove(X_FORWARDED_HOST);
        headers.insert(X_FORWARDED_FOR, ip_value(peer));
        headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(scheme));
        return;
    }
    let previous: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let value = if previous.is_empty() {
        ip_value(peer)
    } else {
        HeaderValue::from_str(&format!("{}, {peer}", previous.join(", ")))
            .unwrap_or_else(|_| ip_value(peer))
    };
    headers.insert(X_FORWARDED_FOR, value);
    if !headers.contains_key(X_FORWARDED_PROTO) {
        headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(scheme));
    }
}

fn ip_value(ip: IpAddr) -> HeaderValue {
    // An IP address is always a valid header value.
    super::stack_fmt::with_formatted(&ip, HeaderValue::from_bytes)
        .and_then(Result::ok)
        .unwrap_or(HeaderValue::from_static("unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_connection_named_and_keeps_te_trailers() {
        let mut h = HeaderMap::new();
        h.insert(CONNECTION, HeaderValue::from_static("close, x-secret"));
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(TE, HeaderValue::from_static("gzip, trailers"));
        h.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h, true);
        assert!(h.get("x-secret").is_none() && h.get("keep-alive").is_none());
        assert_eq!(h.get(TE).unwrap(), "trailers");
        assert_eq!(h.get("x-kept").unwrap(), "1");
    }

    fn forwarded_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("6.6.6.6"));
        h.insert(X_FORWARDED_PROTO, HeaderValue::from_static("https"));
        h.insert(X_FORWARDED_HOST, HeaderValue::from_static("spoofed.test"));
        h
    }

    #[test]
    fn an_untrusted_peer_cannot_forge_forwarded_headers() {
        let mut h = forwarded_headers();
        add_forwarded(
            &mut h,
            "127.0.0.1".parse().unwrap(),
            "http",
            &ForwardedTrust::default(),
        );
        assert_eq!(h.get(X_FORWARDED_FOR).unwrap(), "127.0.0.1");
        assert_eq!(h.get(X_FORWARDED_PROTO).unwrap(), "http");
        assert!(h.get(X_FORWARDED_HOST).is_none());
    }

    #[test]
    fn a_trusted_peer_is_appended_to_the_chain() {
        let trust = ForwardedTrust {
            trusted_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
            trusted_hops: 0,
        };
        let mut h = forwarded_headers();
        add_forwarded(&mut h, "10.1.1.1".parse().unwrap(), "http", &trust);
        assert_eq!(h.get(X_FORWARDED_FOR).unwrap(), "6.6.6.6, 10.1.1.1");
        assert_eq!(h.get(X_FORWARDED_PROTO).unwrap(), "https");
        assert_eq!(h.get(X_FORWARDED_HOST).unwrap(), "spoofed.test");
        let mut h = forwarded_headers();
        add_forwarded(&mut h, "192.0.2.1".parse().unwrap(), "http", &trust);
        assert_eq!(
            h.get(X_FORWARDED_FOR).unwrap(),
            "192.0.2.1",
            "outside the trusted range"
        );
    }
}
