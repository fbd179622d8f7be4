//! Route-rule session persistence (GEP-1619): the gateway pins a client to
//! the endpoint that served its first request with a token it issues, in a
//! cookie or a header, and honours it until the session's absolute or idle
//! timeout passes.
//!
//! The token is `<endpoint hash>.<absolute deadline>.<idle deadline>`
//! (hex; deadlines in Unix milliseconds, 0 for none). It holds no pod
//! address, every replica reads it the same way, and there is no session
//! table: an idle timeout is enforced by renewing the token on each answer.
//! A client can only ever forge its own stickiness.

use std::time::{SystemTime, UNIX_EPOCH};

use http::header::SET_COOKIE;
use http::{HeaderMap, HeaderName, HeaderValue};

use coxswain_ir::{RouteSession, SessionCarrier};

use crate::balance::key::cookie;

/// A route rule's session persistence, compiled.
#[derive(Debug)]
pub struct SessionPolicy {
    carrier: Carrier,
    absolute_ms: Option<u64>,
    idle_ms: Option<u64>,
}

#[derive(Debug)]
enum Carrier {
    /// The cookie's name, and its `Max-Age` (seconds) when permanent.
    Cookie {
        name: String,
        max_age: Option<u64>,
    },
    Header(HeaderName),
}

/// A request's valid session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The address hash of the endpoint it is pinned to.
    pub hash: u64,
    absolute_deadline: u64,
}

/// Milliseconds since the Unix epoch: session deadlines must mean the same
/// on every replica and across restarts.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl SessionPolicy {
    /// `None` for a header name the translator should have refused.
    pub fn compile(s: &RouteSession) -> Option<Self> {
        let carrier = match s.carrier {
            SessionCarrier::Cookie { permanent } => Carrier::Cookie {
                name: s.name.clone(),
                max_age: permanent
                    .then_some(s.absolute_timeout_ms)
                    .flatten()
                    .map(|ms| ms.div_ceil(1000)),
            },
            SessionCarrier::Header => Carrier::Header(HeaderName::try_from(s.name.as_str()).ok()?),
        };
        Some(SessionPolicy {
            carrier,
            absolute_ms: s.absolute_timeout_ms,
            idle_ms: s.idle_timeout_ms,
        })
    }

    /// The request's session, if its token is well formed and not expired.
    pub fn pinned(&self, headers: &HeaderMap, now: u64) -> Option<Pin> {
        let token = match &self.carrier {
            Carrier::Cookie { name, .. } => cookie(headers, name)?,
            Carrier::Header(name) => headers.get(name)?.to_str().ok()?,
        };
        let mut parts = token.split('.');
        let hash = parts.next().filter(|h| h.len() == 16)?;
        let hash = u64::from_str_radix(hash, 16).ok()?;
        let absolute_deadline = u64::from_str_radix(parts.next()?, 16).ok()?;
        let idle_deadline = u64::from_str_radix(parts.next()?, 16).ok()?;
        if parts.next().is_some() {
            return None;
        }
        let live = |deadline: u64| deadline == 0 || now < deadline;
        (live(absolute_deadline) && live(idle_deadline)).then_some(Pin {
            hash,
            absolute_deadline,
        })
    }

    /// The header to answer with, once the endpoint `chosen` (its address
    /// hash) served the request: a new session unless the request's own
    /// `pin` named it, and a renewed token when there is an idle timeout.
    pub fn answer(
        &self,
        pin: Option<Pin>,
        chosen: u64,
        now: u64,
    ) -> Option<(HeaderName, HeaderValue)> {
        let kept = pin.filter(|p| p.hash == chosen);
        if kept.is_some() && self.idle_ms.is_none() {
            return None;
        }
        let absolute = match kept {
            Some(p) => p.absolute_deadline,
            None => self.absolute_ms.map_or(0, |ms| now.saturating_add(ms)),
        };
        let idle = self.idle_ms.map_or(0, |ms| now.saturating_add(ms));
        let token = format!("{chosen:016x}.{absolute:x}.{idle:x}");
        match &self.carrier {
            Carrier::Cookie { name, max_age } => {
                let mut value = format!("{name}={token}; Path=/; HttpOnly");
                if let Some(secs) = max_age {
                    value.push_str(&format!("; Max-Age={secs}"));
                }
                Some((SET_COOKIE, HeaderValue::from_str(&value).ok()?))
            }
            Carrier::Header(name) => Some((name.clone(), HeaderValue::from_str(&token).ok()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(carrier: SessionCarrier, absolute: Option<u64>, idle: Option<u64>) -> SessionPolicy {
        SessionPolicy::compile(&RouteSession {
            name: "s".into(),
            carrier,
            absolute_timeout_ms: absolute,
            idle_timeout_ms: idle,
        })
        .unwrap()
    }

    fn cookie_header(set_cookie: &HeaderValue) -> HeaderMap {
        let pair = set_cookie
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let mut h = HeaderMap::new();
        h.insert(http::header::COOKIE, pair.parse().unwrap());
        h
    }

    #[test]
    fn a_new_session_then_the_same_one() {
        let p = policy(SessionCarrier::Cookie { permanent: false }, None, None);
        let (name, value) = p.answer(None, 0xabc, 1_000).unwrap();
        assert_eq!(name, SET_COOKIE);
        assert_eq!(value, "s=0000000000000abc.0.0; Path=/; HttpOnly");
        let pin = p.pinned(&cookie_header(&value), 5_000).unwrap();
        assert_eq!(pin.hash, 0xabc);
        assert_eq!(
            p.answer(Some(pin), 0xabc, 5_000),
            None,
            "pinned and served: nothing new"
        );
        assert!(
            p.answer(Some(pin), 0xdef, 5_000).is_some(),
            "served elsewhere: re-pinned"
        );
    }

    #[test]
    fn the_absolute_timeout_ends_a_session() {
        let p = policy(
            SessionCarrier::Cookie { permanent: true },
            Some(60_000),
            None,
        );
        let (_, value) = p.answer(None, 1, 1_000).unwrap();
        assert!(
            value.to_str().unwrap().ends_with("; Max-Age=60"),
            "{value:?}"
        );
        let headers = cookie_header(&value);
        assert!(p.pinned(&headers, 60_999).is_some());
        assert_eq!(p.pinned(&headers, 61_000), None);
    }

    #[test]
    fn the_idle_timeout_is_renewed_by_use() {
        let p = policy(SessionCarrier::Header, Some(100_000), Some(10_000));
        let (name, first) = p.answer(None, 7, 0).unwrap();
        assert_eq!(name, "s");
        let mut h = HeaderMap::new();
        h.insert("s", first.clone());
        let pin = p.pinned(&h, 9_000).unwrap();
        // Used at 9 s: renewed until 19 s, the absolute deadline kept.
        let (_, renewed) = p.answer(Some(pin), 7, 9_000).unwrap();
        assert_eq!(renewed, "0000000000000007.186a0.4a38");
        h.insert("s", renewed);
        assert!(p.pinned(&h, 18_000).is_some());
        h.insert("s", first);
        assert_eq!(p.pinned(&h, 18_000), None, "the old token idled out");
    }

    #[test]
    fn malformed_tokens_pin_nothing() {
        let p = policy(SessionCarrier::Header, None, None);
        for bad in [
            "",
            "abc",
            "0000000000000007.0",
            "0000000000000007.0.0.0",
            "zz00000000000007.0.0",
        ] {
            let mut h = HeaderMap::new();
            h.insert("s", bad.parse().unwrap());
            assert_eq!(p.pinned(&h, 0), None, "{bad:?}");
        }
    }
}
