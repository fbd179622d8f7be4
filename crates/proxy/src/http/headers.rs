//! Proxy header hygiene: hop-by-hop stripping (RFC 9110 section 7.6.1) and
//! X-Forwarded-* headers.

use std::net::IpAddr;

use http::HeaderMap;
use http::header::{CONNECTION, HeaderName, HeaderValue, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};

const KEEP_ALIVE: &str = "keep-alive";
const PROXY_CONNECTION: &str = "proxy-connection";
pub const X_FORWARDED_FOR: &str = "x-forwarded-for";
pub const X_FORWARDED_PROTO: &str = "x-forwarded-proto";
pub const X_FORWARDED_HOST: &str = "x-forwarded-host";

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
    let keeps_trailers = is_request
        && headers
            .get_all(TE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("trailers"));
    for name in [CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE] {
        headers.remove(name);
    }
    headers.remove(KEEP_ALIVE);
    headers.remove(PROXY_CONNECTION);
    if keeps_trailers {
        headers.insert(TE, HeaderValue::from_static("trailers"));
    }
}

/// Appends the client IP to X-Forwarded-For and sets X-Forwarded-Proto.
pub fn add_forwarded(headers: &mut HeaderMap, client: IpAddr, scheme: &'static str) {
    let previous: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let value = if previous.is_empty() {
        client.to_string()
    } else {
        format!("{}, {client}", previous.join(", "))
    };
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(X_FORWARDED_FOR, value);
    }
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(scheme));
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

    #[test]
    fn appends_to_existing_forwarded_for() {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("10.0.0.1"));
        add_forwarded(&mut h, "127.0.0.1".parse().unwrap(), "http");
        assert_eq!(h.get(X_FORWARDED_FOR).unwrap(), "10.0.0.1, 127.0.0.1");
    }
}
