//! What a hashing balancer or Header persistence keys on, read from the
//! request without allocating, and the rendezvous (highest random weight)
//! score that turns a key into an endpoint.

use std::net::IpAddr;

use http::HeaderMap;
use http::header::COOKIE;

use coxswain_ir::HashKey;

/// The parts of a request endpoint choice may look at.
#[derive(Clone, Copy, Debug)]
pub struct RequestKey<'a> {
    pub headers: &'a HeaderMap,
    pub path_and_query: &'a str,
    pub client: IpAddr,
}

impl<'a> RequestKey<'a> {
    /// The key's hash, or `None` when the request lacks the attribute
    /// (the balancer then falls back to round robin).
    pub fn hash(&self, key: &HashKey) -> Option<u64> {
        match key {
            HashKey::Uri => Some(self.path_and_query)
                .filter(|p| !p.is_empty())
                .map(|p| fnv1a(p.as_bytes())),
            HashKey::SourceIp => Some(match self.client {
                IpAddr::V4(ip) => fnv1a(&ip.octets()),
                IpAddr::V6(ip) => fnv1a(&ip.octets()),
            }),
            HashKey::Header(name) => self.header(name).map(fnv1a),
            HashKey::Cookie(name) => self.cookie(name).map(|v| fnv1a(v.as_bytes())),
        }
    }

    /// A non-empty header value.
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .get(name)
            .map(|v| v.as_bytes())
            .filter(|v| !v.is_empty())
    }

    /// A non-empty cookie value from any `Cookie` header.
    pub fn cookie(&self, name: &str) -> Option<&'a str> {
        cookie(self.headers, name)
    }
}

/// A non-empty cookie value from any `Cookie` header of `headers`.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim().trim_matches('"'))
        .filter(|v| !v.is_empty())
}

/// FNV-1a, 64 bits: fast and stable across processes and versions, so
/// every proxy replica maps a key to the same endpoint.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The rendezvous score of `key` on an endpoint (its address hash): the
/// endpoint with the highest score wins, so removing one endpoint moves
/// only its own keys. Mixed (splitmix64 finaliser) because FNV alone
/// leaves the scores of similar addresses correlated.
pub fn score(key: u64, endpoint: u64) -> u64 {
    let mut z = key ^ endpoint.rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn key<'a>(headers: &'a HeaderMap, path: &'a str) -> RequestKey<'a> {
        RequestKey {
            headers,
            path_and_query: path,
            client: IpAddr::from([10, 0, 0, 7]),
        }
    }

    #[test]
    fn cookies_are_found_in_any_cookie_header() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, HeaderValue::from_static("a=1; theme=dark"));
        headers.append(COOKIE, HeaderValue::from_static("session=\"xyz\""));
        let k = key(&headers, "/");
        assert_eq!(k.cookie("session"), Some("xyz"));
        assert_eq!(k.cookie("theme"), Some("dark"));
        assert_eq!(k.cookie("sess"), None);
        assert_eq!(k.cookie("a"), Some("1"));
    }

    #[test]
    fn absent_or_empty_attributes_have_no_hash() {
        let mut headers = HeaderMap::new();
        headers.insert("x-user", HeaderValue::from_static(""));
        let k = key(&headers, "");
        assert_eq!(k.hash(&HashKey::Header("x-user".into())), None);
        assert_eq!(k.hash(&HashKey::Cookie("s".into())), None);
        assert_eq!(k.hash(&HashKey::Uri), None);
        assert!(k.hash(&HashKey::SourceIp).is_some());
    }

    #[test]
    fn uri_hash_includes_the_query() {
        let headers = HeaderMap::new();
        let a = key(&headers, "/p?x=1").hash(&HashKey::Uri);
        let b = key(&headers, "/p?x=2").hash(&HashKey::Uri);
        assert_ne!(a, b);
    }

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
